// The training run of train_imdb: data, vocabulary, model, the epoch loop with per-epoch validation,
// the best and the last checkpoint, --resume, Ctrl-C, and the single test evaluation at the end.
#pragma once

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "examples/common/parallel.hpp"
#include "examples/imdb/config.hpp"
#include "examples/imdb/evaluate.hpp"

namespace imdb {

struct EpochRecord {
  std::int64_t epoch = 0;  // from 1
  double train_loss = 0.0, train_accuracy = 0.0;
  EvalResult valid;
  double seconds = 0.0;  // training part of the epoch
  double tokens_per_second = 0.0;
};

struct TrainResult {
  bool interrupted = false;           // Ctrl-C: stopped early, no test evaluation
  std::vector<EpochRecord> epochs;    // those run by this call (a resumed run starts later)
  std::vector<double> logged_losses;  // the training loss of every --log-every window, in order
  std::int64_t steps = 0;             // global step reached
  std::int64_t best_epoch = 0;
  double best_valid_accuracy = 0.0, best_valid_loss = 0.0;
  EvalResult test;
  Calibration test_calibration;                // with the temperature fitted on the validation reviews
  std::optional<ContrastResult> contrast;      // the test contrast pairs, when their file is there
  std::optional<ContrastResult> contrast_dev;  // the development pairs, likewise
  std::optional<EvalResult> valid_windows;     // the best model on one short window of each validation review
  double valid_window_ece = 0.0;               // their calibration error with the run's temperature
  double data_seconds = 0.0, train_seconds = 0.0, wall_seconds = 0.0;
  double train_tokens_per_second = 0.0;
};

// Data-parallel training under mpirun (main.cpp): the shared examples::Parallel.
using Parallel = examples::Parallel;

// Trains as config says, writing into config.out (created if needed): vocab.txt, config.json,
// metrics.jsonl, model.safetensors (best validation accuracy) and last.ckpt.safetensors (after each
// epoch). With config.resume, continues the run in config.out from its last checkpoint; config must
// then match the saved config.json in everything that defines the run (UsageError otherwise).
// Progress goes to `log` (a redrawn bar when interactive), the final summary to `out`. The forward,
// backward and every evaluation run in config.precision as resolved on this machine (bf16: under
// tapegrad::autocast), a resumed run in the precision it started in.
// Stops early, like Ctrl-C, when interrupt_requested() or stop_after_step(step) says so after a step.
// Throws UsageError for settings that do not fit the data, std::runtime_error for file problems.
// With parallel.size > 1 every rank trains its part of each batch and rank 0 alone writes files,
// prints and evaluates the test set.
TrainResult train(const Config& config, std::ostream& out, std::ostream& log, bool interactive,
                  const std::function<bool(std::int64_t step)>& stop_after_step = {}, const Parallel& parallel = {});

// The windows of valid_windows: one per review, 5 to 30 tokens, the length of a short review.
inline constexpr tapegrad::datasets::CropOptions kValidWindows{1.0, 5, 30};

// The crops of training batches that config asks for.
tapegrad::datasets::CropOptions crop_options(const Config& config);

// The summary printed at the end of a complete run.
void print_summary(std::ostream& out, const Config& config, const TrainResult& result);

}  // namespace imdb
