#include "tapegrad/distributed/data_parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <stdexcept>

#include "tapegrad/io/fnv1a.hpp"
#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::distributed {

namespace {
using Clock = std::chrono::steady_clock;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The first line where `other` differs from `reference`, as "line N: 'x' where rank 0 has 'y'".
std::string first_difference(const std::string& reference, const std::string& other) {
  const auto a = lines_of(reference), b = lines_of(other);
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string mine = i < b.size() ? b[i] : "(nothing)";
    const std::string root = i < a.size() ? a[i] : "(nothing)";
    if (mine != root) return fmt::format("line {}: '{}' where rank 0 has '{}'", i + 1, mine, root);
  }
  return "the same lines in a different encoding";
}
}  // namespace

void verify_same_on_all_ranks(const Communicator& comm, const std::string& what, const std::string& text) {
  io::Fnv1a h;
  h.text(text);
  const auto sums = comm.all_gather(h.value());
  if (std::all_of(sums.begin(), sums.end(), [&](std::uint64_t s) { return s == sums[0]; })) return;
  const auto texts = comm.all_gather(text);
  std::string message = fmt::format("the {} differs between ranks:", what);
  const char* separator = " ";
  for (std::size_t r = 1; r < texts.size(); ++r) {
    if (sums[r] == sums[0]) continue;
    message += fmt::format("{}rank {} (checksum {:016x}, rank 0 {:016x}) has {}", separator, r, sums[r], sums[0],
                           first_difference(texts[0], texts[r]));
    separator = "; ";
  }
  throw std::runtime_error(message);
}

template <typename T>
std::string model_signature(const nn::Module<T>& module) {
  const char* dtype = io::safetensors::dtype_name(io::safetensors::dtype_of<T>());
  std::string text;
  for (const auto& [name, p] : module.named_parameters())
    text += fmt::format("parameter {} {} {}\n", name, dtype, format_shape(p.shape()));
  for (const auto& [name, b] : module.named_buffers())
    text += fmt::format("buffer {} {} {}\n", name, dtype, format_shape(b.shape()));
  return text;
}

template <typename T>
void broadcast_parameters(nn::Module<T>& module, const Communicator& comm) {
  for (auto& p : module.parameters()) comm.broadcast(p.mutable_data().data(), p.numel());
  for (auto& b : module.buffers()) comm.broadcast(b.mutable_data().data(), b.numel());
}

double global_mean(const Communicator& comm, double numerator, double denominator) {
  std::vector<double> v{numerator, denominator};
  comm.all_reduce_sum(v);
  return v[0] / v[1];
}

template <typename T>
std::uint64_t parameter_checksum(const nn::Module<T>& module) {
  io::Fnv1a h;
  for (const auto& p : module.parameters()) h.bytes(p.data().data(), p.numel() * sizeof(T));
  for (const auto& b : module.buffers()) h.bytes(b.data().data(), b.numel() * sizeof(T));
  return h.value();
}

template <typename T>
DistributedDataParallel<T>::DistributedDataParallel(nn::Module<T>& module, const Communicator& comm,
                                                    DataParallelOptions options)
    : module_(module), comm_(comm) {
  if (options.first_bucket_bytes == 0 || options.bucket_bytes == 0) {
    throw std::invalid_argument(
        fmt::format("DistributedDataParallel: bucket sizes must be positive (first {}, then {})",
                    options.first_bucket_bytes, options.bucket_bytes));
  }
  verify_same_on_all_ranks(comm_, "model (parameter and buffer names, dtypes and shapes)", model_signature(module));
  broadcast_parameters(module, comm_);

  // Reverse registration order: roughly the order in which backward completes the gradients.
  auto named = module.named_parameters();
  std::reverse(named.begin(), named.end());
  std::size_t bucket_bytes = 0;
  for (auto& [name, param] : named) {
    if (!param.requires_grad()) continue;
    const std::size_t bytes = param.numel() * sizeof(T);
    const std::size_t cap = buckets_.size() <= 1 ? options.first_bucket_bytes : options.bucket_bytes;
    if (buckets_.empty() || (bucket_bytes > 0 && bucket_bytes + bytes > cap)) {
      buckets_.emplace_back();
      bucket_bytes = 0;
    }
    Bucket& bucket = buckets_.back();
    slots_.push_back(Slot{name, param, buckets_.size() - 1, bucket.buffer.size(), false});
    bucket.slots.push_back(slots_.size() - 1);
    bucket.buffer.resize(bucket.buffer.size() + param.numel());
    bucket_bytes += bytes;
  }
  hooks_ = hook_gradients(slots_, [this](std::size_t i) { on_gradient_ready(i); });
}

