#include "tapegrad/distributed/trainer.hpp"

#include "tapegrad/distributed/checkpoint.hpp"

namespace tapegrad::distributed {

template <typename T>
DataParallelTraining<T>::DataParallelTraining(nn::Module<T>& model, const Communicator& comm,
                                              DataParallelOptions options)
    : model_(model), comm_(comm) {
  ddp_ = std::make_unique<DistributedDataParallel<T>>(model, comm, options);
  split_generators(model, comm);
}

template <typename T>
train::Replicas DataParallelTraining<T>::replicas() {
  train::Replicas r;
  r.rank = comm_.rank();
  r.size = comm_.size();
  r.synchronize_gradients = [this] { ddp_->synchronize(); };
  r.no_sync = [this] {
    return std::shared_ptr<void>(std::make_shared<typename DistributedDataParallel<T>::NoSync>(*ddp_));
  };
  r.all_reduce_sum = [this](std::vector<double>& values) { comm_.all_reduce_sum(values); };
  r.checkpoint_metadata = [this] { return gather_generator_states(model_, comm_); };
  r.restore = [this](const io::safetensors::Metadata& metadata) { restore_generator_states(model_, metadata, comm_); };
  return r;
}

template class DataParallelTraining<float>;
template class DataParallelTraining<double>;

}  // namespace tapegrad::distributed
