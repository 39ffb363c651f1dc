#include "tapegrad/distributed/sampler.hpp"

#include <fmt/format.h>

#include <numeric>
#include <stdexcept>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/datasets/epoch_seed.hpp"

namespace tapegrad::distributed {

DistributedSampler::DistributedSampler(std::size_t dataset_size, int num_replicas, int rank, bool shuffle,
                                       std::uint64_t seed, bool drop_last)
    : size_(dataset_size),
      num_replicas_(num_replicas),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed),
      drop_last_(drop_last) {
  train::check_rank("DistributedSampler", num_replicas, rank);
  if (dataset_size == 0) throw std::invalid_argument("DistributedSampler: the dataset is empty");
  if (drop_last && dataset_size < static_cast<std::size_t>(num_replicas)) {
    throw std::invalid_argument(
        fmt::format("DistributedSampler: with drop_last, {} examples leave nothing for each of {} ranks", dataset_size,
                    num_replicas));
  }
}

std::vector<std::size_t> DistributedSampler::indices() const {
  std::vector<std::size_t> order;
  if (shuffle_) {
    Generator gen(datasets::epoch_seed(seed_, epoch_));
    order = gen.permutation(size_);
  } else {
    order.resize(size_);
    std::iota(order.begin(), order.end(), std::size_t(0));
  }
  return shard(order, num_replicas_, rank_, drop_last_);
}

std::size_t DistributedSampler::num_samples() const {
  const auto n = static_cast<std::size_t>(num_replicas_);
  return drop_last_ ? size_ / n : (size_ + n - 1) / n;
}

}  // namespace tapegrad::distributed
