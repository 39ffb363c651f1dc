// The training run of train_lm on the train/ layer's Trainer: data, vocabulary, model, AdamW with warmup
// and cosine decay, validation perplexity every --eval-every steps (the best model and the checkpoint
// saved then), --resume, Ctrl-C, and the bigram baselines on the same validation targets.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "examples/common/parallel.hpp"
#include "examples/lm/config.hpp"
#include "examples/lm/data.hpp"
#include "examples/lm/model.hpp"
#include "tapegrad/train/replicas.hpp"

namespace lm {

struct TrainResult {
  bool interrupted = false;
  std::int64_t steps = 0;
  Validation best;  // of the best validation (lowest loss), on the reviews validated during training
  std::int64_t best_step = 0;
  Validation final;  // the best model on all validation reviews (after the last step, not interrupted)
  std::vector<BaselineScore> baselines;  // causal objective only
  double data_seconds = 0.0, train_seconds = 0.0, wall_seconds = 0.0, tokens_per_second = 0.0;
};

// Data-parallel training under mpirun (main.cpp), as train_imdb's. --batch-size is the global batch,
// cut into one part per rank; each rank's loss is weighted by its share of the batch's target tokens,
// so that the averaged gradient is that of the global batch and a run's result does not depend on the
// number of ranks.
using Parallel = examples::Parallel;

// Trains as config says into config.out: config.json, vocab.txt, metrics.jsonl, model.safetensors (the
// best validation loss on the --valid-reviews subset) and last.ckpt.safetensors; then scores that model
// on all validation reviews. Progress goes to log, the summary to out. The forward, backward and every
// validation run in config.precision as resolved on this machine (bf16: under tapegrad::autocast), a
// resumed run in the precision it started in. Stops
// early (like Ctrl-C) when stop_after_step says so. Throws train::UsageError for settings that do not
// fit the run folder or the data, std::runtime_error for file problems. With parallel.size > 1 every
// rank trains its part of each batch and rank 0 alone writes files, prints and scores the final model.
TrainResult train(const Config& config, std::ostream& out, std::ostream& log, bool interactive,
                  const std::function<bool(std::int64_t)>& stop_after_step = {}, const Parallel& parallel = {});

}  // namespace lm
