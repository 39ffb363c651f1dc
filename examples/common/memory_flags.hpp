// The flags that trade time for memory, the same in the training programs that take them: --accumulate
// (gradient accumulation, saved and kept on --resume: it changes the run's rounding),
// --activation-checkpointing (saved, free on --resume: the gradients are the same bit for bit) and --zero
// (saved, free on --resume: the trajectory is DDP's, bit for bit at stage 1, to float rounding at stage
// 2, no more than resuming on another number of ranks changes it).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "examples/common/flags.hpp"

namespace examples {

/// --accumulate: micro-batches per optimizer step (train::TrainerOptions::accumulate).
template <typename C>
Flag accumulate_flag(long double max) {
  return flag("--accumulate", &C::accumulate,
              "cut each step's --batch-size batch into this many micro-batches, one forward and backward each, "
              "for the memory of one (the step is the whole batch's, weighted per example or token)")
      .in(closed(1, max));
}

/// "--accumulate 8 is more than --batch-size 4: ..." when a micro-batch would be empty, else nothing.
inline std::optional<std::string> accumulate_problem(std::int64_t accumulate, std::int64_t batch_size) {
  if (accumulate <= batch_size) return std::nullopt;
  return fmt::format("--accumulate {} is more than --batch-size {}: a micro-batch would be empty", accumulate,
                     batch_size);
}

/// --activation-checkpointing: the model's layers recompute their blocks' activations in backward.
template <typename C>
Flag activation_checkpointing_flag() {
  return flag("--activation-checkpointing", &C::activation_checkpointing,
              "keep only the inputs of each layer's attention and feed-forward blocks and recompute the blocks in "
              "backward: less memory for about one more forward (the gradients are the same bit for bit, so "
              "--resume may change it)")
      .free_on_resume();
}

/// --zero: the ZeRO stage of data-parallel training under mpirun (distributed::ZeroRedundancyOptimizer).
template <typename C>
Flag zero_flag() {
  return flag("--zero", &C::zero,
              "under mpirun: 1 shards the optimizer state (Adam's moments) over the ranks, 2 the averaged "
              "gradients too, for less memory per rank at the same steps (0: every rank keeps all; one process "
              "has nothing to shard; --resume may change it and the number of ranks)")
      .in(closed(0, 2))
      .free_on_resume();
}

}  // namespace examples
