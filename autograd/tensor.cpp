#include "tapegrad/autograd/tensor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "tapegrad/autograd/tape.hpp"

namespace tapegrad {

namespace {
// Uninitialized storage of a shape, refused (ShapeError) when its element count overflows: xtensor
// would otherwise allocate the wrapped-around count under the full shape.
template <typename T>
xt::xarray<T> uninitialized(const Shape& shape) {
  numel(shape);
  return xt::xarray<T>::from_shape(shape);
}

template <typename T>
xt::xarray<T> filled(const Shape& shape, T value) {
  xt::xarray<T> a = uninitialized<T>(shape);
  std::fill(a.begin(), a.end(), value);
  return a;
}
}  // namespace

namespace detail {
void throw_item_range(double value, std::size_t bits, bool integer) {
  throw std::range_error(fmt::format("item: {} does not fit in the {}-bit {} type asked for", value, bits,
                                     integer ? "integer" : "floating-point"));
}
}  // namespace detail

template <typename T>
Tensor<T>::Tensor(xt::xarray<T> value, bool requires_grad) : impl_(std::make_shared<Impl>()) {
  impl_->value = std::make_shared<xt::xarray<T>>(std::move(value));
  impl_->meta = std::make_shared<AutogradMeta<T>>();
  impl_->meta->shape.assign(impl_->value->shape().begin(), impl_->value->shape().end());
  impl_->meta->requires_grad = requires_grad;
}

template <typename T>
Tensor<T> Tensor<T>::zeros(const Shape& shape, bool requires_grad) {
  return Tensor(filled<T>(shape, T(0)), requires_grad);
}
template <typename T>
Tensor<T> Tensor<T>::ones(const Shape& shape, bool requires_grad) {
  return Tensor(filled<T>(shape, T(1)), requires_grad);
}
template <typename T>
Tensor<T> Tensor<T>::full(const Shape& shape, T value, bool requires_grad) {
  return Tensor(filled<T>(shape, value), requires_grad);
}
template <typename T>
Tensor<T> Tensor<T>::arange(T start, T end, T step) {
  if (!std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step)) {
    throw ShapeError(fmt::format("arange: start {}, end {} and step {} must be finite", start, end, step));
  }
  if (step == T(0)) throw ShapeError(fmt::format("arange: step must be nonzero (start {}, end {})", start, end));
  if ((step > 0 && start > end) || (step < 0 && start < end)) {
    throw ShapeError(fmt::format("arange: the range [{}, {}) cannot be walked with step {}", start, end, step));
  }
  const double count = std::ceil((static_cast<double>(end) - start) / step);
  // No machine holds 2^60 elements; the bound also keeps the conversion to std::size_t defined.
  if (!(count < 0x1p60)) {
    throw ShapeError(fmt::format("arange: [{}, {}) with step {} has {} elements, too many", start, end, step, count));
  }
  const auto n = static_cast<std::size_t>(count);
  xt::xarray<T> a = uninitialized<T>({n});
  for (std::size_t i = 0; i < n; ++i) a(i) = static_cast<T>(start + static_cast<double>(i) * step);
  return Tensor(std::move(a));
}
template <typename T>
Tensor<T> Tensor<T>::from_vector(const std::vector<T>& values, const Shape& shape, bool requires_grad) {
  if (values.size() != tapegrad::numel(shape)) {
    throw ShapeError(fmt::format("from_vector: {} values cannot fill shape {} ({} elements)", values.size(),
                                 format_shape(shape), tapegrad::numel(shape)));
  }
  xt::xarray<T> a = uninitialized<T>(shape);
  std::copy(values.begin(), values.end(), a.begin());
  return Tensor(std::move(a), requires_grad);
}
template <typename T>
Tensor<T> Tensor<T>::scalar(T value, bool requires_grad) {
  return Tensor(filled<T>(Shape{}, value), requires_grad);
}
template <typename T>
Tensor<T> Tensor<T>::uniform(const Shape& shape, T low, T high, Generator& gen, bool requires_grad) {
  if (!(low <= high)) throw ShapeError(fmt::format("uniform: expects low <= high, got low {} and high {}", low, high));
  // As torch: finite bounds whose distance T can hold, or every draw would be NaN or infinite.
  if (!std::isfinite(low) || !std::isfinite(high) ||
      static_cast<double>(high) - low > static_cast<double>(std::numeric_limits<T>::max())) {
    throw ShapeError(fmt::format("uniform: expects finite low and high with high - low <= {}, got low {} and high {}",
                                 std::numeric_limits<T>::max(), low, high));
  }
  xt::xarray<T> a = uninitialized<T>(shape);
  for (auto& v : a) {
    v = static_cast<T>(low + (static_cast<double>(high) - low) * gen.uniform());
    // Rounding to T (float) can land on high itself; keep the range half-open.
    if (v >= high && high > low) v = std::nextafter(high, low);
  }
  return Tensor(std::move(a), requires_grad);
}
template <typename T>
Tensor<T> Tensor<T>::normal(const Shape& shape, T mean, T stddev, Generator& gen, bool requires_grad) {
  if (!(stddev >= 0)) throw ShapeError(fmt::format("normal: expects stddev >= 0, got {}", stddev));
  xt::xarray<T> a = uninitialized<T>(shape);
  for (auto& v : a) v = static_cast<T>(mean + static_cast<double>(stddev) * gen.normal());
  return Tensor(std::move(a), requires_grad);
}

