#include "tapegrad/train/loop.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/io/json.hpp"
#include "tapegrad/optim/clip_grad.hpp"
#include "tapegrad/train/divergence.hpp"
#include "tapegrad/train/interrupt.hpp"
#include "tapegrad/train/model_file.hpp"
#include "tapegrad/train/timing.hpp"

namespace tapegrad::train {

namespace {

// What a run stopped by divergence leaves to resume from, for its message: never a checkpoint that does
// not exist.
std::string kept_checkpoint(const std::optional<std::int64_t>& step) {
  return step ? fmt::format("the last checkpoint (step {}) is kept", *step) : std::string("there is no checkpoint yet");
}

// The trainer's own entries of the checkpoint's metadata.
const char* const kBestStep = "trainer.best_step";
const char* const kBestScore = "trainer.best_score";
const char* const kBestMetrics = "trainer.best_metrics";
const char* const kTrainSeconds = "trainer.train_seconds";
const char* const kTrainTokens = "trainer.train_tokens";

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

// The first NaN or infinity of a model's parameters and buffers, as "\"name\" holds nan at flat index
// i", or nothing.
template <typename T>
std::optional<std::string> first_non_finite(const nn::Module<T>& model) {
  for (const auto& [name, tensor] : model.state_dict()) {
    const auto& values = tensor.data();
    const auto bad = std::find_if(values.begin(), values.end(), [](T v) { return !std::isfinite(v); });
    if (bad != values.end()) {
      return fmt::format("\"{}\" holds {} at flat index {}", name, *bad,
                         static_cast<std::size_t>(bad - values.begin()));
    }
  }
  return std::nullopt;
}

}  // namespace

template <typename T>
Trainer<T>::Trainer(const RunDirectory& run, nn::Module<T>& model, optim::Optimizer<T>& optimizer,
                    TrainerOptions options, TrainerHooks<T> hooks, Progress& progress)
    : run_(run),
      model_(model),
      optimizer_(optimizer),
      options_(std::move(options)),
      hooks_(std::move(hooks)),
      progress_(progress),
      best_score_(-std::numeric_limits<double>::infinity()) {
  if (options_.epochs <= 0 || options_.steps_per_epoch <= 0) {
    throw std::invalid_argument(fmt::format("Trainer: epochs ({}) and steps_per_epoch ({}) must be positive",
                                            options_.epochs, options_.steps_per_epoch));
  }
  if (options_.log_every <= 0) {
    throw std::invalid_argument(fmt::format("Trainer: log_every ({}) must be positive", options_.log_every));
  }
  if (options_.accumulate < 1) {
    throw std::invalid_argument(fmt::format("Trainer: accumulate ({}) must be at least 1", options_.accumulate));
  }
  if (options_.eval_every < 0) {
    throw std::invalid_argument(fmt::format("Trainer: eval_every ({}) must not be negative", options_.eval_every));
  }
  if (!options_.schedule || !hooks_.forward)
    throw std::invalid_argument("Trainer: a schedule and a forward are required");
  if (options_.resume) {
    const std::string path = run_.checkpoint().string();
    StateDict<T> extra = hooks_.extra_state ? hooks_.extra_state() : StateDict<T>{};
    step_ = load_checkpoint(path, model_, optimizer_, extra, hooks_.generators);
    if (hooks_.load_extra_state) hooks_.load_extra_state(extra);
    run_.check_files(path);  // the config and vocabulary the program read are the ones trained with
    if (hooks_.replicas.restore) hooks_.replicas.restore(io::safetensors::File(path).metadata());
    const io::safetensors::Metadata metadata = io::safetensors::File(path).metadata();
    try {
      best_step_ = std::stoll(metadata.at(kBestStep));
      best_score_ = std::stod(metadata.at(kBestScore));
      best_metrics_ = io::parse_json(metadata.at(kBestMetrics));  // bounded: it is written back with dump()
      if (!best_metrics_.is_object()) throw std::runtime_error("best metrics not an object");
      train_seconds_ = std::stod(metadata.at(kTrainSeconds));
      train_tokens_ = std::stod(metadata.at(kTrainTokens));
    } catch (const std::exception&) {
      throw std::runtime_error(
          fmt::format("{}: not a checkpoint of train::Trainer (its metadata lacks the trainer's state)", path));
    }
    if (step_ > total_steps()) {
      throw std::runtime_error(fmt::format("{}: step {} is past the run's {} steps", path, step_, total_steps()));
    }
    if (best_step_ > 0) {
      // A finished run resumed trains no further: the program goes straight to its best model (scores it,
      // or reports the scores stored with it), which must then be whole and of this run's config and files.
      check_model(run_.model(), model_);
      run_.check_files(run_.model());
    }
    checkpoint_step_ = step_;
    progress_.message(fmt::format("resuming {} at step {} of {} (epoch {:.4g})", path, step_, total_steps(),
                                  double(step_) / double(options_.steps_per_epoch)));
  }
  if (hooks_.replicas.writes_files()) {
    metrics_.emplace(run_.metrics(), options_.resume ? std::optional<std::int64_t>(step_) : std::nullopt);
  }
}

template <typename T>
std::string Trainer<T>::blame() const {
  const std::string suspects = divergence_suspects(optimizer_, options_.clip_norm);
  return suspects.empty() ? suspects : "; " + suspects;
}

template <typename T>
MetricsLog& Trainer<T>::metrics() {
  if (!metrics_) {
    throw std::logic_error(
        fmt::format("Trainer::metrics(): rank {} writes no files; only rank 0 has the log", hooks_.replicas.rank));
  }
  return *metrics_;
}

template <typename T>
io::safetensors::Metadata Trainer<T>::checkpoint_metadata(io::safetensors::Metadata metadata) const {
  metadata.insert({{kBestStep, std::to_string(best_step_)},
                   {kBestScore, fmt::format("{}", best_score_)},
                   {kBestMetrics, best_metrics_.dump()},
                   {kTrainSeconds, fmt::format("{}", train_seconds_)},
                   {kTrainTokens, fmt::format("{}", train_tokens_)}});
  return metadata;
}

template <typename T>
typename Trainer<T>::Sums Trainer<T>::train_step(std::int64_t epoch, std::int64_t index, double lr,
                                                 const Stopwatch& step_clock, bool& stop, bool& time_up) {
  optimizer_.set_lr(lr);
  optimizer_.zero_grad();
  std::optional<tapegrad::autocast> mixed_precision;
  if (options_.autocast) mixed_precision.emplace();
  const std::int64_t micro_batches = options_.accumulate;
  double loss_sum = 0, count = 0, correct = 0, tokens = 0;
  for (std::int64_t i = 0; i < micro_batches; ++i) {
    const MicroBatch micro{i, micro_batches};
    // Every micro-batch's backward but the last only adds to the local gradients.
    std::shared_ptr<void> local_only;
    if (!micro.last() && hooks_.replicas.no_sync) local_only = hooks_.replicas.no_sync();
    const StepOutput<T> out = hooks_.forward(step_, index, micro);
    const double loss = static_cast<double>(out.loss.item());
    if (!std::isfinite(loss)) {
      // Before the step: the model, the optimizer and the last checkpoint stay as they were.
      throw std::runtime_error(fmt::format(
          "the training loss is {} at step {} (epoch {}{}); stopped without updating the model, {}{} (anomaly "
          "detection names the op that produced it)",
          std::isnan(loss) ? "nan"
          : loss > 0       ? "inf"
                           : "-inf",
          step_ + 1, epoch + 1,
          micro_batches > 1 ? fmt::format(", micro-batch {} of {}", i + 1, micro_batches) : std::string(),
          kept_checkpoint(checkpoint_step_), blame()));
    }
    loss_sum += loss * out.count;
    count += out.count;
    correct += out.correct;
    tokens += out.tokens;
    if (micro_batches == 1) {
      out.loss.backward();
      continue;
    }
    // Micro-batch i's loss weighs count_i / (the counts' sum), which is known at the last forward: the
    // earlier ones backpropagate count_i times their loss, and their sum is divided by the total before
    // the last backward, whose gradients are then complete when data-parallel replicas reduce them.
    if (!(out.count > 0) || !std::isfinite(out.count)) {
      throw std::runtime_error(fmt::format(
          "gradient accumulation: micro-batch {} of {} of step {} counts {} examples or tokens (must be positive)",
          i + 1, micro_batches, step_ + 1, out.count));
    }
    double weight = out.count;
    if (micro.last()) {
      const T scale = static_cast<T>(1.0 / count);
      for (auto& p : model_.parameters()) {
        if (!p.has_grad()) continue;
        for (T& g : p.mutable_grad()) g *= scale;
      }
      weight = out.count / count;
    }
    xt::xarray<T> seed = xt::xarray<T>::from_shape(out.loss.shape());
    seed.fill(static_cast<T>(weight));
    out.loss.backward(seed);
  }
  mixed_precision.reset();  // the rest of the step (gradient sums, clipping, the update) has no products
  if (hooks_.replicas.synchronize_gradients) hooks_.replicas.synchronize_gradients();
  if (options_.clip_norm > 0) {
    if (hooks_.replicas.clip_grad_norm) {
      hooks_.replicas.clip_grad_norm(options_.clip_norm);
    } else {
      optim::clip_grad_norm_(optimizer_.params(), options_.clip_norm);
    }
  }
  optimizer_.step();
  if (hooks_.after_step) hooks_.after_step();
  ++step_;

  // This step's sums and stop requests; with several ranks, over all of them (one small allreduce), so
  // that every rank logs the global batch and all stop at the same step.
  const bool stop_requested = interrupt_requested() || (options_.stop_after_step && options_.stop_after_step(step_));
  const bool out_of_time = options_.time_limit > 0 && train_seconds_ + step_clock.seconds() >= options_.time_limit;
  std::vector<double> sums = {loss_sum, count, correct, tokens, stop_requested ? 1.0 : 0.0, out_of_time ? 1.0 : 0.0};
  if (hooks_.replicas.all_reduce_sum) hooks_.replicas.all_reduce_sum(sums);
  stop = sums[4] > 0;
  time_up = sums[5] > 0;
  return {sums[0], sums[1], sums[2], sums[3]};
}

template <typename T>
bool Trainer<T>::train_epoch(std::int64_t epoch, TrainerResult& result) {
  const std::int64_t per_epoch = options_.steps_per_epoch;
  if (hooks_.begin_epoch) hooks_.begin_epoch(epoch);
  model_.train();
  progress_.begin_epoch(epoch + 1, options_.epochs);
  const Stopwatch epoch_clock;
  Sums so_far, window;
  std::int64_t window_steps = 0;
  bool bar_open = true, go_on = true;
  for (std::int64_t index = step_ % per_epoch; index < per_epoch && go_on; ++index) {
    const Stopwatch step_clock;
    const double lr = options_.schedule(step_ + 1);
    bool stop = false, time_up = false;
    const Sums step = train_step(epoch, index, lr, step_clock, stop, time_up);
    so_far.add(step);
    window.add(step);
    ++window_steps;
    since_loss_ += step.loss;
    since_count_ += step.count;
    since_correct_ += step.correct;
    since_tokens_ += step.tokens;
    train_tokens_ += step.tokens;

    StepStats stats;
    stats.step_in_epoch = static_cast<std::size_t>(index + 1);
    stats.steps_in_epoch = static_cast<std::size_t>(per_epoch);
    stats.global_step = step_;
    stats.loss = ratio(so_far.loss, so_far.count);
    stats.accuracy = ratio(so_far.correct, so_far.count);
    stats.epoch_seconds = epoch_clock.seconds();
    stats.tokens_per_second = so_far.tokens / std::max(stats.epoch_seconds, 1e-9);
    stats.lr = lr;
    progress_.update(stats);
    if (window_steps == options_.log_every) {
      const double window_mean = ratio(window.loss, window.count);
      result.logged_losses.push_back(window_mean);
      if (metrics_)
        metrics_->write({{"step", step_},
                         {"epoch", double(epoch) + double(index + 1) / double(per_epoch)},
                         {"loss", window_mean},
                         {"acc", ratio(window.correct, window.count)},
                         {"lr", lr},
                         {"tokens_per_s", stats.tokens_per_second},
                         {"elapsed", train_seconds_ + step_clock.seconds()}});
      window = Sums{};
      window_steps = 0;
    }
    const double step_seconds = step_clock.seconds();
    train_seconds_ += step_seconds;
    since_seconds_ += step_seconds;

    if (stop) {
      result.interrupted = true;
      break;
    }
    result.out_of_time = time_up;
    const bool epoch_end = index + 1 == per_epoch;
    if (epoch_end) {
      progress_.end_epoch();
      bar_open = false;
    }
    if (epoch_end || result.out_of_time || (options_.eval_every > 0 && step_ % options_.eval_every == 0)) {
      if (!validate_and_save(epoch, index, result)) {
        result.interrupted = true;
        break;
      }
    }
    go_on = !result.out_of_time;
  }
  if (bar_open) progress_.end_epoch();
  return !result.interrupted && !result.out_of_time;
}

template <typename T>
TrainerResult Trainer<T>::run() {
  TrainerResult result;
  result.start_step = step_;
  std::optional<DetectAnomalyGuard> anomaly;
  if (options_.detect_anomaly) anomaly.emplace();
  for (std::int64_t epoch = step_ / options_.steps_per_epoch; epoch < options_.epochs; ++epoch) {
    if (!train_epoch(epoch, result)) break;
  }
  finish(result);
  return result;
}

template <typename T>
void Trainer<T>::finish(TrainerResult& result) {
  result.step = step_;
  result.best_step = best_step_;
  result.best_score = best_score_;
  result.best_metrics = best_metrics_;
  result.train_seconds = train_seconds_;
  result.train_tokens = train_tokens_;
  if (result.interrupted) {
    progress_.message(checkpoint_step_
                          ? fmt::format("interrupted: stopped after step {}; the last complete checkpoint is {} (step "
                                        "{}); continue with --resume",
                                        step_, run_.checkpoint().string(), *checkpoint_step_)
                          : fmt::format("interrupted: stopped after step {}, before the first checkpoint: there is "
                                        "nothing to resume",
                                        step_));
  } else if (result.out_of_time) {
    progress_.message(fmt::format("time limit of {} s of training reached at step {} of {}", options_.time_limit, step_,
                                  total_steps()));
  }
}

template <typename T>
bool Trainer<T>::validate_and_save(std::int64_t epoch, std::int64_t index, TrainerResult& result) {
  const std::int64_t per_epoch = options_.steps_per_epoch;
  // A step can leave NaN or infinite parameters behind a finite loss (an update that overflows, Adam
  // with eps 0 on a zero gradient). Validated, they would score NaN and count as the best, and saving
  // them would replace the last good model and checkpoint with files that no load accepts.
  if (const auto bad = first_non_finite(model_)) {
    throw std::runtime_error(fmt::format(
        "after step {} the model's {}; stopped before validating and saving it, {}{} (a smaller learning rate, "
        "clipping or a larger eps may help)",
        step_, *bad, kept_checkpoint(checkpoint_step_), blame()));
  }
  ValidationRecord record;
  record.step = step_;
  record.epoch_end = index + 1 == per_epoch;
  record.epoch = double(epoch) + double(index + 1) / double(per_epoch);
  record.train_loss = ratio(since_loss_, since_count_);
  record.train_accuracy = ratio(since_correct_, since_count_);
  record.train_seconds = since_seconds_;
  record.tokens_per_second = since_tokens_ / std::max(since_seconds_, 1e-9);

  // The run's config and own files, recorded in both files this validation may write (rank 0 only).
  const io::safetensors::Metadata digests =
      hooks_.replicas.writes_files() ? run_.file_digests() : io::safetensors::Metadata{};
  const Stopwatch valid_clock;
  if (!validate_model(epoch, record, digests)) return false;
  record.valid_seconds = valid_clock.seconds();
  io::safetensors::Metadata metadata = checkpoint_metadata(digests);
  if (hooks_.replicas.checkpoint_metadata) metadata.merge(hooks_.replicas.checkpoint_metadata());  // collective
  if (hooks_.replicas.consolidate_optimizer_state) hooks_.replicas.consolidate_optimizer_state();  // collective
  // After model.safetensors, so the checkpoint never names a best model that is not on disk.
  if (hooks_.replicas.writes_files()) {
    save_checkpoint(run_.checkpoint().string(), model_, optimizer_, step_, metadata,
                    hooks_.extra_state ? hooks_.extra_state() : StateDict<T>{}, hooks_.generators);
  }
  checkpoint_step_ = step_;
  if (hooks_.replicas.writes_files() && run_.drop_previous()) {
    progress_.message(fmt::format("--overwrite: deleted the previous run ({}) now that this run has a checkpoint",
                                  run_.previous().string()));
  }
  log_validation(epoch, record);
  result.validations.push_back(record);
  since_loss_ = since_count_ = since_correct_ = since_tokens_ = since_seconds_ = 0;
  return true;
}

template <typename T>
bool Trainer<T>::validate_model(std::int64_t epoch, ValidationRecord& record,
                                const io::safetensors::Metadata& digests) {
  // The scope (e.g. the parameters' averages swapped in) covers the validation and the best model.
  const std::shared_ptr<void> scope = hooks_.evaluation_scope ? hooks_.evaluation_scope() : nullptr;
  if (hooks_.validate) {
    std::optional<tapegrad::autocast> mixed_precision;  // validation scores the model as it trains
    if (options_.autocast) mixed_precision.emplace();
    try {
      record.evaluation = hooks_.validate();
    } catch (const NonFiniteValidation& e) {
      throw std::runtime_error(fmt::format(
          "{} at the validation after step {} (epoch {}); stopped without saving, {}{} (a smaller learning rate or "
          "clipping may help)",
          e.what(), step_, epoch + 1, kept_checkpoint(checkpoint_step_), blame()));
    }
  } else {
    record.evaluation.score = std::numeric_limits<double>::quiet_NaN();
  }
  model_.train();
  // A validation stopped by Ctrl-C on one rank must stop every rank here: one that went on would wait
  // forever in the next collective for the others.
  bool stopped = record.evaluation.stopped;
  if (hooks_.replicas.all_reduce_sum) {
    std::vector<double> votes = {stopped ? 1.0 : 0.0};
    hooks_.replicas.all_reduce_sum(votes);
    stopped = votes[0] > 0;
  }
  if (stopped) return false;
  const double score = record.evaluation.score;
  record.best = std::isnan(score) || score > best_score_ || (options_.ties_improve && score == best_score_);
  if (record.best) {
    best_step_ = step_;
    best_score_ = score;
    best_metrics_ = record.evaluation.metrics;
    if (hooks_.replicas.writes_files()) {
      io::safetensors::Metadata metadata = digests;
      metadata.insert({{"step", std::to_string(step_)},
                       {"epoch", fmt::format("{}", record.epoch)},
                       {"score", fmt::format("{}", score)}});
      save_model(run_.model(), model_, metadata);
    }
  }
  return true;
}

template <typename T>
void Trainer<T>::log_validation(std::int64_t epoch, const ValidationRecord& record) {
  nlohmann::json line = {{"step", step_},
                         {"epoch", record.epoch_end ? nlohmann::json(epoch + 1) : nlohmann::json(record.epoch)},
                         {"loss", record.train_loss},
                         {"acc", record.train_accuracy},
                         {"lr", optimizer_.lr()},
                         {"tokens_per_s", record.tokens_per_second},
                         {"elapsed", train_seconds_}};
  line.update(record.evaluation.metrics);
  if (metrics_) metrics_->write(line);
  const std::string where = record.epoch_end ? fmt::format("epoch {}/{}", epoch + 1, options_.epochs)
                                             : fmt::format("step {}/{}", step_, total_steps());
  progress_.message(fmt::format("{}: train loss {:.4f} acc {:.2f}% | {}{} | {} train ({} tok/s) + {:.1f} s valid",
                                where, record.train_loss, 100.0 * record.train_accuracy, record.evaluation.summary,
                                record.best ? " (best)" : "", format_duration(record.train_seconds),
                                format_rate(record.tokens_per_second), record.valid_seconds));
}

template class Trainer<float>;
template class Trainer<double>;

}  // namespace tapegrad::train
