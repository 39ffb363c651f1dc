#include "examples/translate/training.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>

#include "examples/common/commands.hpp"
#include "examples/common/precision.hpp"
#include "examples/common/trainer_options.hpp"
#include "examples/translate/attention_svg.hpp"
#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/loss.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/autograd/messages.hpp"
#include "tapegrad/autograd/shape_ops.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/datasets/numbers/numbers.hpp"
#include "tapegrad/models/seq2seq_search.hpp"
#include "tapegrad/optim/adam.hpp"
#include "tapegrad/optim/schedule.hpp"
#include "tapegrad/train/errors.hpp"
#include "tapegrad/train/interrupt.hpp"
#include "tapegrad/train/loop.hpp"
#include "tapegrad/train/model_file.hpp"
#include "tapegrad/train/progress.hpp"
#include "tapegrad/train/replicas.hpp"
#include "tapegrad/train/timing.hpp"

namespace translate {

namespace fs = std::filesystem;
namespace ds = tapegrad::datasets;
namespace tr = tapegrad::train;
using tapegrad::Tensor;

namespace {

constexpr std::size_t kEvalBatch = 250;
constexpr std::size_t kMaxOutput = 24;  // 20 word tokens + eos at most, with room to spare

std::vector<Ids> sources_of(const std::vector<std::uint64_t>& values, Direction d) {
  std::vector<Ids> out;
  for (auto v : values) out.push_back(encode_source(source_text(v, d), d));
  return out;
}
std::vector<Ids> targets_of(const std::vector<std::uint64_t>& values, Direction d) {
  std::vector<Ids> out;
  for (auto v : values) out.push_back(encode_target(target_text(v, d), d));
  return out;
}

// The fixed validation and test sets of a run; training numbers are drawn afresh for every batch.
ds::NumbersDataset evaluation_sets(const Config& c) {
  return ds::make_numbers_dataset(0, c.valid_size, c.test_size, c.seed);
}

tapegrad::CrossEntropyOptions loss_options(const Config& c) {
  tapegrad::CrossEntropyOptions o;
  o.ignore_index = ds::kNumberPad;
  o.label_smoothing = c.label_smoothing;
  return o;
}

// The teacher-forced loss of a batch and how many of its target tokens the model ranks first.
struct Forced {
  Tensor<float> loss;
  std::size_t correct = 0;
};
Forced teacher_forced(Model& model, const Batch& b, const tapegrad::CrossEntropyOptions& options) {
  const Tensor<float> logits = model.forward(b.src, b.tgt_in, b.src_padding, b.tgt_padding);
  const auto vocab = logits.size(2);
  const auto flat_targets = xt::xarray<std::int64_t>(xt::flatten(b.tgt_out));
  Forced f;
  f.loss =
      tapegrad::cross_entropy(tapegrad::reshape(logits, {-1, static_cast<std::int64_t>(vocab)}), flat_targets, options);
  const float* l = logits.data().data();
  for (std::size_t i = 0; i < flat_targets.size(); ++i) {
    if (flat_targets(i) == ds::kNumberPad) continue;
    const float* row = l + i * vocab;
    f.correct += static_cast<std::int64_t>(std::max_element(row, row + vocab) - row) == flat_targets(i) ? 1 : 0;
  }
  return f;
}

}  // namespace

tr::RunDirectory run_directory(const fs::path& dir) { return tr::RunDirectory(dir); }

std::vector<Ids> translate_all(Model& model, const std::vector<Ids>& sources, std::size_t beam) {
  model.eval();
  tapegrad::models::SearchOptions search;
  search.bos = ds::kNumberBos;
  search.eos = ds::kNumberEos;
  search.max_len = kMaxOutput;
  search.beam_size = beam;
  std::vector<Ids> out;
  for (std::size_t i = 0; i < sources.size(); i += kEvalBatch) {
    const std::vector<Ids> chunk(sources.begin() + i, sources.begin() + std::min(sources.size(), i + kEvalBatch));
    const Batch b = make_batch(chunk, {});
    auto predicted = beam == 1 ? tapegrad::models::greedy_decode(model, b.src, b.src_padding, search)
                               : tapegrad::models::beam_search(model, b.src, b.src_padding, search);
    for (auto& p : predicted) out.push_back(std::move(p));
  }
  return out;
}

Score exact_match(Model& model, const std::vector<std::uint64_t>& values, Direction d, std::size_t beam) {
  const auto sources = sources_of(values, d);
  const auto targets = targets_of(values, d);
  const auto predicted = translate_all(model, sources, beam);
  Score s;
  s.total = values.size();
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (predicted[i] == targets[i]) {
      ++s.correct;
    } else if (s.mistakes.size() < 5) {
      s.mistakes.push_back(fmt::format("{} -> {} (expected {})", source_text(values[i], d),
                                       decode_target(predicted[i], d), target_text(values[i], d)));
    }
  }
  return s;
}

