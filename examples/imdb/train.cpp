#include "examples/imdb/train.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>

#include "examples/imdb/data.hpp"
#include "examples/imdb/model.hpp"
#include "tapegrad/autograd/loss.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/datasets/text/batching.hpp"
#include "tapegrad/datasets/text/word_dropout.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/optim/adam.hpp"
#include "tapegrad/optim/adamw.hpp"
#include "tapegrad/optim/clip_grad.hpp"
#include "tapegrad/optim/ema.hpp"
#include "tapegrad/optim/schedule.hpp"
#include "tapegrad/optim/sgd.hpp"
#include "tapegrad/train/checkpoint.hpp"
#include "tapegrad/train/interrupt.hpp"
#include "tapegrad/train/metrics.hpp"
#include "tapegrad/train/progress.hpp"

namespace imdb {

namespace fs = std::filesystem;
namespace ds = tapegrad::datasets;
namespace optim = tapegrad::optim;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::unique_ptr<optim::Optimizer<float>> make_optimizer(const Config& c, std::vector<tapegrad::Tensor<float>> params) {
  if (c.optimizer == "sgd") {
    optim::SGDOptions o{c.lr};
    o.momentum = c.momentum;
    o.weight_decay = c.weight_decay;
    return std::make_unique<optim::SGD<float>>(std::move(params), o);
  }
  if (c.optimizer == "adam") {
    optim::AdamOptions o;
    o.lr = c.lr;
    o.betas = parse_betas(c.betas);
    o.eps = c.eps;
    o.weight_decay = c.weight_decay;
    return std::make_unique<optim::Adam<float>>(std::move(params), o);
  }
  optim::AdamWOptions o;
  o.lr = c.lr;
  o.betas = parse_betas(c.betas);
  o.eps = c.eps;
  o.weight_decay = c.weight_decay;
  return std::make_unique<optim::AdamW<float>>(std::move(params), o);
}

optim::Schedule make_schedule(const Config& c, std::int64_t total_steps, std::int64_t steps_per_epoch) {
  if (c.schedule == "constant") return optim::LinearWarmup(c.lr, c.warmup);
  if (c.schedule == "inv-sqrt") return optim::InverseSqrt(c.lr, c.warmup);
  // --lr is the paper's factor: the peak is lr / sqrt(d_model * warmup).
  if (c.schedule == "noam") return optim::Noam(c.d_model, c.warmup, c.lr);
  if (c.warmup >= total_steps) {
    throw UsageError(fmt::format("--warmup {} must be less than the {} training steps (--epochs {} x {} batches)",
                                 c.warmup, total_steps, c.epochs, steps_per_epoch));
  }
  if (c.schedule == "cosine") return optim::CosineDecay(c.lr, total_steps, c.warmup);
  return optim::LinearDecay(c.lr, total_steps, c.warmup);
}

// A JSON scalar as a user types it on the command line (strings unquoted).
std::string flag_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// --resume continues the saved run, so every setting that shapes it must be the saved one.
void check_resume_matches(const Config& config, const fs::path& saved_path) {
  const nlohmann::json saved = to_json(read_config(saved_path));
  const nlohmann::json given = to_json(config);
  for (const auto& [key, value] : saved.items()) {
    if (key == "data") continue;  // the data may have moved; it is read again either way
    if (given.at(key) != value) {
      throw UsageError(fmt::format("--resume: --{} {} differs from {} in {}", key, flag_text(given.at(key)),
                                   flag_text(value), saved_path.string()));
    }
  }
}

// What a training checkpoint records besides tensors.
struct RunState {
  std::int64_t epochs_done = 0;
  std::int64_t best_epoch = 0;
  double best_valid_accuracy = -1.0, best_valid_loss = 0.0;
  double train_seconds = 0.0;  // of all epochs so far
  double train_tokens = 0.0;
};

tapegrad::io::safetensors::Metadata to_metadata(const RunState& s) {
  return {{"epoch", std::to_string(s.epochs_done)},
          {"best_epoch", std::to_string(s.best_epoch)},
          {"best_valid_accuracy", fmt::format("{}", s.best_valid_accuracy)},
          {"best_valid_loss", fmt::format("{}", s.best_valid_loss)},
          {"train_seconds", fmt::format("{}", s.train_seconds)},
          {"train_tokens", fmt::format("{}", s.train_tokens)}};
}

RunState from_metadata(const tapegrad::io::safetensors::Metadata& m, const fs::path& path) {
  RunState s;
  try {
    s.epochs_done = std::stoll(m.at("epoch"));
    s.best_epoch = std::stoll(m.at("best_epoch"));
    s.best_valid_accuracy = std::stod(m.at("best_valid_accuracy"));
    s.best_valid_loss = std::stod(m.at("best_valid_loss"));
    s.train_seconds = std::stod(m.at("train_seconds"));
    s.train_tokens = std::stod(m.at("train_tokens"));
  } catch (const std::exception&) {
    throw std::runtime_error(
        fmt::format("{}: not a train_imdb checkpoint (its metadata lacks the epoch and the best "
                    "validation score)",
                    path.string()));
  }
  return s;
}

}  // namespace

