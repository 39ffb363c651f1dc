// The training batches' options from a program's flags --batch-size, --seed and --bucket (fields of the
// same names in each program's Config): shuffled by the seed, bucketed by length, trimmed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tapegrad/datasets/text/batching.hpp"

namespace examples {

template <typename Config>
tapegrad::datasets::BatchOptions batch_options(const Config& config) {
  tapegrad::datasets::BatchOptions batching;
  batching.batch_size = static_cast<std::size_t>(config.batch_size);
  batching.seed = static_cast<std::uint64_t>(config.seed);
  batching.bucket_chunk = static_cast<std::size_t>(config.bucket);
  batching.trim = true;
  return batching;
}

}  // namespace examples
