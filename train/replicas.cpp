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

std::vector<std::size_t> rank_rows(const std::vector<std::size_t>& rows, int num_replicas, int rank) {
  check_rank("rank_rows", num_replicas, rank);
  std::vector<std::size_t> out;
  for (auto k = static_cast<std::size_t>(rank); k < rows.size(); k += static_cast<std::size_t>(num_replicas)) {
    out.push_back(rows[k]);
  }
  return out;
}

template <typename T>
Tensor<T> empty_share_loss() {
  return Tensor<T>(xt::xarray<T>(T(0)), /*requires_grad=*/true);
}

template Tensor<float> empty_share_loss<float>();
template Tensor<double> empty_share_loss<double>();

}  // namespace tapegrad::train