TrainResult train(const Config& config, std::ostream& out, std::ostream& log, bool interactive,
                  const std::function<bool(std::int64_t step)>& stop_after_step) {
  const auto wall_start = Clock::now();
  if (const auto problem = validate(config)) throw UsageError(*problem);
  tapegrad::set_num_threads(static_cast<int>(config.threads));
  const fs::path dir = config.out;
  const fs::path checkpoint_path = dir / kCheckpointFile;
  if (config.resume) {
    for (const char* name : {kCheckpointFile, kConfigFile, kVocabFile}) {
      if (!fs::exists(dir / name)) {
        throw UsageError(
            fmt::format("--resume: {} does not exist, so there is no run to continue", (dir / name).string()));
      }
    }
    check_resume_matches(config, dir / kConfigFile);
  }
  tapegrad::train::Progress progress(log, interactive, static_cast<std::size_t>(config.log_every));
  TrainResult result;

  // Data.
  const RawData raw = read_data(config.data, config.no_download);
  progress.message(fmt::format("data: {} ({}): {} train + {} test reviews read in {:.1f} s", raw.path.string(),
                               raw.source, raw.reviews.train.size(), raw.reviews.test.size(), raw.seconds));
  auto prep_start = Clock::now();
  const auto split = split_of(raw, config);
  const ds::Vocabulary vocab =
      config.resume ? ds::Vocabulary::load(dir / kVocabFile) : build_vocabulary(raw, split, config);
  const EncodedSplits data = encode_splits(raw, split, vocab, config);
  result.data_seconds = raw.seconds + seconds_since(prep_start);
  progress.message(
      fmt::format("vocabulary: {} tokens; encoded {} train / {} valid / {} test reviews (max-len {}, "
                  "truncate {}); data ready in {:.1f} s",
                  vocab.size(), data.train.size(), data.valid.size(), data.test.size(), config.max_len, config.truncate,
                  result.data_seconds));

  // Model and optimization.
  const auto model = make_model(config, vocab.size());
  auto optimizer = make_optimizer(config, model->parameters());
  ds::BatchOptions batching;
  batching.batch_size = static_cast<std::size_t>(config.batch_size);
  batching.seed = static_cast<std::uint64_t>(config.seed);
  batching.bucket_chunk = static_cast<std::size_t>(config.bucket);
  batching.trim = true;
  ds::DataLoader loader(data.train, batching);
  const auto steps_per_epoch = static_cast<std::int64_t>(loader.size());
  const std::int64_t total_steps = steps_per_epoch * config.epochs;
  const auto schedule = make_schedule(config, total_steps, steps_per_epoch);
  auto state_dict = model->state_dict();
  std::optional<optim::ExponentialMovingAverage<float>> ema;
  if (config.ema > 0) ema.emplace(model->parameters(), config.ema);

  // The run folder, only once the data and the settings are known to work.
  if (!config.resume) {
    fs::create_directories(dir);
    // A new run must not leave an older run's checkpoints next to its own config and vocabulary,
    // where a later --resume or evaluate would pick them up.
    for (const char* name : {kCheckpointFile, kModelFile}) {
      if (fs::remove(dir / name)) {
        progress.message(fmt::format("new run in {}: removed the previous run's {}", dir.string(), name));
      }
    }
    vocab.save(dir / kVocabFile);
    write_config(dir / kConfigFile, config);
  }

  RunState state;
  std::int64_t step = 0;
  if (config.resume) {
    tapegrad::StateDict<float> ema_state = ema ? ema->state_dict() : tapegrad::StateDict<float>{};
    step = tapegrad::train::load_checkpoint(checkpoint_path.string(), *model, *optimizer, ema_state);
    if (ema) ema->load_state_dict(ema_state);
    state = from_metadata(tapegrad::io::safetensors::File(checkpoint_path.string()).metadata(), checkpoint_path);
    progress.message(
        fmt::format("resuming {} after epoch {} (step {})", checkpoint_path.string(), state.epochs_done, step));
  }
  if (data.valid.size() == 0) {
    progress.message(
        "no validation reviews (--valid-fraction too small for this data): the last epoch's model is kept");
  }
  progress.message(fmt::format("model: {} parameters; {} steps of {} reviews per epoch, {} epochs",
                               model->num_parameters(), steps_per_epoch, config.batch_size, config.epochs));
  tapegrad::train::MetricsLog metrics(dir / kMetricsFile,
                                      config.resume ? std::optional<std::int64_t>(step) : std::nullopt);

  const auto batch_size = static_cast<std::size_t>(config.batch_size);
  for (std::int64_t epoch = state.epochs_done; epoch < config.epochs && !result.interrupted; ++epoch) {
    loader.set_epoch(static_cast<std::uint64_t>(epoch));
    model->train();
    progress.begin_epoch(epoch + 1, config.epochs);
    const auto epoch_start = Clock::now();
    double loss_sum = 0.0, window_loss = 0.0;
    std::size_t correct = 0, seen = 0, window_correct = 0, window_seen = 0, window_steps = 0;
    double tokens = 0.0;
    for (std::size_t b = 0; b < loader.size(); ++b) {
      ds::Batch batch = loader.batch(b);
      ds::word_dropout(batch.ids, batch.padding_mask, config.word_dropout, ds::Vocabulary::unk_id,
                       static_cast<std::uint64_t>(config.seed), static_cast<std::uint64_t>(step));
      const double lr = schedule(step + 1);
      optimizer->set_lr(lr);
      optimizer->zero_grad();
      const auto logits = model->forward(batch.ids, batch.padding_mask);
      const auto loss = tapegrad::cross_entropy(logits, batch.labels);
      loss.backward();
      if (config.clip_norm > 0) optim::clip_grad_norm_(optimizer->params(), config.clip_norm);
      optimizer->step();
      if (ema) ema->update();
      ++step;

      const std::size_t rows = batch.indices.size();
      const double batch_loss = static_cast<double>(loss.item());
      std::size_t batch_correct = 0;
      const auto& l = logits.data();
      for (std::size_t r = 0; r < rows; ++r) {
        batch_correct += ((l(r, 1) > l(r, 0) ? 1 : 0) == batch.labels(r)) ? 1 : 0;
        tokens += static_cast<double>(data.train.length(batch.indices[r]));
      }
      loss_sum += batch_loss * double(rows);
      correct += batch_correct;
      seen += rows;
      window_loss += batch_loss * double(rows);
      window_correct += batch_correct;
      window_seen += rows;
      ++window_steps;

      tapegrad::train::StepStats stats;
      stats.step_in_epoch = b + 1;
      stats.steps_in_epoch = loader.size();
      stats.global_step = step;
      stats.loss = loss_sum / double(seen);
      stats.accuracy = double(correct) / double(seen);
      stats.epoch_seconds = seconds_since(epoch_start);
      stats.tokens_per_second = tokens / std::max(stats.epoch_seconds, 1e-9);
      stats.lr = lr;
      progress.update(stats);
      if (window_steps == static_cast<std::size_t>(config.log_every)) {
        const double window_mean = window_loss / double(window_seen);
        result.logged_losses.push_back(window_mean);
        metrics.write({{"step", step},
                       {"epoch", double(epoch) + double(b + 1) / double(loader.size())},
                       {"loss", window_mean},
                       {"acc", double(window_correct) / double(window_seen)},
                       {"lr", lr},
                       {"tokens_per_s", stats.tokens_per_second},
                       {"elapsed", state.train_seconds + stats.epoch_seconds}});
        window_loss = 0.0;
        window_correct = window_seen = window_steps = 0;
      }
      if (tapegrad::train::interrupt_requested() || (stop_after_step && stop_after_step(step))) {
        result.interrupted = true;
        break;
      }
    }
    const double epoch_seconds = seconds_since(epoch_start);
    progress.end_epoch();
    if (result.interrupted) break;

    EpochRecord record;
    record.epoch = epoch + 1;
    record.train_loss = loss_sum / double(seen);
    record.train_accuracy = double(correct) / double(seen);
    record.seconds = epoch_seconds;
    record.tokens_per_second = tokens / std::max(epoch_seconds, 1e-9);
    // With --ema the averaged parameters are validated and saved as the best model; the checkpoint
    // keeps the trained ones and the averages, so that --resume continues both.
    std::optional<optim::ExponentialMovingAverage<float>::AveragedParameters> averaged;
    if (ema) averaged.emplace(*ema);
    record.valid = evaluate(*model, data.valid, batch_size, tapegrad::train::interrupt_requested);
    if (record.valid.stopped) {
      result.interrupted = true;
      break;
    }
    state.epochs_done = epoch + 1;
    state.train_seconds += epoch_seconds;
    state.train_tokens += tokens;
    // Without validation reviews every epoch counts as the best, so the last one is kept.
    const bool best = record.valid.count == 0 || record.valid.accuracy > state.best_valid_accuracy;
    if (best) {
      state.best_epoch = epoch + 1;
      state.best_valid_accuracy = record.valid.accuracy;
      state.best_valid_loss = record.valid.loss;
      tapegrad::io::safetensors::save_state_dict(
          (dir / kModelFile).string(), state_dict,
          {{"epoch", std::to_string(epoch + 1)}, {"valid_accuracy", fmt::format("{}", record.valid.accuracy)}});
    }
    averaged.reset();
    // After model.safetensors, so the checkpoint never names a best model that is not on disk.
    tapegrad::train::save_checkpoint(checkpoint_path.string(), *model, *optimizer, step, to_metadata(state),
                                     ema ? ema->state_dict() : tapegrad::StateDict<float>{});
    metrics.write({{"step", step},
                   {"epoch", epoch + 1},
                   {"loss", record.train_loss},
                   {"acc", record.train_accuracy},
                   {"valid_loss", record.valid.loss},
                   {"valid_acc", record.valid.accuracy},
                   {"lr", optimizer->lr()},
                   {"tokens_per_s", record.tokens_per_second},
                   {"elapsed", state.train_seconds}});
    progress.message(fmt::format(
        "epoch {}/{}: train loss {:.4f} acc {:.2f}% | valid loss {:.4f} acc {:.2f}%{} | {} train ({} tok/s) + {:.1f} s "
        "valid",
        epoch + 1, config.epochs, record.train_loss, 100.0 * record.train_accuracy, record.valid.loss,
        100.0 * record.valid.accuracy, best ? " (best)" : "", tapegrad::train::format_duration(epoch_seconds),
        tapegrad::train::format_rate(record.tokens_per_second), record.valid.seconds));
    result.epochs.push_back(record);
  }

  result.steps = step;
  result.best_epoch = state.best_epoch;
  result.best_valid_accuracy = state.best_valid_accuracy;
  result.best_valid_loss = state.best_valid_loss;
  result.train_seconds = state.train_seconds;
  result.train_tokens_per_second = state.train_tokens / std::max(state.train_seconds, 1e-9);
  if (result.interrupted) {
    progress.message(state.epochs_done > 0
                         ? fmt::format("interrupted: stopped after step {}; the last complete checkpoint is {} (epoch "
                                       "{}); continue with --resume",
                                       step, checkpoint_path.string(), state.epochs_done)
                         : fmt::format("interrupted: stopped after step {}, before the first epoch ended; nothing "
                                       "was saved but {} and {}",
                                       step, kVocabFile, kConfigFile));
    result.wall_seconds = seconds_since(wall_start);
    return result;
  }

  // The test set, once, with the best-validation model.
  tapegrad::io::safetensors::load_state_dict((dir / kModelFile).string(), state_dict);
  result.test = evaluate(*model, data.test, batch_size, tapegrad::train::interrupt_requested);
  if (result.test.stopped) {
    result.interrupted = true;
    progress.message(
        "interrupted during the test evaluation; the run's files are complete, evaluate them with "
        "`train_imdb evaluate --run " +
        dir.string() + "`");
    result.wall_seconds = seconds_since(wall_start);
    return result;
  }
  metrics.write({{"step", step},
                 {"split", "test"},
                 {"best_epoch", state.best_epoch},
                 {"test_loss", result.test.loss},
                 {"test_acc", result.test.accuracy},
                 {"elapsed", state.train_seconds}});
  result.wall_seconds = seconds_since(wall_start);
  print_summary(out, config, result);
  return result;
}

