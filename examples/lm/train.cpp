#include "examples/lm/train.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numeric>
#include <optional>

#include "examples/common/batching.hpp"
#include "examples/common/commands.hpp"
#include "examples/common/precision.hpp"
#include "examples/common/trainer_options.hpp"
#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/datasets/text/batching.hpp"
#include "tapegrad/optim/adamw.hpp"
#include "tapegrad/optim/schedule.hpp"
#include "tapegrad/train/errors.hpp"
#include "tapegrad/train/loop.hpp"
#include "tapegrad/train/model_file.hpp"
#include "tapegrad/train/progress.hpp"
#include "tapegrad/train/run_directory.hpp"
#include "tapegrad/train/timing.hpp"

namespace lm {

namespace ds = tapegrad::datasets;
namespace tt = tapegrad::train;

namespace {

std::string validation_summary(const Validation& v) {
  return fmt::format("valid loss {:.4f} ppl {:.2f} acc {:.2f}%", v.loss, v.perplexity, 100.0 * v.accuracy);
}

// The data's lines at the start, and the bigram baselines of a causal run (rank 0 fits them).
void announce_data(const Config& config, const Data& data, bool writer, tt::Progress& progress, TrainResult& result) {
  const bool sampled = data.valid_sample.size() < data.valid.size();
  progress.message(fmt::format(
      "data: {} ({}): {} train / {} valid reviews (the train/ split only), vocabulary {} tokens, {} tokens kept "
      "per review; ready in {:.1f} s",
      data.path.string(), data.source, data.train.size(), data.valid.size(), data.vocab.size(), kept_tokens(config),
      data.seconds));
  if (sampled) {
    progress.message(
        fmt::format("validation during training: a fixed seeded subset of {} of the {} validation "
                    "reviews; the best model is then scored on all of them",
                    data.valid_sample.size(), data.valid.size()));
  }
  if (config.objective != "causal" || !writer) return;
  result.baselines = bigram_baselines(data);
  for (const auto& b : result.baselines) {
    progress.message(
        fmt::format("baseline: {} on the validation reviews: loss {:.4f}, perplexity {:.2f} ({} tokens){}", b.name,
                    b.loss, b.perplexity, b.tokens,
                    sampled ? fmt::format("; on the subset: perplexity {:.2f}", b.sample_perplexity) : std::string()));
  }
}

std::unique_ptr<tapegrad::optim::Optimizer<float>> make_optimizer(const Config& config,
                                                                  std::vector<tapegrad::Tensor<float>> params) {
  tapegrad::optim::AdamWOptions adamw;
  adamw.lr = config.lr;
  adamw.betas = {0.9, 0.98};
  adamw.weight_decay = config.weight_decay;
  return std::make_unique<tapegrad::optim::AdamW<float>>(std::move(params), adamw);
}

tt::TrainerOptions trainer_options(const Config& config, const std::function<bool(std::int64_t)>& stop_after_step) {
  tt::TrainerOptions options = examples::trainer_options(
      config, 1, config.steps, tapegrad::optim::CosineDecay(config.lr, config.steps, config.warmup), stop_after_step);
  options.eval_every = config.eval_every;
  return options;
}

// The training batches: the shuffled passes over the training reviews, walked whatever the steps per
// validation.
class Batches {
 public:
  Batches(const Data& data, const Config& config) : loader_(data.train, examples::batch_options(config)) {}
  std::size_t per_pass() const { return loader_.size(); }
  ds::Batch at(std::int64_t step) {
    const auto s = static_cast<std::size_t>(step);
    if (s / loader_.size() != epoch_) {
      epoch_ = s / loader_.size();
      loader_.set_epoch(epoch_);
    }
    return loader_.batch(s % loader_.size());
  }

