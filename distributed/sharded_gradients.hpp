/// @file
/// ShardedGradients: the gradient reduction of ZeRO stage 2. Each gradient is averaged over the ranks
/// onto the one rank that owns its parameter (MPI_Ireduce per bucket, started from backward's hooks as
/// DistributedDataParallel starts its allreduces), so that a rank ends up holding only its own shard
/// of the averaged gradients.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tapegrad/autograd/tensor.hpp"
#include "tapegrad/distributed/bucket_reduction.hpp"
#include "tapegrad/distributed/communicator.hpp"

namespace tapegrad::distributed {

/// How ShardedGradients groups gradients into buckets and how many of them it lets be in flight.
struct ShardedGradientOptions {
  /// As DataParallelOptions, a first bucket and then buckets of up to these sizes, but small: a bucket
  /// buffer exists only while its gradients are gathered and reduced, and is memory that ZeRO saves
  /// elsewhere. A bucket holds the parameters of one owner only; a parameter of a bucket's size or more
  /// is reduced in its own gradient, without a copy.
  std::size_t first_bucket_bytes = std::size_t(1) << 20;
  std::size_t bucket_bytes = std::size_t(1) << 20;
  /// Reductions allowed in flight: starting one more first waits for the oldest, which bounds the
  /// buffers a rank holds during backward to about this many buckets.
  std::size_t max_in_flight = 2;
};

/// What the reductions cost since construction.
struct ShardedGradientStats {
  std::int64_t synchronizations = 0;
  std::int64_t buckets_started_in_backward = 0;
  std::int64_t buckets_started_in_synchronize = 0;
  double bytes_reduced = 0.0;
  std::size_t peak_buffer_bytes = 0;  ///< the largest total of bucket buffers held at once
};

/// Averages the gradients of `params` onto their owners (owners[i] is parameter i's rank, the same on
/// every rank; see partition_parameters). Parameters that do not require grad are left out. Buckets
/// hold parameters in reverse order (the order backward completes them) and are reduced strictly in
/// bucket order on every rank. As soon as a gradient is copied into its bucket the parameter's own
/// gradient is dropped, on every rank; after synchronize() the owner gets the average back as the
/// parameter's gradient (summed in T, divided by the number of ranks, like DistributedDataParallel, so
/// the owner's values equal DDP's to float rounding, and bit for bit on two ranks), the other ranks
/// have no gradient for it. A parameter no rank gave a gradient gets zeros on its owner.
///
/// Gradient accumulation: backward the micro-batches before the last inside no_sync(); their gradients
/// add up locally (whole, on every rank) and the last backward reduces the sum.
template <typename T>
class ShardedGradients {
 public:
  /// Not collective, but every rank must pass the same shapes and owners in the same order.
  /// Throws std::invalid_argument if owners and params differ in length, an owner is not a rank, or a
  /// bucket size is 0.
  ShardedGradients(std::vector<Tensor<T>> params, std::vector<int> owners, const Communicator& comm,
                   ShardedGradientOptions options = {});
  ~ShardedGradients() { stop_reducing(hooks_, buckets_); }
  ShardedGradients(const ShardedGradients&) = delete;
  ShardedGradients& operator=(const ShardedGradients&) = delete;

  /// Waits for every bucket of this backward pass (starting those backward did not complete) and leaves
  /// each owned parameter's gradient the average over the ranks. Collective. Throws std::logic_error
  /// inside no_sync().
  void synchronize();

  /// While a NoSync lives, backward passes only accumulate gradients locally.
  using NoSync = distributed::NoSync<ShardedGradients>;
  NoSync no_sync() { return NoSync(*this); }

  std::size_t num_buckets() const { return buckets_.size(); }
  const ShardedGradientStats& stats() const { return stats_; }

 private:
  struct Slot {
    Tensor<T> param;
    std::size_t bucket = 0, offset = 0;
    bool ready = false;
  };
  struct Bucket {
    std::vector<std::size_t> slots;
    std::size_t numel = 0;
    int owner = 0;
    bool in_place = false;  ///< one parameter: reduced in its own gradient
    std::vector<T> buffer;
    std::size_t ready = 0;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  void on_gradient_ready(std::size_t slot);
  void take_gradient(Slot& slot);
  void start_ready_buckets(bool in_backward);
  void finish(Bucket& bucket);
  void finish_oldest();
  std::size_t buffer_bytes() const;
  friend NoSync;

  Communicator comm_;
  ShardedGradientOptions options_;
  std::vector<Slot> slots_;
  std::vector<Bucket> buckets_;
  std::size_t next_start_ = 0;   ///< the first bucket not yet started in this pass
  std::size_t next_finish_ = 0;  ///< the first started bucket not yet finished
  bool sync_enabled_ = true;
  std::vector<RemovableHandle> hooks_;
  ShardedGradientStats stats_;
};

extern template class ShardedGradients<float>;
extern template class ShardedGradients<double>;

}  // namespace tapegrad::distributed
