/// @file
/// train::Trainer on several ranks: the Replicas that make every rank's Trainer one data-parallel run
/// (gradients averaged by a DistributedDataParallel, step statistics and stop decisions combined, rank
/// 0 writing the files, each rank's dropout generators checkpointed and restored).
#pragma once

#include <memory>

#include "tapegrad/distributed/data_parallel.hpp"
#include "tapegrad/train/loop.hpp"

namespace tapegrad::distributed {

/// The data-parallel part of one program's training: a DistributedDataParallel over `model` (which
/// checks that every rank built the same model and copies rank 0's values) and the Trainer's Replicas
/// for it. Collective: construct it on every rank, after the model and before training; it must
/// outlive the Trainer. split_generators() gives each rank its own dropout masks.
template <typename T>
class DataParallelTraining {
 public:
  DataParallelTraining(nn::Module<T>& model, const Communicator& comm, DataParallelOptions options = {});

  /// For TrainerHooks::replicas.
  train::Replicas replicas();
  DistributedDataParallel<T>& ddp() { return *ddp_; }

 private:
  nn::Module<T>& model_;
  Communicator comm_;
  std::unique_ptr<DistributedDataParallel<T>> ddp_;
};

extern template class DataParallelTraining<float>;
extern template class DataParallelTraining<double>;

}  // namespace tapegrad::distributed