template <typename T>
void DistributedDataParallel<T>::copy_into_bucket(Slot& slot) {
  T* dst = buckets_[slot.bucket].buffer.data() + slot.offset;
  if (slot.param.has_grad()) {
    std::copy_n(slot.param.grad().data(), slot.param.numel(), dst);
  } else {
    std::fill_n(dst, slot.param.numel(), T(0));
  }
  slot.ready = true;
  ++buckets_[slot.bucket].ready;
}

template <typename T>
void DistributedDataParallel<T>::on_gradient_ready(std::size_t i) {
  if (!sync_enabled_) return;
  Slot& slot = slots_[i];
  if (slot.ready) {
    throw std::logic_error(fmt::format(
        "DistributedDataParallel: parameter {} got a second gradient before synchronize(); call synchronize() after "
        "each backward, or run the micro-batches before the last inside no_sync()",
        slot.name));
  }
  copy_into_bucket(slot);
  start_ready_buckets(/*in_backward=*/true);
  drive_progress(buckets_, 0, next_bucket_);
}

template <typename T>
void DistributedDataParallel<T>::start(Bucket& bucket, bool in_backward) {
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, bucket.buffer.data(), static_cast<int>(bucket.buffer.size()), mpi_type<T>(),
                           MPI_SUM, comm_.handle(), &bucket.request),
            "MPI_Iallreduce");
  ++(in_backward ? stats_.buckets_started_in_backward : stats_.buckets_started_in_synchronize);
  stats_.bytes_reduced += double(bucket.buffer.size() * sizeof(T));
}

template <typename T>
void DistributedDataParallel<T>::start_ready_buckets(bool in_backward) {
  // In bucket order only: every rank must issue the same collectives in the same order.
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].ready == buckets_[next_bucket_].slots.size()) {
    start(buckets_[next_bucket_], in_backward);
    ++next_bucket_;
  }
}

template <typename T>
void DistributedDataParallel<T>::synchronize() {
  if (!sync_enabled_) {
    throw std::logic_error(
        "DistributedDataParallel::synchronize: called inside no_sync(); leave it for the last "
        "micro-batch's backward");
  }
  // Parameters the pass did not reach: their current gradient (or zeros) still has to join the sum.
  for (auto& slot : slots_)
    if (!slot.ready) copy_into_bucket(slot);
  start_ready_buckets(/*in_backward=*/false);
  const auto wait_start = Clock::now();
  for (auto& b : buckets_) check_mpi(MPI_Wait(&b.request, MPI_STATUS_IGNORE), "MPI_Wait");
  stats_.wait_seconds += std::chrono::duration<double>(Clock::now() - wait_start).count();

  const T scale = T(1) / static_cast<T>(comm_.size());
  for (auto& slot : slots_) {
    Tensor<T>& p = slot.param;
    if (!p.has_grad()) p.set_grad(xt::xarray<T>::from_shape(p.shape()));
    T* g = p.mutable_grad().data();
    const T* src = buckets_[slot.bucket].buffer.data() + slot.offset;
    const std::size_t n = p.numel();
    for (std::size_t k = 0; k < n; ++k) g[k] = src[k] * scale;
    slot.ready = false;
  }
  for (auto& b : buckets_) b.ready = 0;
  next_bucket_ = 0;
  ++stats_.synchronizations;
}

template <typename T>
std::vector<std::vector<std::string>> DistributedDataParallel<T>::bucket_names() const {
  std::vector<std::vector<std::string>> names;
  for (const auto& b : buckets_) {
    names.emplace_back();
    for (std::size_t s : b.slots) names.back().push_back(slots_[s].name);
  }
  return names;
}

template class DistributedDataParallel<float>;
template class DistributedDataParallel<double>;
template std::string model_signature<float>(const nn::Module<float>&);
template std::string model_signature<double>(const nn::Module<double>&);
template void broadcast_parameters<float>(nn::Module<float>&, const Communicator&);
template void broadcast_parameters<double>(nn::Module<double>&, const Communicator&);
template std::uint64_t parameter_checksum<float>(const nn::Module<float>&);
template std::uint64_t parameter_checksum<double>(const nn::Module<double>&);

}  // namespace tapegrad::distributed
