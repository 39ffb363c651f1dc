/// @file
/// train::Trainer on several ranks: the Replicas that make every rank's Trainer one data-parallel run
/// (gradients averaged by a DistributedDataParallel, or sharded by ZeRO, step statistics and stop
/// decisions combined, rank 0 writing the files, each rank's dropout generators checkpointed and
/// restored).
#pragma once

#include <memory>
#include <vector>

#include "tapegrad/distributed/data_parallel.hpp"
#include "tapegrad/distributed/zero_redundancy_optimizer.hpp"
#include "tapegrad/train/loop.hpp"

namespace tapegrad::distributed {

/// The data-parallel part of one program's training: the model checked to be the same on every rank and
/// rank 0's values copied to all, its gradient reduction, and the Trainer's Replicas for it. Collective:
/// construct it on every rank, after the model and before training; it must outlive the Trainer.
/// split_generators() gives each rank its own dropout masks.
///
/// zero_stage 0: DistributedDataParallel and the program's optimizer. 1: the same gradients, and the
/// optimizer wrapped in a ZeroRedundancyOptimizer (state sharded). 2: no DistributedDataParallel; the
/// ZeroRedundancyOptimizer reduces each gradient onto its owner. The trajectory is DDP's to float
/// rounding at every stage (bit for bit at stage 1), so a run may change stages on --resume.
template <typename T>
class DataParallelTraining {
 public:
  /// Throws std::invalid_argument unless 0 <= zero_stage <= 2.
  DataParallelTraining(nn::Module<T>& model, const Communicator& comm, DataParallelOptions options = {},
                       int zero_stage = 0);

  /// Collective, once, before training: the optimizer the Trainer steps, make(params) at stage 0 and a
  /// ZeroRedundancyOptimizer around it at stages 1 and 2. The caller keeps it alive with the Trainer.
  std::unique_ptr<optim::Optimizer<T>> optimizer(std::vector<Tensor<T>> params, const OptimizerFactory<T>& make);

  /// For TrainerHooks::replicas. At stage 2, optimizer() must have been called before training starts.
  train::Replicas replicas();
  /// The gradient averaging of stages 0 and 1; null at stage 2.
  DistributedDataParallel<T>* ddp() { return ddp_.get(); }
  /// The ZeroRedundancyOptimizer optimizer() made; null before, and at stage 0.
  ZeroRedundancyOptimizer<T>* zero() { return zero_; }

 private:
  ZeroRedundancyOptimizer<T>& sharded(const char* what);

  nn::Module<T>& model_;
  Communicator comm_;
  int zero_stage_ = 0;
  std::unique_ptr<DistributedDataParallel<T>> ddp_;
  ZeroRedundancyOptimizer<T>* zero_ = nullptr;
};

extern template class DataParallelTraining<float>;
extern template class DataParallelTraining<double>;

}  // namespace tapegrad::distributed