void write_attention(Model& model, const Ids& source, const Ids& output, Direction d, const std::string& path) {
  model.eval();
  tapegrad::NoGradGuard no_grad;
  const Batch b = make_batch({source}, {});
  const Tensor<float> memory = model.encode(b.src, b.src_padding);
  xt::xarray<std::int64_t> tgt = xt::xarray<std::int64_t>::from_shape({std::size_t{1}, output.size() + 1});
  tgt(0, 0) = ds::kNumberBos;
  for (std::size_t i = 0; i < output.size(); ++i) tgt(0, i + 1) = output[i];
  std::vector<xt::xarray<float>> maps;
  for (const auto& m : model.cross_attention(tgt, memory, b.src_padding)) maps.push_back(xt::view(m, 0));
  const auto& tokens = ds::number_tokens();
  std::vector<std::string> src_labels, out_labels;
  for (auto id : source) src_labels.push_back(tokens.at(id));
  for (auto id : output) out_labels.push_back(tokens.at(id));
  out_labels.push_back("<eos>");
  write_attention_svg(
      path, fmt::format("{}: \"{}\" -> \"{}\"", direction_name(d), decode_source(source, d), decode_target(output, d)),
      src_labels, out_labels, maps);
}

LoadedRun load_run(const fs::path& dir) {
  const auto run = run_directory(dir);
  if (!fs::exists(run.model())) {
    throw std::runtime_error(
        fmt::format("{}: no model (train with --out {} first)", run.model().string(), dir.string()));
  }
  run.check_files(run.model());
  LoadedRun loaded{read_config(run), nullptr, 0};
  tapegrad::Generator gen(loaded.config.seed);
  loaded.model = std::make_unique<Model>(loaded.config.model_options(), gen);
  const auto metadata = tr::load_model(run.model(), *loaded.model);
  if (const auto step = metadata.find("step"); step != metadata.end()) {
    const char* end = step->second.data() + step->second.size();
    const auto [stop, error] = std::from_chars(step->second.data(), end, loaded.step);
    if (error != std::errc() || stop != end || loaded.step < 0) {
      throw std::runtime_error(fmt::format("{}: metadata \"step\" is \"{}\", not a step count", run.model().string(),
                                           tapegrad::clip_for_message(step->second)));
    }
  }
  loaded.model->eval();
  return loaded;
}

Config read_config(const tr::RunDirectory& run) { return examples::read_run_settings(flags(), run, &validate); }

