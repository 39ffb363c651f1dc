#include "tapegrad/distributed/sharded_gradients.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <stdexcept>

namespace tapegrad::distributed {

template <typename T>
ShardedGradients<T>::ShardedGradients(std::vector<Tensor<T>> params, std::vector<int> owners, const Communicator& comm,
                                      ShardedGradientOptions options)
    : comm_(comm), options_(options) {
  if (params.size() != owners.size()) {
    throw std::invalid_argument(
        fmt::format("ShardedGradients: {} parameters but {} owners", params.size(), owners.size()));
  }
  if (options.first_bucket_bytes == 0 || options.bucket_bytes == 0 || options.max_in_flight == 0) {
    throw std::invalid_argument(fmt::format(
        "ShardedGradients: bucket sizes and max_in_flight must be positive (first {}, then {}, {} in flight)",
        options.first_bucket_bytes, options.bucket_bytes, options.max_in_flight));
  }
  std::size_t bucket_bytes = 0;
  for (std::size_t k = params.size(); k-- > 0;) {
    Tensor<T>& param = params[k];
    if (!param.requires_grad()) continue;
    if (owners[k] < 0 || owners[k] >= comm_.size()) {
      throw std::invalid_argument(
          fmt::format("ShardedGradients: parameter {} has owner {}, not a rank of {}", k, owners[k], comm_.size()));
    }
    if (param.numel() > static_cast<std::size_t>(INT_MAX)) {
      throw std::invalid_argument(
          fmt::format("ShardedGradients: parameter {} has {} elements, more than one MPI message holds ({})", k,
                      param.numel(), INT_MAX));
    }
    const std::size_t bytes = param.numel() * sizeof(T);
    const std::size_t cap = buckets_.size() <= 1 ? options.first_bucket_bytes : options.bucket_bytes;
    if (buckets_.empty() || buckets_.back().owner != owners[k] || bytes >= cap || buckets_.back().in_place ||
        (bucket_bytes > 0 && bucket_bytes + bytes > cap) ||
        buckets_.back().numel + param.numel() > static_cast<std::size_t>(INT_MAX)) {
      buckets_.emplace_back();
      buckets_.back().owner = owners[k];
      buckets_.back().in_place = bytes >= cap;
      bucket_bytes = 0;
    }
    Bucket& bucket = buckets_.back();
    slots_.push_back(Slot{param, buckets_.size() - 1, bucket.numel, false});
    bucket.slots.push_back(slots_.size() - 1);
    bucket.numel += param.numel();
    bucket_bytes += bytes;
  }
  hooks_ = hook_gradients(slots_, [this](std::size_t i) { on_gradient_ready(i); });
}

template <typename T>
std::size_t ShardedGradients<T>::buffer_bytes() const {
  std::size_t bytes = 0;
  for (const auto& b : buckets_) bytes += b.buffer.capacity() * sizeof(T);
  return bytes;
}

template <typename T>
void ShardedGradients<T>::take_gradient(Slot& slot) {
  Bucket& bucket = buckets_[slot.bucket];
  Tensor<T>& p = slot.param;
  if (bucket.in_place) {
    if (!p.has_grad()) p.set_grad(xt::xarray<T>(xt::zeros<T>(p.shape())));
  } else {
    if (bucket.buffer.empty()) {
      bucket.buffer.resize(bucket.numel);
      stats_.peak_buffer_bytes = std::max(stats_.peak_buffer_bytes, buffer_bytes());
    }
    T* dst = bucket.buffer.data() + slot.offset;
    if (p.has_grad()) {
      std::copy_n(p.grad().data(), p.numel(), dst);
    } else {
      std::fill_n(dst, p.numel(), T(0));
    }
    p.zero_grad();  // the bucket holds it now: one copy per rank, not two
  }
  slot.ready = true;
  ++bucket.ready;
}

template <typename T>
void ShardedGradients<T>::on_gradient_ready(std::size_t i) {
  if (!sync_enabled_) return;
  Slot& slot = slots_[i];
  if (slot.ready) {
    throw std::logic_error(
        "ShardedGradients: a parameter got a second gradient before synchronize(); call synchronize() after each "
        "backward, or run the micro-batches before the last inside no_sync()");
  }
  take_gradient(slot);
  start_ready_buckets(/*in_backward=*/true);
  drive_progress(buckets_, next_finish_, next_start_);
}

template <typename T>
void ShardedGradients<T>::start_ready_buckets(bool in_backward) {
  // In bucket order only: every rank must issue the same collectives in the same order.
  while (next_start_ < buckets_.size() && buckets_[next_start_].ready == buckets_[next_start_].slots.size()) {
    while (next_start_ - next_finish_ >= options_.max_in_flight) finish_oldest();
    Bucket& b = buckets_[next_start_];
    T* data = b.in_place ? slots_[b.slots[0]].param.mutable_grad().data() : b.buffer.data();
    const bool root = comm_.rank() == b.owner;
    check_mpi(MPI_Ireduce(root ? MPI_IN_PLACE : data, root ? data : nullptr, static_cast<int>(b.numel), mpi_type<T>(),
                          MPI_SUM, b.owner, comm_.handle(), &b.request),
              "MPI_Ireduce");
    ++(in_backward ? stats_.buckets_started_in_backward : stats_.buckets_started_in_synchronize);
    stats_.bytes_reduced += double(b.numel * sizeof(T));
    ++next_start_;
  }
}

template <typename T>
void ShardedGradients<T>::finish(Bucket& b) {
  check_mpi(MPI_Wait(&b.request, MPI_STATUS_IGNORE), "MPI_Wait");
  const bool owner = comm_.rank() == b.owner;
  const T scale = T(1) / static_cast<T>(comm_.size());
  for (std::size_t s : b.slots) {
    Tensor<T>& p = slots_[s].param;
    if (!owner) {
      if (b.in_place) p.zero_grad();
      continue;
    }
    if (!p.has_grad()) p.set_grad(xt::xarray<T>::from_shape(p.shape()));
    T* g = p.mutable_grad().data();
    const T* src = b.in_place ? g : b.buffer.data() + slots_[s].offset;
    const std::size_t n = p.numel();
    for (std::size_t k = 0; k < n; ++k) g[k] = src[k] * scale;
  }
  std::vector<T>().swap(b.buffer);
}

template <typename T>
void ShardedGradients<T>::finish_oldest() {
  finish(buckets_[next_finish_]);
  ++next_finish_;
}

template <typename T>
void ShardedGradients<T>::synchronize() {
  if (!sync_enabled_) {
    throw std::logic_error(
        "ShardedGradients::synchronize: called inside no_sync(); leave it for the last micro-batch's backward");
  }
  // Parameters the pass did not reach: their current gradient (or zeros) still has to join the sum.
  for (auto& slot : slots_)
    if (!slot.ready) take_gradient(slot);
  start_ready_buckets(/*in_backward=*/false);
  while (next_finish_ < next_start_) finish_oldest();
  for (auto& slot : slots_) slot.ready = false;
  for (auto& b : buckets_) b.ready = 0;
  next_start_ = next_finish_ = 0;
  ++stats_.synchronizations;
}

template class ShardedGradients<float>;
template class ShardedGradients<double>;

}  // namespace tapegrad::distributed
