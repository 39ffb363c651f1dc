/// @file
/// The training loop every program shares. A program supplies the forward pass and the loss of one
/// batch (and, if it validates, a score); the Trainer does the rest, the same way for every program:
///   lr from the schedule -> zero_grad -> forward + loss (the program's) -> backward (once per
///   micro-batch with gradient accumulation) -> gradient
///   clipping -> optimizer step -> progress bar or lines -> a metrics.jsonl line every log_every steps
///   -> validation every eval_every steps and at each epoch's end, the best model saved as
///   model.safetensors and the training checkpoint as last.ckpt.safetensors (the first of which deletes
///   the overwritten run that RunDirectory kept in previous-run/) -> Ctrl-C and time limit.
/// With autocast, the forward, backward and validation run under tapegrad::autocast (mixed precision).
/// With resume it continues from the run folder's checkpoint exactly (model, optimizer, generators,
/// the program's extra state, the best score so far), dropping later metrics lines.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tapegrad/autograd/tensor.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/optim/optimizer.hpp"
#include "tapegrad/optim/schedule.hpp"
#include "tapegrad/train/checkpoint.hpp"
#include "tapegrad/train/metrics.hpp"
#include "tapegrad/train/micro_batch.hpp"
#include "tapegrad/train/progress.hpp"
#include "tapegrad/train/replicas.hpp"
#include "tapegrad/train/run_directory.hpp"
#include "tapegrad/train/timing.hpp"

namespace tapegrad::train {

/// What the program's forward computes for one batch.
template <typename T>
struct StepOutput {
  Tensor<T> loss;  ///< the scalar loss to backpropagate, a mean over `count`
  /// Examples (or target tokens) the loss averages over: weights the running means, and with gradient
  /// accumulation the micro-batch's loss in the step (count over the step's micro-batches' counts).
  double count = 1;
  double correct = 0;  ///< of those, predicted correctly (accuracy = correct / count)
  double tokens = 0;   ///< tokens processed, for tokens/s
};

/// The result of one validation.
struct Evaluation {
  /// Higher is better (accuracy, exact match). NaN: nothing to validate on; every validation then
  /// counts as the best, so the latest model is kept.
  double score = 0;
  nlohmann::json metrics = nlohmann::json::object();  ///< added to the metrics.jsonl line ("valid_acc": ...)
  std::string summary;                                ///< for the progress message, e.g. "valid loss 0.4120 acc 81.20%"
  bool stopped = false;  ///< interrupted before the end: the trainer stops without saving anything
};

/// What a validate hook throws when the model's outputs are not finite (the run diverged): the Trainer
/// stops as it does for a non-finite training loss, naming the step, and saves nothing.
struct NonFiniteValidation : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// How long a Trainer runs and how often it logs, validates and checkpoints.
struct TrainerOptions {
  std::int64_t epochs = 1;
  std::int64_t steps_per_epoch = 0;  ///< > 0
  optim::Schedule schedule;          ///< lr of step s (from 1); required
  std::int64_t log_every = 50;       ///< steps between metrics.jsonl lines (and plain progress lines)
  std::int64_t eval_every = 0;       ///< steps between validations; 0: only at each epoch's end (always)
  double clip_norm = 0;              ///< clip_grad_norm_ of the optimizer's parameters; 0 disables
  double time_limit = 0;             ///< seconds of training (validation excluded); 0: none
  bool ties_improve = false;         ///< a score equal to the best is a new best (a later, longer-trained model)
  bool resume = false;               ///< continue from the run folder's checkpoint
  /// Gradient accumulation: each optimizer step runs the forward hook and backward on this many
  /// micro-batches of its batch, weighting micro-batch i's loss by count_i / sum of the counts, so that
  /// the step is the one taken on the whole batch (to float rounding). With data-parallel replicas the
  /// gradients are reduced over the ranks only in the last micro-batch's backward (Replicas::no_sync).
  std::int64_t accumulate = 1;
  /// Mixed precision, as torch.autocast("cpu", dtype=torch.bfloat16) around the forward and backward: the
  /// hooks' forward, the backward and validate run under tapegrad::autocast, so that the float models'
  /// matrix products take bfloat16 operands; parameters, gradients, the optimizer and the losses stay
  /// float. False leaves autocast as the caller has it.
  bool autocast = false;
  /// Anomaly detection (DetectAnomalyGuard) while training: the first NaN in an op's output, or NaN or
  /// infinity in a gradient, throws naming the op. Slower. Without it a non-finite loss still stops the
  /// run before the step that would spread it into the model.
  bool detect_anomaly = false;
  /// Asked after every step (besides Ctrl-C): true stops training as Ctrl-C does. For tests.
  std::function<bool(std::int64_t step)> stop_after_step;
};

/// The program's part; only forward is required.
template <typename T>
struct TrainerHooks {
  /// Before the first step of each epoch (counted from 0), e.g. DataLoader::set_epoch.
  std::function<void(std::int64_t epoch)> begin_epoch;
  /// The forward pass and loss of global step `step` (from 0), batch `index` of its epoch, in train mode:
  /// of the rows of that batch micro_batch_rows(rows, micro) gives (all of them without accumulation).
  std::function<StepOutput<T>(std::int64_t step, std::int64_t index, const MicroBatch& micro)> forward;
  /// After each optimizer step, e.g. ExponentialMovingAverage::update.
  std::function<void()> after_step;
  /// Scores the model (the trainer restores train mode afterwards). None: every validation is the best.
  std::function<Evaluation()> validate;
  /// Held while validating and saving the best model, e.g. ExponentialMovingAverage::AveragedParameters
  /// so that the averages are what is scored and saved.
  std::function<std::shared_ptr<void>()> evaluation_scope;
  /// State saved in the checkpoint besides model and optimizer (as "extra."), and restored on resume.
  std::function<StateDict<T>()> extra_state;
  std::function<void(const StateDict<T>&)> load_extra_state;
  /// The run's own generators (e.g. the one that draws training examples), saved and restored.
  NamedGenerators generators;
  /// Data-parallel training; empty for one process.
  Replicas replicas;
};

/// One validation as the trainer saw it.
struct ValidationRecord {
  std::int64_t step = 0;
  double epoch = 0;  ///< fractional: 2.5 is half way through the third epoch
  bool epoch_end = false;
  double train_loss = 0, train_accuracy = 0;  ///< means over the steps since the previous validation
  double train_seconds = 0, tokens_per_second = 0, valid_seconds = 0;
  Evaluation evaluation;
  bool best = false;
};

/// What Trainer::run() reports when it returns.
struct TrainerResult {
  bool interrupted = false;  ///< Ctrl-C or stop_after_step: stopped early
  bool out_of_time = false;  ///< the time limit ended training (a validation and checkpoint were made)
  std::int64_t start_step = 0, step = 0;
  std::vector<ValidationRecord> validations;  ///< those of this call
  std::vector<double> logged_losses;          ///< the loss of every metrics window, in order
  std::int64_t best_step = 0;                 ///< 0: no validation yet
  double best_score = 0;
  nlohmann::json best_metrics;                 ///< Evaluation::metrics of the best validation
  double train_seconds = 0, train_tokens = 0;  ///< of the whole run, resumed parts included
};

/// The training loop every program shares: schedule, zero_grad, the hooks' forward, backward, clipping,
/// the optimizer step, progress, metrics, validation with the best model saved, checkpoints, Ctrl-C
/// and --resume (see TrainerOptions and TrainerHooks).
template <typename T>
class Trainer {
 public:
  /// With options.resume, loads the checkpoint of `run` (model, optimizer, generators, extra state)
  /// and its place in training, and checks the best model file it names (checksum, shapes, and the
  /// config and own files it was written with); then opens the run's metrics.jsonl. Throws
  /// std::invalid_argument for bad options, std::runtime_error naming the file for an unreadable or
  /// damaged checkpoint, model file, config or own file.
  Trainer(const RunDirectory& run, nn::Module<T>& model, optim::Optimizer<T>& optimizer, TrainerOptions options,
          TrainerHooks<T> hooks, Progress& progress);

