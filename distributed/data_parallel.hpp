/// @file
/// DistributedDataParallel (torch.nn.parallel.DistributedDataParallel): every rank holds the same
/// model, runs forward and backward on its own shard of the batch, and the gradients are averaged
/// over the ranks with MPI_Iallreduce in buckets started while backward still runs, so that after
/// synchronize() every rank steps with the gradient of the whole global batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tapegrad/distributed/bucket_reduction.hpp"
#include "tapegrad/distributed/communicator.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::distributed {

/// How DistributedDataParallel groups the gradients into buckets (torch's bucket_cap_mb and first bucket).
struct DataParallelOptions {
  /// The first bucket is small so that its reduction starts early in backward (torch's
  /// dist._DEFAULT_FIRST_BUCKET_BYTES, 1 MiB); the others hold up to bucket_bytes (bucket_cap_mb = 25).
  /// A parameter larger than a bucket gets a bucket of its own.
  std::size_t first_bucket_bytes = std::size_t(1) << 20;
  std::size_t bucket_bytes = std::size_t(25) << 20;
};

/// What the gradient reductions cost, summed since construction (or reset_stats()).
struct DataParallelStats {
  std::int64_t synchronizations = 0;
  std::int64_t buckets_started_in_backward = 0;  ///< started from a hook, before synchronize()
  std::int64_t buckets_started_in_synchronize = 0;
  double wait_seconds = 0.0;  ///< time synchronize() spent waiting for reductions: what was not hidden
  double bytes_reduced = 0.0;
};

/// Wraps a module for data-parallel training. The constructor is collective: it checks that every
/// rank's model has the same parameter and buffer names, shapes and dtype (naming the first
/// difference otherwise) and copies rank 0's parameters and buffers to every rank.
///
/// A step:  loss = criterion(model(shard)); loss.backward(); ddp.synchronize(); optimizer.step();
/// Buckets hold the parameters in reverse registration order (the order backward completes them),
/// and are reduced strictly in bucket order on every rank, as MPI requires of collectives. A gradient
/// is summed in its dtype and divided by the number of ranks, like torch's DDP.
///
/// Gradient accumulation: backward the micro-batches before the last inside a no_sync() scope; their
/// gradients add up locally and the last backward (outside it) reduces the sum once.
template <typename T>
class DistributedDataParallel {
 public:
  DistributedDataParallel(nn::Module<T>& module, const Communicator& comm, DataParallelOptions options = {});
  ~DistributedDataParallel() { stop_reducing(hooks_, buckets_); }
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  nn::Module<T>& module() { return module_; }
  const Communicator& communicator() const { return comm_; }

  /// Waits for every bucket of this backward pass (starting any that backward did not complete, e.g.
  /// for parameters it did not reach) and replaces each parameter's gradient by the average over the
  /// ranks. Call after backward() and before clipping and optimizer.step(). A parameter no rank gave
  /// a gradient gets zeros. Throws std::logic_error inside no_sync().
  void synchronize();

  /// While a NoSync lives, backward passes only accumulate gradients locally (torch's no_sync()).
  using NoSync = distributed::NoSync<DistributedDataParallel>;
  NoSync no_sync() { return NoSync(*this); }

  /// The parameter names of each bucket, in reduction order.
  std::vector<std::vector<std::string>> bucket_names() const;
  const DataParallelStats& stats() const { return stats_; }
  void reset_stats() { stats_ = DataParallelStats{}; }

 private:
  struct Slot {
    std::string name;
    Tensor<T> param;
    std::size_t bucket = 0, offset = 0;
    bool ready = false;  ///< its gradient is in the bucket for this pass
  };
  struct Bucket {
    std::vector<std::size_t> slots;
    std::vector<T> buffer;
    std::size_t ready = 0;  ///< slots whose gradient is in the buffer
    MPI_Request request = MPI_REQUEST_NULL;
  };
  void on_gradient_ready(std::size_t slot);
  void copy_into_bucket(Slot& slot);
  void start_ready_buckets(bool in_backward);
  void start(Bucket& bucket, bool in_backward);
  friend NoSync;

  nn::Module<T>& module_;
  Communicator comm_;
  std::vector<Slot> slots_;
  std::vector<Bucket> buckets_;
  std::size_t next_bucket_ = 0;  ///< the first bucket not yet started in this pass
  bool sync_enabled_ = true;
  std::vector<RemovableHandle> hooks_;
  DataParallelStats stats_;
};

/// "parameter <name> <dtype> [shape]" and "buffer ..." lines, one per tensor, for
/// verify_same_on_all_ranks().
template <typename T>
std::string model_signature(const nn::Module<T>& module);

/// Collective: throws std::runtime_error on every rank if `text` (a configuration, a model signature)
/// is not the same on all ranks, naming `what`, each rank that differs from rank 0 and its first
/// differing line. Compares 64-bit FNV-1a checksums first and gathers the texts only on a mismatch.
void verify_same_on_all_ranks(const Communicator& comm, const std::string& what, const std::string& text);

/// Collective: copies rank 0's parameters and buffers into every rank's module (shapes must match;
/// check with verify_same_on_all_ranks first, as DistributedDataParallel does).
template <typename T>
void broadcast_parameters(nn::Module<T>& module, const Communicator& comm);

/// Collective: a mean over all ranks of per-rank sums, for logging the loss and accuracy of the global
/// batch: returns sum over ranks of numerator / sum over ranks of denominator.
double global_mean(const Communicator& comm, double numerator, double denominator);

/// 64-bit FNV-1a of the parameters' and buffers' bytes, in order: equal on two ranks exactly when
/// their models are bit-identical (up to hash collisions).
template <typename T>
std::uint64_t parameter_checksum(const nn::Module<T>& module);

extern template class DistributedDataParallel<float>;
extern template class DistributedDataParallel<double>;

}  // namespace tapegrad::distributed
