/// @file
/// epoch_seed: the seed of one epoch's shuffle, shared by the batching of text datasets
/// (epoch_batches) and distributed::DistributedSampler, so that their orders agree.
#pragma once

#include <cstdint>

namespace tapegrad::datasets {

/// seed + 0x9E3779B97F4A7C15 * epoch: every epoch's order differs and each is reproducible on its own.
inline std::uint64_t epoch_seed(std::uint64_t seed, std::uint64_t epoch) {
  return seed + 0x9E3779B97F4A7C15ULL * epoch;
}

}  // namespace tapegrad::datasets