namespace {

std::unique_ptr<tapegrad::optim::Optimizer<float>> make_optimizer(const Config& c,
                                                                  std::vector<tapegrad::Tensor<float>> params) {
  tapegrad::optim::AdamOptions adam;
  adam.betas = {c.beta1, c.beta2};
  adam.eps = c.eps;
  return std::make_unique<tapegrad::optim::Adam<float>>(std::move(params), adam);
}

tr::TrainerOptions trainer_options(const Config& c, const std::function<bool(std::int64_t step)>& stop_after_step) {
  // One epoch: every batch is new.
  tr::TrainerOptions options = examples::trainer_options(
      c, 1, c.steps, tapegrad::optim::Noam(static_cast<std::int64_t>(c.d_model), c.warmup, c.lr_factor),
      stop_after_step);
  options.eval_every = c.eval_every;
  options.time_limit = c.time_limit;
  options.ties_improve = true;  // on a tie the later model, trained longer
  return options;
}

// One step's global batch: c.batch_size numbers drawn from the training split, as source and target ids
// (every rank draws the whole batch, so that their samplers stay the same).
struct StepBatch {
  std::vector<Ids> src, tgt;
};
StepBatch draw_batch(tapegrad::Generator& sampler, const Config& c, Direction dir) {
  StepBatch batch;
  for (std::size_t i = 0; i < c.batch_size; ++i) {
    const std::uint64_t value = ds::draw_number(sampler, ds::NumberSplit::Train, c.seed);
    batch.src.push_back(encode_source(source_text(value, dir), dir));
    batch.tgt.push_back(encode_target(target_text(value, dir), dir));
  }
  return batch;
}

// The rows of `rows` of a step's batch, made into one batch.
Batch batch_of_rows(const StepBatch& step, const std::vector<std::size_t>& rows) {
  std::vector<Ids> src, tgt;
  for (const std::size_t i : rows) {
    src.push_back(step.src[i]);
    tgt.push_back(step.tgt[i]);
  }
  return make_batch(src, tgt);
}

// One micro-batch's loss (the whole step's batch without accumulation), on this rank's rows.
tr::StepOutput<float> step_loss(Model& model, const StepBatch& step, const tr::MicroBatch& micro,
                                const tr::Replicas& replicas, const tapegrad::CrossEntropyOptions& loss) {
  std::vector<std::size_t> rows(step.src.size());
  std::iota(rows.begin(), rows.end(), std::size_t{0});
  tr::StepOutput<float> output;
  if (replicas.size == 1) {
    const Batch b =
        micro.count == 1 ? make_batch(step.src, step.tgt) : batch_of_rows(step, tr::micro_batch_rows(rows, micro));
    Forced f = teacher_forced(model, b, loss);
    output.loss = f.loss;
    output.count = static_cast<double>(b.target_tokens);
    output.correct = static_cast<double>(f.correct);
    output.tokens = static_cast<double>(b.target_tokens);
    return output;
  }
  // The ranks' rows hold different numbers of target tokens, so a per-rank mean would weigh a token of a
  // short shard more: each rank's loss is the sum over its tokens divided by the tokens per rank of the
  // whole (micro-)batch, and the ranks' average gradient is then the gradient of the mean over all the
  // batch's tokens, as one process computes it. count (that share) makes the logged loss the batch's mean
  // too, and weighs the micro-batch in the step.
  // The rows are the micro-batch's, cut over the ranks (one row more or less each, none for a rank when
  // the micro-batch has fewer rows than ranks).
  const std::vector<std::size_t> micro_rows = tr::micro_batch_rows(rows, micro);
  const std::size_t total_tokens = batch_of_rows(step, micro_rows).target_tokens;
  const double per_rank = static_cast<double>(total_tokens) / replicas.size;
  output.count = per_rank;
  const std::vector<std::size_t> my_rows = tr::rank_rows(micro_rows, replicas.size, replicas.rank);
  if (my_rows.empty()) {
    output.loss = tr::empty_share_loss<float>();
    return output;
  }
  const Batch mine = batch_of_rows(step, my_rows);
  auto summed = loss;
  summed.reduction = tapegrad::Reduction::Sum;
  Forced f = teacher_forced(model, mine, summed);
  output.loss = f.loss * static_cast<float>(1.0 / per_rank);
  output.correct = static_cast<double>(f.correct);
  output.tokens = static_cast<double>(mine.target_tokens);
  return output;
}

// A validation: the teacher-forced loss and token accuracy, then the exact match of greedy decoding.
tr::Evaluation validation(Model& model, const std::vector<std::uint64_t>& values, Direction dir,
                          const tapegrad::CrossEntropyOptions& loss) {
  model.eval();
  const auto sources = sources_of(values, dir), targets = targets_of(values, dir);
  double loss_sum = 0, tokens = 0, correct = 0;
  {
    tapegrad::NoGradGuard no_grad;
    for (std::size_t i = 0; i < sources.size(); i += kEvalBatch) {
      const std::size_t end = std::min(sources.size(), i + kEvalBatch);
      const Batch b =
          make_batch({sources.begin() + i, sources.begin() + end}, {targets.begin() + i, targets.begin() + end});
      const Forced f = teacher_forced(model, b, loss);
      loss_sum += static_cast<double>(f.loss.item()) * double(b.target_tokens);
      tokens += double(b.target_tokens);
      correct += double(f.correct);
    }
  }
  const Score v = exact_match(model, values, dir, 1);
  tr::Evaluation e;
  e.score = v.fraction();
  const double mean_loss = tokens > 0 ? loss_sum / tokens : std::nan("");
  const double accuracy = tokens > 0 ? correct / tokens : std::nan("");
  e.metrics = {{"valid_loss", mean_loss}, {"valid_acc", accuracy}, {"valid_exact", v.fraction()}};
  e.summary = fmt::format("valid loss {:.4f} acc {:.2f}% exact match {:.2f}% ({}/{})", mean_loss, 100.0 * accuracy,
                          v.percent(), v.correct, v.total);
  e.stopped = tr::interrupt_requested();
  return e;
}

// The test set, once, with the model of the best validation (greedy, and with --beam); its line in
// metrics.jsonl and the summary on out.
void evaluate_test(Model& model, const ds::NumbersDataset& data, const Config& c, Direction dir,
                   const tr::TrainerResult& trained, double wall_seconds, tr::MetricsLog& metrics, std::ostream& out,
                   TrainResult& result) {
  result.test = exact_match(model, data.test, dir, 1);
  nlohmann::json line = {{"step", trained.step},
                         {"split", "test"},
                         {"best_step", trained.best_step},
                         {"test_exact", result.test.fraction()},
                         {"elapsed", trained.train_seconds}};
  out << fmt::format(
      "test exact match (greedy): {:.2f}% ({}/{}) with the step {} model (valid {:.2f}%); {} steps, {:.0f} s of "
      "training, {} in all\n",
      result.test.percent(), result.test.correct, result.test.total, trained.best_step, 100.0 * trained.best_score,
      trained.step, trained.train_seconds, tr::format_duration(wall_seconds));
  if (c.beam > 1) {
    result.test_beam = exact_match(model, data.test, dir, c.beam);
    line["beam"] = c.beam;
    line["test_exact_beam"] = result.test_beam.fraction();
    out << fmt::format("test exact match (beam {}): {:.2f}% ({}/{})\n", c.beam, result.test_beam.percent(),
                       result.test_beam.correct, result.test_beam.total);
  }
  metrics.write(line);
  for (const auto& m : result.test.mistakes) out << "  mistake: " << m << "\n";
}

// The cross-attention of the first test number of seven digits or more (its map shows the reordering
// best) in the run folder.
void write_test_attention(Model& model, const ds::NumbersDataset& data, Direction dir, const tr::RunDirectory& run,
                          std::ostream& out) {
  if (data.test.empty()) return;
  const auto long_one = std::find_if(data.test.begin(), data.test.end(), [](auto v) { return v >= 1'000'000; });
  const std::uint64_t shown = long_one == data.test.end() ? data.test.front() : *long_one;
  const Ids example = encode_source(source_text(shown, dir), dir);
  const std::string svg = run.file(kAttentionFile).string();
  write_attention(model, example, translate_all(model, {example}, 1).front(), dir, svg);
  out << fmt::format("model {}, cross-attention of test example {} in {}\n", run.model().string(), shown, svg);
}

}  // namespace