void print_summary(std::ostream& out, const Config& config, const TrainResult& r) {
  const fs::path dir = config.out;
  out << (std::isnan(r.best_valid_accuracy)
              ? fmt::format("no validation set: the model of the last epoch ({}) was kept\n", r.best_epoch)
              : fmt::format("best epoch {} of {}: valid accuracy {:.2f}% (loss {:.4f})\n", r.best_epoch, config.epochs,
                            100.0 * r.best_valid_accuracy, r.best_valid_loss))
      << fmt::format("test accuracy {:.2f}% (loss {:.4f}) on {} reviews, evaluated once with the best model\n",
                     100.0 * r.test.accuracy, r.test.loss, r.test.count)
      << fmt::format("wall time {} (data {:.1f} s, training {}, test {:.1f} s); {} tokens/s in training\n",
                     tapegrad::train::format_duration(r.wall_seconds), r.data_seconds,
                     tapegrad::train::format_duration(r.train_seconds), r.test.seconds,
                     tapegrad::train::format_rate(r.train_tokens_per_second))
      << fmt::format("files in {}:\n", dir.string())
      << fmt::format("  {:<22} the best-validation model (epoch {})\n", kModelFile, r.best_epoch)
      << fmt::format("  {:<22} the last epoch's training state, for --resume\n", kCheckpointFile)
      << fmt::format("  {:<22} the vocabulary, one token per line\n", kVocabFile)
      << fmt::format("  {:<22} every setting of the run\n", kConfigFile)
      << fmt::format("  {:<22} training curves, one JSON object per line\n", kMetricsFile) << std::flush;
}

}  // namespace imdb