template <typename T>
const typename Tensor<T>::Impl& Tensor<T>::impl() const {
  if (!impl_) throw std::logic_error("tapegrad: use of an undefined Tensor");
  return *impl_;
}

template <typename T>
bool Tensor<T>::storage_saved() const {
  const Impl& i = impl();
  return i.value.use_count() > (i.sharers ? i.sharers.use_count() : 1);
}

template <typename T>
const xt::xarray<T>& Tensor<T>::data() const {
  return *impl().value;
}
template <typename T>
xt::xarray<T>& Tensor<T>::mutable_data() {
  return *impl().value;
}
template <typename T>
std::shared_ptr<const xt::xarray<T>> Tensor<T>::saved() const {
  return impl().value;
}
template <typename T>
const Shape& Tensor<T>::shape() const {
  return impl().meta->shape;
}
template <typename T>
std::size_t Tensor<T>::size(std::int64_t d) const {
  return shape()[normalize_dim("size", d, dim())];
}
template <typename T>
std::size_t Tensor<T>::numel() const {
  return data().size();
}
template <typename T>
T Tensor<T>::item() const {
  if (numel() != 1) {
    throw ShapeError(
        fmt::format("item: only a one-element tensor has an item, this one has shape {}", format_shape(shape())));
  }
  return *data().data();
}
template <typename T>
std::vector<T> Tensor<T>::to_vector() const {
  return std::vector<T>(data().begin(), data().end());
}

template <typename T>
bool Tensor<T>::requires_grad() const {
  return impl().meta->requires_grad;
}
template <typename T>
Tensor<T>& Tensor<T>::requires_grad_(bool requires) {
  if (!is_leaf() && !requires) {
    throw std::logic_error(fmt::format(
        "requires_grad_: cannot turn off requires_grad of a non-leaf (output of {}); use detach()", grad_fn_name()));
  }
  impl().meta->requires_grad = requires;
  return *this;
}
template <typename T>
bool Tensor<T>::is_leaf() const {
  return impl().meta->grad_fn == nullptr;
}
template <typename T>
std::string Tensor<T>::grad_fn_name() const {
  const auto& fn = impl().meta->grad_fn;
  return fn ? fn->name : "";
}

template <typename T>
bool Tensor<T>::has_grad() const {
  return impl().meta->has_grad;
}
template <typename T>
const xt::xarray<T>& Tensor<T>::grad() const {
  const auto& meta = *impl().meta;
  if (!meta.has_grad) {
    throw std::logic_error(
        is_leaf() ? (meta.requires_grad ? "grad: this tensor has no gradient yet; call backward() first"
                                        : "grad: this tensor does not require grad, so it has no gradient")
                  : "grad: a non-leaf tensor keeps its gradient only if retain_grad() was called before backward()");
  }
  return meta.grad;
}
template <typename T>
xt::xarray<T>& Tensor<T>::mutable_grad() {
  return const_cast<xt::xarray<T>&>(static_cast<const Tensor&>(*this).grad());
}
template <typename T>
void Tensor<T>::set_grad(xt::xarray<T> grad) {
  auto& meta = *impl().meta;
  if (!std::equal(grad.shape().begin(), grad.shape().end(), meta.shape.begin(), meta.shape.end())) {
    Shape gs(grad.shape().begin(), grad.shape().end());
    throw ShapeError(fmt::format("set_grad: gradient of shape {} for a tensor of shape {}", format_shape(gs),
                                 format_shape(meta.shape)));
  }
  meta.grad = std::move(grad);
  meta.has_grad = true;
}
template <typename T>
void Tensor<T>::zero_grad() {
  auto& meta = *impl().meta;
  meta.grad = xt::xarray<T>();
  meta.has_grad = false;
}
template <typename T>
void Tensor<T>::retain_grad() {
  if (!requires_grad()) throw std::logic_error("retain_grad: the tensor does not require grad");
  impl().meta->retains_grad = true;
}
template <typename T>
bool Tensor<T>::retains_grad() const {
  return impl().meta->retains_grad;
}