 private:
  ds::DataLoader loader_;
  std::uint64_t epoch_ = 0;
};

// One micro-batch's loss, on this rank's rows of the global batch (all of them without accumulation).
tt::StepOutput<float> step_loss(LanguageModel& model, const ds::EncodedDataset& train, const ds::Batch& batch,
                                std::int64_t step, const tt::MicroBatch& micro, const tt::Replicas& replicas) {
  std::vector<std::size_t> all(batch.indices.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  tt::StepOutput<float> o;
  if (replicas.size <= 1) {
    const std::vector<std::size_t> rows = tt::micro_batch_rows(all, micro);
    const auto loss = micro.count == 1 ? model.loss(batch, static_cast<std::uint64_t>(step))
                                       : model.loss(batch, static_cast<std::uint64_t>(step), rows);
    o.loss = loss.loss;
    o.count = double(loss.count);
    o.correct = double(loss.correct);
    for (std::size_t r : rows) o.tokens += double(train.length(batch.indices[r]));
    return o;
  }
  // This rank's rows of the micro-batch (one process's), and its loss, a mean over its n targets,
  // weighted by n * ranks / N (N: the micro-batch's targets on all ranks), so that the gradients' average
  // over the ranks is the gradient of the mean over all N; each rank then counts N / ranks targets for the
  // logs and the micro-batches' weights. A rank without rows (fewer rows than ranks) adds nothing.
  const std::vector<std::size_t> rows = tt::rank_rows(tt::micro_batch_rows(all, micro), replicas.size, replicas.rank);
  std::optional<LanguageModel::Loss> loss;
  if (!rows.empty()) loss = model.loss(batch, static_cast<std::uint64_t>(step), rows);
  std::vector<double> total = {loss ? double(loss->count) : 0.0};
  replicas.all_reduce_sum(total);
  o.count = total[0] / double(replicas.size);
  if (!loss) {
    o.loss = tt::empty_share_loss<float>();
    return o;
  }
  const double share = total[0] > 0 ? double(loss->count) * double(replicas.size) / total[0] : 0.0;
  o.loss = tapegrad::mul(loss->loss, static_cast<float>(share));
  o.correct = double(loss->correct);
  for (std::size_t r : rows) o.tokens += double(train.length(batch.indices[r]));
  return o;
}

// metrics.jsonl's first line of a new run: the baselines and the validation sets' sizes.
nlohmann::json start_line(const Config& config, const Data& data, const TrainResult& result) {
  nlohmann::json line = {{"step", 0}, {"objective", config.objective}};
  for (const auto& b : result.baselines) {
    const std::string key = b.name == "add-one bigram" ? "baseline_add_one_ppl" : "baseline_kneser_ney_ppl";
    line[key] = b.perplexity;
    line[key + "_sample"] = b.sample_perplexity;
  }
  line["valid_reviews"] = data.valid.size();
  line["valid_sample_reviews"] = data.valid_sample.size();
  return line;
}

void take_outcome(const tt::TrainerResult& r, TrainResult& result) {
  result.interrupted = r.interrupted;
  result.steps = r.step;
  result.best_step = r.best_step;
  if (r.best_step > 0) result.best = validation_of(r.best_metrics);
  result.train_seconds = r.train_seconds;
  result.tokens_per_second = r.train_seconds > 0 ? r.train_tokens / r.train_seconds : 0.0;
}

// The best model on every validation review (the subset's score when the subset is all of them).
Validation final_validation(const TrainResult& result, LanguageModel& model, const Data& data, const Config& config,
                            const tt::RunDirectory& run, tt::Progress& progress) {
  if (data.valid_sample.size() == data.valid.size() || result.best_step == 0) return result.best;
  auto& module = model.module();
  tt::load_model(run.model(), module);
  const Validation v = validate(model, module, data.valid, static_cast<std::size_t>(config.batch_size));
  progress.message(
      fmt::format("final validation of the best model (step {}) on all {} validation reviews: {} ({:.1f} s)",
                  result.best_step, data.valid.size(), validation_summary(v), v.seconds));
  return v;
}

// metrics.jsonl's final line and the summary on out.
void report_final(const TrainResult& result, const Data& data, tt::MetricsLog& metrics, std::ostream& out) {
  metrics.write({{"step", result.steps},
                 {"final", true},
                 {"best_step", result.best_step},
                 {"best_valid_ppl", result.best.perplexity},
                 {"final_valid_loss", result.final.loss},
                 {"final_valid_ppl", result.final.perplexity},
                 {"final_valid_acc", result.final.accuracy},
                 {"train_seconds", result.train_seconds},
                 {"wall_seconds", result.wall_seconds}});
  const bool sampled = data.valid_sample.size() < data.valid.size();
  out << fmt::format("best validation (step {}{}): loss {:.4f}, perplexity {:.2f}, next-token accuracy {:.2f}%\n",
                     result.best_step,
                     sampled ? fmt::format(", {} of the validation reviews", data.valid_sample.size()) : "",
                     result.best.loss, result.best.perplexity, 100.0 * result.best.accuracy);
  out << fmt::format(
      "final validation (the best model, all {} validation reviews): loss {:.4f}, perplexity {:.2f}, "
      "next-token accuracy {:.2f}%\n",
      data.valid.size(), result.final.loss, result.final.perplexity, 100.0 * result.final.accuracy);
  for (const auto& b : result.baselines) out << fmt::format("{}: perplexity {:.2f}\n", b.name, b.perplexity);
  out << fmt::format("time: {} wall ({} data, {} training at {} tokens/s)\n", tt::format_duration(result.wall_seconds),
                     tt::format_duration(result.data_seconds), tt::format_duration(result.train_seconds),
                     tt::format_rate(result.tokens_per_second));
}

}  // namespace

TrainResult train(const Config& settings, std::ostream& out, std::ostream& log, bool interactive,
                  const std::function<bool(std::int64_t)>& stop_after_step, const Parallel& parallel) {
  const bool writer = parallel.writes_files();
  const tt::Stopwatch wall;
  const tt::RunDirectory run(settings.out, {kVocabFile});
  tt::Progress progress(log, interactive, static_cast<std::size_t>(settings.log_every));
  Config config = examples::start_training(flags(), settings, run,
                                           {tt::RunDirectory::kConfig, tt::RunDirectory::kCheckpoint, kVocabFile},
                                           &validate, progress);
  TrainResult result;
  const Data data =
      prepare_data(config, config.resume ? std::optional(ds::Vocabulary::load(run.file(kVocabFile))) : std::nullopt);
  result.data_seconds = data.seconds;
  announce_data(config, data, writer, progress, result);

  // Several ranks must agree on the settings and on the vocabulary.
  parallel.verify_same_settings(to_json(config), {"data"});
  parallel.verify_same_vocabulary(data.vocab);
  LanguageModel model(config, data.vocab, config.resume && has_output_bias(run.checkpoint(), "model."));
  auto& module = model.module();
  // Several ranks: the same model everywhere (checked), gradients averaged; each trains its rows.
  const tt::Replicas replicas = parallel.replicas(module, config.zero);
  const auto optimizer =
      parallel.optimizer(module.parameters(), [&](auto params) { return make_optimizer(config, std::move(params)); });
  Batches batches(data, config);
  if (!config.resume && writer) {
    examples::start_run_folder(run, config.overwrite, to_json(config), progress,
                               [&] { data.vocab.save(run.file(kVocabFile)); });
  }
  progress.message(fmt::format("model: {} ({} objective), {} parameters; {} steps of {} reviews ({} per pass)",
                               module.name(), config.objective, module.num_parameters(), config.steps,
                               config.batch_size, batches.per_pass()));

  const tt::TrainerOptions options = trainer_options(config, stop_after_step);
  tt::TrainerHooks<float> hooks;
  hooks.forward = [&](std::int64_t step, std::int64_t, const tt::MicroBatch& micro) {
    return step_loss(model, data.train, batches.at(step), step, micro, replicas);
  };
  hooks.validate = [&] {
    const Validation v = validate(model, module, data.valid_sample, static_cast<std::size_t>(config.batch_size));
    return evaluation(v, validation_summary(v));
  };
  hooks.replicas = replicas;
  tt::Trainer<float> trainer(run, module, *optimizer, options, hooks, progress);
  if (replicas.size > 1) {
    progress.message(parallel.split_line(config.threads, static_cast<std::int64_t>(config.batch_size)));
  }
  if (!config.resume && writer) trainer.metrics().write(start_line(config, data, result));
  const tt::TrainerResult r = trainer.run();
  // The final validation in the precision the run trained and validated in; rank 0 alone scores it.
  const tapegrad::autocast evaluation_precision(options.autocast);
  take_outcome(r, result);
  if (writer && !r.interrupted) result.final = final_validation(result, model, data, config, run, progress);
  result.wall_seconds = wall.seconds();
  if (writer && !r.interrupted) report_final(result, data, trainer.metrics(), out);
  return result;
}

}  // namespace lm
