/// @file
/// Replicas: what train::Trainer needs of data-parallel training on several processes; shard(), the rule
/// that gives each rank an equal part of a list of examples, and rank_rows(), its part of one batch.
/// Nothing here needs MPI: the distributed layer fills Replicas in with its collectives.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "tapegrad/autograd/tensor.hpp"
#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::train {

/// Rank `rank`'s part of `indices`: its elements rank, rank + num_replicas, rank + 2 num_replicas, ...
/// (torch's DistributedSampler). Every rank gets the same count, which collectives need: when
/// indices.size() is not a multiple of num_replicas, drop_last leaves out the last
/// indices.size() % num_replicas elements, and otherwise the list is padded by repeating its first
/// elements up to the next multiple, so a few examples count twice in that epoch.
/// Throws std::invalid_argument unless 0 <= rank < num_replicas.
std::vector<std::size_t> shard(const std::vector<std::size_t>& indices, int num_replicas, int rank,
                               bool drop_last = false);

/// Rank `rank`'s rows of one global (micro-)batch: rows[rank], rows[rank + num_replicas], ..., without
/// shard()'s padding, so that every row counts once and the ranks together train on the batch one
/// process would. The counts differ by one when rows.size() is not a multiple of num_replicas, and a
/// rank gets none when the batch has fewer rows than ranks: each rank then weighs its loss by its share
/// of the batch's examples or tokens, and a rank without rows backpropagates empty_share_loss().
/// Throws std::invalid_argument unless 0 <= rank < num_replicas.
std::vector<std::size_t> rank_rows(const std::vector<std::size_t>& rows, int num_replicas, int rank);

/// The loss of a rank that holds no row of a (micro-)batch: a 0 that backward accepts and that reaches
/// no parameter, so that the rank still joins the gradients' collectives (with zeros).
template <typename T>
Tensor<T> empty_share_loss();

/// Throws std::invalid_argument naming `who` unless 0 <= rank < num_replicas.
void check_rank(const char* who, int num_replicas, int rank);

/// What the trainer needs of data-parallel training on several processes (distributed::data_parallel
/// fills it in; a single process leaves it empty). Every rank runs the same Trainer: the ranks' step
/// statistics and stop decisions are combined every step, so that they log the global batch and stop
/// together; rank 0 alone writes metrics.jsonl, the model file and the checkpoints.
struct Replicas {
  int rank = 0, size = 1;
  /// After backward, before clipping: each gradient replaced by its mean over the ranks.
  std::function<void()> synchronize_gradients;
  /// While the handle it returns lives, backward passes only accumulate gradients locally (DDP's
  /// no_sync()): the Trainer holds one over every micro-batch but the last of a step.
  std::function<std::shared_ptr<void>()> no_sync;
  /// With the gradients sharded over the ranks (ZeRO stage 2), collective: clips them by the norm of all
  /// of them together and returns it, in place of optim::clip_grad_norm_ of the optimizer's parameters.
  std::function<double(double max_norm)> clip_grad_norm;
  /// With the optimizer state sharded over the ranks (ZeRO), collective, before every checkpoint:
  /// gathers it on rank 0, whose optimizer's state_dict() then has the whole state.
  std::function<void()> consolidate_optimizer_state;
  /// Collective: sums every value over the ranks, in place.
  std::function<void(std::vector<double>& values)> all_reduce_sum;
  /// Collective, at every checkpoint: metadata rank 0 adds to the checkpoint (the other ranks' dropout
  /// generators).
  std::function<io::safetensors::Metadata()> checkpoint_metadata;
  /// On --resume, after the checkpoint is loaded on every rank: restores each rank's own state from
  /// the checkpoint's metadata.
  std::function<void(const io::safetensors::Metadata& metadata)> restore;
  bool writes_files() const { return rank == 0; }
};

}  // namespace tapegrad::train
