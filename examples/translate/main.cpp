// train_translate: trains the encoder-decoder Transformer on numbers in English words <-> digits
// (datasets/numbers.hpp), then evaluates it on the test set; `evaluate` and `translate` reuse a run.
//
//   train_translate [--direction words2digits|digits2words] [--out DIR] [flags]   train, then test
//   train_translate evaluate --out DIR [--beam K] [--split valid|test]
//   train_translate translate --out DIR [--beam K] [--attention FILE.svg] [TEXT...]   (else stdin lines)
//
// Usage errors print one line and exit 2; other errors print one line and exit 1.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>
#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>

#include "examples/translate/attention_svg.hpp"
#include "examples/translate/batches.hpp"
#include "examples/translate/config.hpp"
#include "tapegrad/autograd/loss.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/autograd/shape_ops.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/datasets/numbers/numbers.hpp"
#include "tapegrad/models/seq2seq_search.hpp"
#include "tapegrad/models/transformer.hpp"
#include "tapegrad/optim/adam.hpp"
#include "tapegrad/optim/clip_grad.hpp"
#include "tapegrad/optim/schedule.hpp"
#include "tapegrad/train/checkpoint.hpp"

namespace {

using namespace tapegrad;
using namespace translate;
namespace ds = tapegrad::datasets;
namespace fs = std::filesystem;
using Model = models::Transformer<float>;
using Clock = std::chrono::steady_clock;

constexpr const char* kProgram = "train_translate";
constexpr int kUsageExit = 2;
constexpr std::size_t kEvalBatch = 250;
constexpr std::size_t kMaxOutput = 24;  // 20 word tokens + eos at most, with room to spare

struct UsageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string format_duration(double s) {
  const auto total = static_cast<long long>(s + 0.5);
  return fmt::format("{}:{:02}", total / 60, total % 60);
}

std::string checkpoint_path(const std::string& out) { return (fs::path(out) / "checkpoint.safetensors").string(); }

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

// Decodes every source (eval mode, no recording), kEvalBatch at a time.
std::vector<Ids> translate_all(Model& model, const std::vector<Ids>& sources, std::size_t beam) {
  model.eval();
  models::SearchOptions search;
  search.bos = ds::kNumberBos;
  search.eos = ds::kNumberEos;
  search.max_len = kMaxOutput;
  search.beam_size = beam;
  std::vector<Ids> out;
  for (std::size_t i = 0; i < sources.size(); i += kEvalBatch) {
    const std::vector<Ids> chunk(sources.begin() + i, sources.begin() + std::min(sources.size(), i + kEvalBatch));
    const Batch b = make_batch(chunk, {});
    auto predicted = beam == 1 ? models::greedy_decode(model, b.src, b.src_padding, search)
                               : models::beam_search(model, b.src, b.src_padding, search);
    for (auto& p : predicted) out.push_back(std::move(p));
  }
  return out;
}

struct Score {
  std::size_t correct = 0, total = 0;
  std::vector<std::string> mistakes;  // the first few, as "source -> output (expected)"
  double percent() const { return total ? 100.0 * double(correct) / double(total) : 0.0; }
};

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

// The cross-attention of every decoder layer while the model produces `output` from `source`.
void write_attention(Model& model, const Ids& source, const Ids& output, Direction d, const std::string& path) {
  model.eval();
  NoGradGuard no_grad;
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

struct Loaded {
  Config config;
  std::unique_ptr<Model> model;
  std::int64_t step;
};

Loaded load_run(const std::string& out) {
  const std::string path = checkpoint_path(out);
  if (!fs::exists(path))
    throw std::runtime_error(fmt::format("{}: no checkpoint (train with --out {} first)", path, out));
  const io::safetensors::File file(path);
  const auto it = file.metadata().find("config");
  if (it == file.metadata().end()) throw std::runtime_error(fmt::format("{}: no \"config\" metadata", path));
  Loaded run{Config::from_json(it->second), nullptr, 0};
  run.config.validate();
  Generator gen(run.config.seed);
  run.model = std::make_unique<Model>(run.config.model_options(), gen);
  optim::Adam<float> unused(run.model->parameters());
  run.step = train::load_checkpoint(path, *run.model, unused);
  return run;
}

int train_command(Config c, std::ostream& out, std::ostream& err) {
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const Direction dir = parse_direction(c.direction);
  set_num_threads(c.threads);
  fs::create_directories(c.out);

  const auto data = evaluation_sets(c);
  Generator gen(c.seed);
  Model model(c.model_options(), gen);
  optim::AdamOptions adam;
  adam.betas = {c.beta1, c.beta2};
  adam.eps = c.eps;
  optim::Adam<float> optimizer(model.parameters(), adam);
  const optim::Noam schedule(static_cast<std::int64_t>(c.d_model), c.warmup, c.lr_factor);
  CrossEntropyOptions loss_options;
  loss_options.ignore_index = ds::kNumberPad;
  loss_options.label_smoothing = c.label_smoothing;

  err << fmt::format(
      "{}: {} | training numbers drawn afresh for every batch from the training split | valid {} test {} | {} "
      "parameters | {} thread(s)\n",
      kProgram, direction_name(dir), data.valid.size(), data.test.size(), model.num_parameters(), c.threads);
  Generator sampler(c.seed ^ 0x5eedULL);
  double train_seconds = 0, loss_sum = 0;
  std::size_t loss_count = 0, tokens = 0;
  const auto run_start = Clock::now();
  auto window_start = Clock::now();
  std::int64_t step = 0, best_step = 0;
  double best_valid = -1.0;
  bool out_of_time = false;
  while (step < c.steps && !out_of_time) {
    const auto step_start = Clock::now();
    std::vector<Ids> src, tgt;
    for (std::size_t i = 0; i < c.batch_size; ++i) {
      const std::uint64_t value = ds::draw_number(sampler, ds::NumberSplit::Train, c.seed);
      src.push_back(encode_source(source_text(value, dir), dir));
      tgt.push_back(encode_target(target_text(value, dir), dir));
    }
    const Batch b = make_batch(src, tgt);
    model.train();
    const Tensor<float> logits = model.forward(b.src, b.tgt_in, b.src_padding, b.tgt_padding);
    const auto vocab = static_cast<std::int64_t>(logits.size(2));
    const Tensor<float> loss =
        cross_entropy(reshape(logits, {-1, vocab}), xt::xarray<std::int64_t>(xt::flatten(b.tgt_out)), loss_options);
    model.zero_grad();
    loss.backward();
    if (c.clip_norm > 0) optim::clip_grad_norm_(model.parameters(), c.clip_norm);
    ++step;
    optimizer.set_lr(schedule(step));
    optimizer.step();
    loss_sum += loss.item();
    ++loss_count;
    tokens += b.target_tokens;
    train_seconds += seconds_since(step_start);
    out_of_time = c.time_limit > 0 && train_seconds >= c.time_limit;

    if (step % c.log_every == 0 || step == c.steps || out_of_time) {
      const double window = seconds_since(window_start);
      err << fmt::format("step {}/{} loss {:.4f} lr {:.2e} {:.0f} tok/s train {} total {}\n", step, c.steps,
                         loss_sum / double(loss_count), optimizer.lr(), double(tokens) / window,
                         format_duration(train_seconds), format_duration(seconds_since(run_start)));
      loss_sum = 0;
      loss_count = tokens = 0;
      window_start = Clock::now();
    }
    if (step % c.eval_every == 0 || step == c.steps || out_of_time) {
      const Score v = exact_match(model, data.valid, dir, 1);
      // The checkpoint is the best validation model so far; on a tie the later one, trained longer.
      const bool best = v.percent() >= best_valid;
      err << fmt::format("step {} valid exact match {:.2f}% ({}/{}){}\n", step, v.percent(), v.correct, v.total,
                         best ? " (best, saved)" : "");
      if (best) {
        best_valid = v.percent();
        best_step = step;
        train::save_checkpoint(checkpoint_path(c.out), model, optimizer, step, {{"config", c.to_json()}});
      }
      window_start = Clock::now();
    }
  }
  if (out_of_time) err << fmt::format("time limit of {} s reached at step {}\n", c.time_limit, step);

  // The test set, once, with the checkpoint of the best validation score.
  train::load_checkpoint(checkpoint_path(c.out), model, optimizer);
  const Score greedy = exact_match(model, data.test, dir, 1);
  out << fmt::format(
      "test exact match (greedy): {:.2f}% ({}/{}) with the step {} checkpoint (valid {:.2f}%); {} steps, {:.0f} s of "
      "training, {} in all\n",
      greedy.percent(), greedy.correct, greedy.total, best_step, best_valid, step, train_seconds,
      format_duration(seconds_since(run_start)));
  if (c.beam > 1) {
    const Score beam = exact_match(model, data.test, dir, c.beam);
    out << fmt::format("test exact match (beam {}): {:.2f}% ({}/{})\n", c.beam, beam.percent(), beam.correct,
                       beam.total);
  }
  for (const auto& m : greedy.mistakes) out << "  mistake: " << m << "\n";
  // The first test number of seven digits or more: its map shows the reordering best.
  const auto long_one = std::find_if(data.test.begin(), data.test.end(), [](auto v) { return v >= 1'000'000; });
  const std::uint64_t shown = long_one == data.test.end() ? data.test.front() : *long_one;
  const Ids example = encode_source(source_text(shown, dir), dir);
  const std::string svg = (fs::path(c.out) / "attention.svg").string();
  write_attention(model, example, translate_all(model, {example}, 1).front(), dir, svg);
  out << fmt::format("checkpoint {}, cross-attention of test example {} in {}\n", checkpoint_path(c.out), shown, svg);
  return 0;
}

int evaluate_command(const std::string& run_dir, std::size_t beam, const std::string& split, std::ostream& out) {
  if (split != "valid" && split != "test")
    throw UsageError(fmt::format("--split must be valid or test, got '{}'", split));
  if (beam == 0) throw UsageError("--beam must be positive");
  Loaded run = load_run(run_dir);
  set_num_threads(run.config.threads);
  const Config& c = run.config;
  const auto data = evaluation_sets(c);
  const Direction dir = parse_direction(c.direction);
  const Score s = exact_match(*run.model, split == "test" ? data.test : data.valid, dir, beam);
  out << fmt::format("{} {} exact match ({}): {:.2f}% ({}/{}) at step {}\n", direction_name(dir), split,
                     beam == 1 ? std::string("greedy") : fmt::format("beam {}", beam), s.percent(), s.correct, s.total,
                     run.step);
  for (const auto& m : s.mistakes) out << "  mistake: " << m << "\n";
  return 0;
}

int translate_command(const std::string& run_dir, std::size_t beam, const std::string& attention,
                      std::vector<std::string> texts, std::istream& in, std::ostream& out) {
  if (beam == 0) throw UsageError("--beam must be positive");
  Loaded run = load_run(run_dir);
  const Direction dir = parse_direction(run.config.direction);
  if (texts.empty()) {
    for (std::string line; std::getline(in, line);)
      if (line.find_first_not_of(" \t\r") != std::string::npos) texts.push_back(line);
  }
  if (texts.empty()) throw UsageError("nothing to translate (give text as arguments or on stdin)");
  std::vector<Ids> sources;
  for (const auto& t : texts) {
    Ids ids = encode_source(t, dir);
    if (ids.size() > run.config.model_options().max_len)
      throw std::runtime_error(fmt::format("'{}' is longer than {} tokens", t, run.config.model_options().max_len));
    sources.push_back(std::move(ids));
  }
  const auto outputs = translate_all(*run.model, sources, beam);
  for (const auto& o : outputs) out << decode_target(o, dir) << "\n";
  if (!attention.empty()) write_attention(*run.model, sources.front(), outputs.front(), dir, attention);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app{"Trains a Transformer to translate numbers between English words and digits.", kProgram};
  app.add_option("--direction", c.direction, "words2digits|digits2words")->capture_default_str();
  auto* data = app.add_option_group("Data");
  data->add_option("--valid-size", c.valid_size, "validation numbers")->capture_default_str();
  data->add_option("--test-size", c.test_size, "test numbers")->capture_default_str();
  data->add_option("--seed", c.seed, "seeds the sets, the initialization, the shuffle and dropout")
      ->capture_default_str();
  auto* model = app.add_option_group("Model");
  model->add_option("--d-model", c.d_model, "embedding width")->capture_default_str();
  model->add_option("--nhead", c.nhead, "attention heads")->capture_default_str();
  model->add_option("--num-encoder-layers", c.num_encoder_layers, "encoder layers")->capture_default_str();
  model->add_option("--num-decoder-layers", c.num_decoder_layers, "decoder layers")->capture_default_str();
  model->add_option("--dim-feedforward", c.dim_feedforward, "feed-forward width")->capture_default_str();
  model->add_option("--dropout", c.dropout, "dropout probability")->capture_default_str();
  model->add_option("--activation", c.activation, "relu|gelu")->capture_default_str();
  model->add_flag("--norm-first,!--post-norm", c.norm_first, "pre-LN instead of the paper's post-LN");
  model->add_flag("--tie-output,!--no-tie-output", c.tie_output, "output projection shares the target embedding")
      ->capture_default_str();
  auto* opt = app.add_option_group("Optimization");
  opt->add_option("--batch-size", c.batch_size, "sentences per step")->capture_default_str();
  opt->add_option("--steps", c.steps, "training steps")->capture_default_str();
  opt->add_option("--time-limit", c.time_limit, "stop training after this many seconds (0 = none)")
      ->capture_default_str();
  opt->add_option("--warmup", c.warmup, "Noam warmup steps")->capture_default_str();
  opt->add_option("--lr-factor", c.lr_factor,
                  "Noam factor: lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)")
      ->capture_default_str();
  opt->add_option("--beta2", c.beta2, "Adam beta2")->capture_default_str();
  opt->add_option("--eps", c.eps, "Adam epsilon")->capture_default_str();
  opt->add_option("--label-smoothing", c.label_smoothing, "label smoothing")->capture_default_str();
  opt->add_option("--clip-norm", c.clip_norm, "gradient norm clipping (0 = off)")->capture_default_str();
  auto* run = app.add_option_group("Run");
  run->add_option("--threads", c.threads, "BLAS threads")->capture_default_str();
  run->add_option("--log-every", c.log_every, "steps between progress lines")->capture_default_str();
  run->add_option("--eval-every", c.eval_every, "steps between validations (the best one is checkpointed)")
      ->capture_default_str();
  run->add_option("--beam", c.beam, "also evaluate the test set with this beam size")->capture_default_str();
  run->add_option("--out", c.out, "run folder (checkpoint, attention.svg)")->capture_default_str();

  std::string run_dir = "runs/translate", split = "test", attention;
  std::size_t beam = 1;
  std::vector<std::string> texts;
  auto* evaluate = app.add_subcommand("evaluate", "exact match of a trained run on its test or validation set");
  evaluate->add_option("--out", run_dir, "run folder")->capture_default_str();
  evaluate->add_option("--beam", beam, "beam size (1 = greedy)")->capture_default_str();
  evaluate->add_option("--split", split, "valid|test")->capture_default_str();
  auto* translate = app.add_subcommand("translate", "translate text given as arguments, else each line of stdin");
  translate->add_option("--out", run_dir, "run folder")->capture_default_str();
  translate->add_option("--beam", beam, "beam size (1 = greedy)")->capture_default_str();
  translate->add_option("--attention", attention, "write the first input's cross-attention to this SVG file");
  translate->add_option("text", texts, "texts to translate");
  app.require_subcommand(0, 1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help of a subcommand
      std::cout << (evaluate->parsed() ? evaluate->help() : translate->parsed() ? translate->help() : app.help());
      return 0;
    }
    std::cerr << fmt::format("{}: {} (see {} --help)\n", kProgram, e.what(), kProgram);
    return kUsageExit;
  }
  try {
    if (evaluate->parsed()) return evaluate_command(run_dir, beam, split, std::cout);
    if (translate->parsed()) return translate_command(run_dir, beam, attention, texts, std::cin, std::cout);
    return train_command(c, std::cout, std::cerr);
  } catch (const UsageError& e) {
    std::cerr << fmt::format("{}: {}\n", kProgram, e.what());
    return kUsageExit;
  } catch (const std::exception& e) {
    std::cerr << fmt::format("{}: {}\n", kProgram, e.what());
    return 1;
  }
}
