/// @file
/// Gradient accumulation's unit: one of the micro-batches an optimizer step's batch is cut into, and
/// the rows of the batch it holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tapegrad::train {

/// Micro-batch `index` of `count` (0 <= index < count) of one optimizer step's batch.
struct MicroBatch {
  std::int64_t index = 0;
  std::int64_t count = 1;
  bool last() const { return index + 1 == count; }
};

/// The rows of `rows` that micro-batch `micro` holds: consecutive parts whose sizes differ by at most
/// one, the longer first (torch.tensor_split), so that every micro-batch has a row when rows.size() >=
/// micro.count. Throws std::invalid_argument naming the values when micro is not a micro-batch
/// (index outside [0, count)) or it would be empty.
std::vector<std::size_t> micro_batch_rows(const std::vector<std::size_t>& rows, const MicroBatch& micro);

}  // namespace tapegrad::train
