/// @file
/// Each rank's share of the data (torch.utils.data.distributed.DistributedSampler): every epoch's
/// shuffled order is cut into disjoint, equally long parts, one per rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tapegrad/train/replicas.hpp"

namespace tapegrad::distributed {

/// Rank `rank`'s part of a list (train::shard, which the trainer's data-parallel batches use too).
using train::shard;

/// The example indices rank `rank` visits in an epoch: the epoch's order (shuffled with a Generator
/// seeded with datasets::epoch_seed(seed, epoch), as datasets::epoch_batches does, or 0..n-1
/// without shuffle) split by shard(). Cutting each rank's list into batches of B gives, at step k,
/// the same examples across the ranks as one process cutting the whole order into batches of
/// num_replicas * B: that is what makes N ranks train like one process with an N times larger batch.
class DistributedSampler {
 public:
  DistributedSampler(std::size_t dataset_size, int num_replicas, int rank, bool shuffle = true, std::uint64_t seed = 0,
                     bool drop_last = false);
  void set_epoch(std::uint64_t epoch) { epoch_ = epoch; }
  /// This rank's indices for the current epoch.
  std::vector<std::size_t> indices() const;
  /// How many indices each rank gets per epoch.
  std::size_t num_samples() const;

 private:
  std::size_t size_;
  int num_replicas_, rank_;
  bool shuffle_;
  std::uint64_t seed_;
  bool drop_last_;
  std::uint64_t epoch_ = 0;
};

}  // namespace tapegrad::distributed