template <typename T>
RemovableHandle Tensor<T>::register_post_accumulate_grad_hook(std::function<void(Tensor&)> hook) {
  if (!is_leaf()) {
    throw std::logic_error(
        fmt::format("register_post_accumulate_grad_hook: post accumulate grad hooks cannot be registered on a non-leaf "
                    "tensor (output of {})",
                    grad_fn_name()));
  }
  if (!requires_grad()) {
    throw std::logic_error(
        "register_post_accumulate_grad_hook: cannot register a hook on a tensor that doesn't require gradient");
  }
  if (!hook) throw std::invalid_argument("register_post_accumulate_grad_hook: the hook is empty");
  static std::atomic<std::uint64_t> next_id{0};
  const std::uint64_t id = next_id.fetch_add(1, std::memory_order_relaxed);
  // The meta outlives no handle to it but the tape's; holding the Impl weakly avoids a cycle
  // Impl -> meta -> hook -> Impl that would keep the tensor alive forever.
  std::weak_ptr<Impl> weak = impl_;
  impl().meta->post_accumulate_grad_hooks.emplace_back(id, [weak, hook = std::move(hook)] {
    if (auto impl = weak.lock()) {
      Tensor self;
      self.impl_ = std::move(impl);
      hook(self);
    }
  });
  std::weak_ptr<AutogradMeta<T>> weak_meta = impl().meta;
  return RemovableHandle([weak_meta, id] {
    if (auto meta = weak_meta.lock()) {
      auto& hooks = meta->post_accumulate_grad_hooks;
      hooks.erase(std::remove_if(hooks.begin(), hooks.end(), [id](const auto& h) { return h.first == id; }),
                  hooks.end());
    }
  });
}

template <typename T>
Tensor<T> Tensor<T>::detach() const {
  Tensor out;
  out.impl_ = std::make_shared<Impl>();
  out.impl_->value = impl().value;  // shared, like torch.detach()
  // The first detach() gives the storage its token of sharers; atomically, as detach() is const and
  // two threads may detach one tensor at once.
  std::shared_ptr<const bool> sharers = std::atomic_load(&impl_->sharers);
  if (!sharers) {
    auto fresh = std::make_shared<const bool>(true);
    if (std::atomic_compare_exchange_strong(&impl_->sharers, &sharers, fresh)) sharers = std::move(fresh);
  }
  out.impl_->sharers = std::move(sharers);
  out.impl_->meta = std::make_shared<AutogradMeta<T>>();
  out.impl_->meta->shape = shape();
  return out;
}

template <typename T>
void Tensor<T>::backward(bool retain_graph) const {
  if (numel() != 1) {
    throw std::invalid_argument(
        fmt::format("backward: the implicit gradient needs a one-element output, this one has shape {}; "
                    "pass a gradient of that shape",
                    format_shape(shape())));
  }
  run_backward(meta(), xt::xarray<T>(xt::ones<T>(shape())), retain_graph);
}
template <typename T>
void Tensor<T>::backward(const xt::xarray<T>& gradient, bool retain_graph) const {
  if (!std::equal(gradient.shape().begin(), gradient.shape().end(), shape().begin(), shape().end())) {
    Shape gs(gradient.shape().begin(), gradient.shape().end());
    throw ShapeError(fmt::format("backward: gradient of shape {} for an output of shape {}", format_shape(gs),
                                 format_shape(shape())));
  }
  run_backward(meta(), gradient, retain_graph);
}

template <typename T>
const std::shared_ptr<AutogradMeta<T>>& Tensor<T>::meta() const {
  return impl().meta;
}

template class Tensor<float>;
template class Tensor<double>;

}  // namespace tapegrad
