// The flag groups train_lm's training and its finetune subcommand share (C is lm::Config or
// lm::FinetuneConfig): one recipe, AdamW with linear warmup and cosine decay over --steps, and the run.
#pragma once

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "examples/common/commands.hpp"
#include "examples/common/flags.hpp"
#include "examples/common/memory_flags.hpp"
#include "examples/common/precision.hpp"
#include "examples/common/settings.hpp"

namespace lm {

// What the two commands' help says in their own words.
struct OptimizationHelp {
  const char* batch_size;  // what a batch holds
  const char* steps;
  const char* seed;  // what --seed seeds
};

// --lr, --warmup, --weight-decay, --clip-norm, --batch-size, --accumulate, `memory` (train_lm's --zero),
// --steps, --eval-every, --seed, --bucket.
template <typename C>
examples::FlagTable::Group optimization_flags(const OptimizationHelp& help, std::vector<examples::Flag> memory = {}) {
  namespace lim = examples::limits;
  using examples::flag;
  const auto int64_max = static_cast<long double>(std::numeric_limits<std::int64_t>::max());
  std::vector<examples::Flag> flags = {
      flag("--lr", &C::lr, "peak learning rate (linear warmup, then cosine decay to 0 at the last step)")
          .in(examples::closed(0, lim::kLearningRate)),
      flag("--warmup", &C::warmup, "warmup steps (fewer than --steps)").in(examples::closed(0, lim::kSteps - 1)),
      flag("--weight-decay", &C::weight_decay, "decoupled weight decay").in(examples::at_least(0)),
      flag("--clip-norm", &C::clip_norm, "gradient norm clipping (0: off)").in(examples::at_least(0)),
      flag("--batch-size", &C::batch_size, help.batch_size).in(examples::closed(1, lim::kBatchSize)),
      examples::accumulate_flag<C>(lim::kBatchSize)};
  flags = examples::join(std::move(flags), std::move(memory));
  flags.push_back(flag("--steps", &C::steps, help.steps).in(examples::closed(1, lim::kSteps)));
  flags.push_back(flag("--eval-every", &C::eval_every, "steps between validations and checkpoints")
                      .in(examples::closed(1, lim::kSteps)));
  flags.push_back(flag("--seed", &C::seed, help.seed).in(examples::closed(0, int64_max)));
  flags.push_back(
      flag("--bucket", &C::bucket, "length-bucketing chunk in batches (0: off)").in(examples::closed(0, lim::kSteps)));
  return {"Optimization (AdamW, warmup then cosine decay)", std::move(flags)};
}

// --threads, --precision (and what it resolved to), `saved` (settings the program sets), --log-every,
// --out and examples::run_flags.
template <typename C>
examples::FlagTable::Group run_flag_group(std::vector<examples::Flag> saved = {}) {
  namespace lim = examples::limits;
  using examples::flag;
  std::vector<examples::Flag> flags = {
      flag("--threads", &C::threads, "BLAS threads").in(examples::closed(1, lim::kThreads)).not_saved(),
      flag("--precision", &C::precision, examples::kPrecisionHelp).one_of(examples::kPrecisionChoices),
      examples::saved("precision-resolved", &C::precision_resolved)};
  flags = examples::join(std::move(flags), std::move(saved));
  flags.push_back(flag("--log-every", &C::log_every, "steps between metrics.jsonl lines and plain progress lines")
                      .in(examples::closed(1, lim::kSteps))
                      .not_saved());
  flags.push_back(flag("--out", &C::out, "run folder").not_saved());
  return {"Run", examples::join(std::move(flags), examples::run_flags<C>())};
}

}  // namespace lm
