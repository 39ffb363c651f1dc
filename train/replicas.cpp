#include "tapegrad/train/replicas.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace tapegrad::train {

void check_rank(const char* who, int num_replicas, int rank) {
  if (num_replicas < 1 || rank < 0 || rank >= num_replicas) {
    throw std::invalid_argument(
        fmt::format("{}: rank {} is not in [0, {}) (num_replicas {})", who, rank, num_replicas, num_replicas));
  }
}

std::vector<std::size_t> shard(const std::vector<std::size_t>& indices, int num_replicas, int rank, bool drop_last) {
  check_rank("shard", num_replicas, rank);
  const auto n = static_cast<std::size_t>(num_replicas);
  const std::size_t per_rank = drop_last ? indices.size() / n : (indices.size() + n - 1) / n;
  std::vector<std::size_t> out;
  out.reserve(per_rank);
  for (std::size_t k = 0; k < per_rank; ++k) {
    const std::size_t position = k * n + static_cast<std::size_t>(rank);
    out.push_back(indices[position % indices.size()]);  // past the end: the padding repeats the start
  }
  return out;
}

}  // namespace tapegrad::train
