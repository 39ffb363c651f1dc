#include "tapegrad/distributed/trainer.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "tapegrad/distributed/checkpoint.hpp"

namespace tapegrad::distributed {

template <typename T>
DataParallelTraining<T>::DataParallelTraining(nn::Module<T>& model, const Communicator& comm,
                                              DataParallelOptions options, int zero_stage)
    : model_(model), comm_(comm), zero_stage_(zero_stage) {
  if (zero_stage < 0 || zero_stage > 2) {
    throw std::invalid_argument(fmt::format("DataParallelTraining: ZeRO stage {} is not 0, 1 or 2", zero_stage));
  }
  if (zero_stage < 2) {
    ddp_ = std::make_unique<DistributedDataParallel<T>>(model, comm, options);
  } else {
    // What DistributedDataParallel's constructor does, without its buckets.
    verify_same_on_all_ranks(comm_, "model (parameter and buffer names, dtypes and shapes)", model_signature(model));
    broadcast_parameters(model, comm_);
  }
  split_generators(model, comm);
}

template <typename T>
std::unique_ptr<optim::Optimizer<T>> DataParallelTraining<T>::optimizer(std::vector<Tensor<T>> params,
                                                                        const OptimizerFactory<T>& make) {
  if (zero_stage_ == 0) return make(std::move(params));
  if (zero_ != nullptr) throw std::logic_error("DataParallelTraining::optimizer: called twice");
  ZeroOptions options;
  options.stage = zero_stage_;
  auto zero = std::make_unique<ZeroRedundancyOptimizer<T>>(std::move(params), make, comm_, options);
  zero_ = zero.get();
  return zero;
}

template <typename T>
ZeroRedundancyOptimizer<T>& DataParallelTraining<T>::sharded(const char* what) {
  if (zero_ == nullptr) {
    throw std::logic_error(
        fmt::format("DataParallelTraining: {} at ZeRO stage {} needs the optimizer: call optimizer() before training",
                    what, zero_stage_));
  }
  return *zero_;
}

template <typename T>
train::Replicas DataParallelTraining<T>::replicas() {
  train::Replicas r;
  r.rank = comm_.rank();
  r.size = comm_.size();
  if (ddp_) {
    r.synchronize_gradients = [this] { ddp_->synchronize(); };
    r.no_sync = [this] {
      return std::shared_ptr<void>(std::make_shared<typename DistributedDataParallel<T>::NoSync>(*ddp_));
    };
  } else {
    r.synchronize_gradients = [this] { sharded("averaging the gradients").synchronize(); };
    r.no_sync = [this] {
      // NoSync is neither copied nor moved: built in place on the optimizer's gradients.
      return std::shared_ptr<void>(
          std::make_shared<typename ShardedGradients<T>::NoSync>(*sharded("gradient accumulation").gradients()));
    };
    r.clip_grad_norm = [this](double max_norm) { return sharded("clipping").clip_grad_norm_(max_norm); };
  }
  if (zero_stage_ > 0) {
    r.consolidate_optimizer_state = [this] { sharded("a checkpoint").consolidate_state_dict(0); };
  }
  r.all_reduce_sum = [this](std::vector<double>& values) { comm_.all_reduce_sum(values); };
  r.checkpoint_metadata = [this] { return gather_generator_states(model_, comm_); };
  r.restore = [this](const io::safetensors::Metadata& metadata) { restore_generator_states(model_, metadata, comm_); };
  return r;
}

template class DataParallelTraining<float>;
template class DataParallelTraining<double>;

}  // namespace tapegrad::distributed