TrainResult train(const Config& settings, std::ostream& out, std::ostream& log, bool interactive,
                  const std::function<bool(std::int64_t step)>& stop_after_step, const examples::Parallel& parallel) {
  const bool writer = parallel.writes_files();
  const tr::Stopwatch wall;
  const tr::RunDirectory run = run_directory(settings.out);
  tr::Progress progress(log, interactive, static_cast<std::size_t>(settings.log_every));
  Config c = examples::start_training(flags(), settings, run,
                                      {tr::RunDirectory::kConfig, tr::RunDirectory::kCheckpoint}, &validate, progress);
  const Direction dir = parse_direction(c.direction);

  const auto data = evaluation_sets(c);
  // The thread count may differ between ranks (results do not depend on it), as may the folder's path
  // on another machine.
  parallel.verify_same_settings(to_json(c), {"threads", "out"});
  tapegrad::Generator gen(c.seed);
  Model model(c.model_options(), gen);
  // Several ranks: the same model everywhere (checked), gradients averaged; each trains its rows.
  const tr::Replicas replicas = parallel.replicas(model, c.zero);
  const auto optimizer =
      parallel.optimizer(model.parameters(), [&](auto params) { return make_optimizer(c, std::move(params)); });
  const auto loss = loss_options(c);
  // Training numbers are drawn afresh for every batch from the training split.
  tapegrad::Generator sampler(c.seed ^ 0x5eedULL);

  if (!c.resume && writer) examples::start_run_folder(run, c.overwrite, to_json(c), progress);
  progress.message(fmt::format(
      "train_translate: {} | training numbers drawn afresh for every batch from the training split | valid {} test "
      "{} | {} parameters | {} thread(s)",
      direction_name(dir), data.valid.size(), data.test.size(), model.num_parameters(), c.threads));
  if (replicas.size > 1) {
    progress.message(parallel.split_line(c.threads, static_cast<std::int64_t>(c.batch_size)));
  }

  const tr::TrainerOptions options = trainer_options(c, stop_after_step);
  tr::TrainerHooks<float> hooks;
  StepBatch step_batch;  // drawn at a step's first micro-batch, cut by the others
  hooks.forward = [&](std::int64_t, std::int64_t, const tr::MicroBatch& micro) {
    if (micro.index == 0) step_batch = draw_batch(sampler, c, dir);
    return step_loss(model, step_batch, micro, replicas, loss);
  };
  hooks.validate = [&] { return validation(model, data.valid, dir, loss); };
  hooks.generators = {{"sampler", &sampler}};
  hooks.replicas = replicas;
  tr::Trainer<float> trainer(run, model, *optimizer, options, hooks, progress);
  const tr::TrainerResult trained = trainer.run();
  // The test set and the attention map in the precision the run trained and validated in.
  const tapegrad::autocast evaluation_precision(options.autocast);

  TrainResult result;
  result.interrupted = trained.interrupted;
  result.steps = trained.step;
  result.best_step = trained.best_step;
  result.best_valid = trained.best_score;
  result.validations = trained.validations.size();
  result.train_seconds = trained.train_seconds;
  if (!result.interrupted && writer) {
    tr::load_model(run.model(), model);
    evaluate_test(model, data, c, dir, trained, wall.seconds(), trainer.metrics(), out, result);
    write_test_attention(model, data, dir, run, out);
  }
  result.wall_seconds = wall.seconds();
  return result;
}

}  // namespace translate