  /// Trains until the last step, the time limit or an interruption.
  TrainerResult run();

  std::int64_t step() const { return step_; }  ///< steps done so far
  std::int64_t total_steps() const { return options_.epochs * options_.steps_per_epoch; }
  /// The run's log, for lines of the program's own (e.g. the test score at the end). Throws
  /// std::logic_error on a rank other than 0 of data-parallel training, which writes no files.
  MetricsLog& metrics();

 private:
  /// A step's (or a window's, an epoch's) loss summed over its targets, its targets, the correct ones and
  /// its tokens, over all ranks.
  struct Sums {
    double loss = 0, count = 0, correct = 0, tokens = 0;
    void add(const Sums& s) { loss += s.loss, count += s.count, correct += s.correct, tokens += s.tokens; }
  };
  /// One optimizer step at learning rate lr; its sums, and whether any rank asked to stop or ran out of time.
  Sums train_step(std::int64_t epoch, std::int64_t index, double lr, const Stopwatch& step_clock, bool& stop,
                  bool& time_up);
  /// The epoch's steps from index on; false when training stops within it.
  bool train_epoch(std::int64_t epoch, TrainerResult& result);
  void finish(TrainerResult& result);
  bool validate_and_save(std::int64_t epoch, std::int64_t index, TrainerResult& result);
  /// The hooks' validation of the model as it is (in its evaluation scope); false when Ctrl-C stopped it on
  /// any rank. Saves the model when it is the best so far.
  bool validate_model(std::int64_t epoch, ValidationRecord& record, const io::safetensors::Metadata& digests);
  /// The validation's metrics.jsonl line and progress message.
  void log_validation(std::int64_t epoch, const ValidationRecord& record);
  /// "; likely to blame: ..." (train/divergence.hpp) for a divergence message, or "".
  std::string blame() const;
  /// The trainer's own checkpoint entries added to `metadata`.
  io::safetensors::Metadata checkpoint_metadata(io::safetensors::Metadata metadata) const;

  const RunDirectory& run_;
  nn::Module<T>& model_;
  optim::Optimizer<T>& optimizer_;
  TrainerOptions options_;
  TrainerHooks<T> hooks_;
  Progress& progress_;
  std::optional<MetricsLog> metrics_;
  std::int64_t step_ = 0;
  std::optional<std::int64_t> checkpoint_step_;  ///< of the last complete checkpoint
  std::int64_t best_step_ = 0;
  double best_score_;
  nlohmann::json best_metrics_;
  double train_seconds_ = 0, train_tokens_ = 0;
  // Since the previous validation.
  double since_loss_ = 0, since_count_ = 0, since_correct_ = 0, since_tokens_ = 0, since_seconds_ = 0;
};

}  // namespace tapegrad::train
