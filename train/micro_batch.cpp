#include "tapegrad/train/micro_batch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace tapegrad::train {

std::vector<std::size_t> micro_batch_rows(const std::vector<std::size_t>& rows, const MicroBatch& micro) {
  if (micro.count < 1 || micro.index < 0 || micro.index >= micro.count) {
    throw std::invalid_argument(
        fmt::format("micro_batch_rows: micro-batch {} of {} is not one of them", micro.index, micro.count));
  }
  const auto n = static_cast<std::size_t>(micro.count), i = static_cast<std::size_t>(micro.index);
  const std::size_t base = rows.size() / n, longer = rows.size() % n;
  const std::size_t begin = i * base + std::min(i, longer), size = base + (i < longer ? 1 : 0);
  if (size == 0) {
    throw std::invalid_argument(fmt::format(
        "micro_batch_rows: a batch of {} rows cut into {} micro-batches leaves micro-batch {} empty (accumulate over "
        "at most as many micro-batches as the batch has rows)",
        rows.size(), micro.count, micro.index));
  }
  return std::vector<std::size_t>(rows.begin() + static_cast<std::ptrdiff_t>(begin),
                                  rows.begin() + static_cast<std::ptrdiff_t>(begin + size));
}

}  // namespace tapegrad::train
