// The in-place ops of Tensor (x += y, x.fill_(0), x.index_put_({0}, row)): each computes its result as
// the out-of-place op does, recorded on the tape when torch would record it, and makes it this
// tensor's values, and its history when recorded. Writing the storage directly is the shortcut taken
// when nothing is recorded and no backward holds the old values.
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <type_traits>
#include <xtensor/xbuilder.hpp>

#include "tapegrad/autograd/broadcast.hpp"
#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/indexing.hpp"
#include "tapegrad/autograd/masking.hpp"
#include "tapegrad/autograd/strided_view.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

template <typename T>
template <typename Result, typename Write>
Tensor<T>& Tensor<T>::in_place(const char* op, bool recorded, Result&& result, Write&& write) {
  if (is_grad_enabled() && is_leaf() && requires_grad()) {
    throw std::logic_error(
        fmt::format("{}: a leaf tensor that requires grad (shape {}) cannot be changed in place while grad mode is on, "
                    "as in torch; change it under NoGradGuard (as an optimizer step does), or change a clone()",
                    op, format_shape(shape())));
  }
  if constexpr (!std::is_same_v<std::decay_t<Write>, std::nullptr_t>) {
    if (!recorded && !storage_saved()) {
      write(*impl_->value);
      return *this;
    }
  }
  Tensor out = result();
  if (out.shape() != shape()) {
    throw ShapeError(fmt::format("{}: the result would have shape {}, but an in-place op keeps the tensor's shape {}",
                                 op, format_shape(out.shape()), format_shape(shape())));
  }
  Impl& self = *impl_;
  Impl& theirs = *out.impl_;
  if (storage_saved()) {
    // A backward not yet run reads the old values (this op's own may, as x *= y saves x for y's
    // gradient): they stay with it, and this tensor takes the new storage.
    self.value = theirs.value;
    self.sharers = nullptr;
  } else if (theirs.value.use_count() == 1) {
    *self.value = std::move(*theirs.value);
  } else {  // the op's backward saved its output (division does): copy it
    std::copy(theirs.value->data(), theirs.value->data() + theirs.value->size(), self.value->data());
  }
  if (!out.is_leaf()) self.meta = theirs.meta;  // recorded: this tensor is now the op's output
  return *this;
}

template <typename T>
Tensor<T>& Tensor<T>::operator+=(const Tensor& other) & {
  return in_place(
      "add_", should_record(*this, other), [&] { return *this + other; }, nullptr);
}
template <typename T>
Tensor<T>& Tensor<T>::operator-=(const Tensor& other) & {
  return in_place(
      "sub_", should_record(*this, other), [&] { return *this - other; }, nullptr);
}
template <typename T>
Tensor<T>& Tensor<T>::operator*=(const Tensor& other) & {
  return in_place(
      "mul_", should_record(*this, other), [&] { return *this * other; }, nullptr);
}
template <typename T>
Tensor<T>& Tensor<T>::operator/=(const Tensor& other) & {
  return in_place(
      "div_", should_record(*this, other), [&] { return *this / other; }, nullptr);
}
template <typename T>
Tensor<T>& Tensor<T>::operator+=(T value) & {
  return in_place(
      "add_", should_record(*this), [&] { return *this + value; }, nullptr);
}
template <typename T>
Tensor<T>& Tensor<T>::operator-=(T value) & {
  return in_place(
      "sub_", should_record(*this), [&] { return *this - value; }, nullptr);
}
template <typename T>
Tensor<T>& Tensor<T>::operator*=(T value) & {
  return in_place(
      "mul_", should_record(*this), [&] { return *this * value; }, nullptr);
}
template <typename T>
Tensor<T>& Tensor<T>::operator/=(T value) & {
  return in_place(
      "div_", should_record(*this), [&] { return *this / value; }, nullptr);
}

template <typename T>
Tensor<T>& Tensor<T>::fill_(T value) & {
  const auto result = [&] {
    Tensor out = full(shape(), value);
    // As torch's FillBackward: the former values get a zero gradient.
    if (should_record(*this))
      record(out, "fill", {*this}, [shape = shape()](const xt::xarray<T>&, GradInputs<T>& in) {
        in.accumulate(0, xt::xarray<T>(xt::zeros<T>(shape)));
      });
    return out;
  };
  return in_place("fill_", should_record(*this), result,
                  [value](xt::xarray<T>& v) { std::fill(v.data(), v.data() + v.size(), value); });
}
template <typename T>
Tensor<T>& Tensor<T>::zero_() & {
  return fill_(T(0));
}

template <typename T>
Tensor<T>& Tensor<T>::copy_(const Tensor& src) & {
  const auto result = [&] {
    xt::xarray<T> value = xt::xarray<T>::from_shape(shape());
    detail::put_view("copy_", value, whole(shape()), src.data());
    Tensor out(std::move(value));
    // As torch's CopyBackwards: src gets the gradient summed over the broadcast, the former values 0.
    if (should_record(*this, src))
      record(out, "copy", {*this, src},
             [shape = shape(), src_shape = src.shape()](const xt::xarray<T>& g, GradInputs<T>& in) {
               if (in.needs(0)) in.accumulate(0, xt::xarray<T>(xt::zeros<T>(shape)));
               if (in.needs(1)) in.accumulate(1, unbroadcast(xt::xarray<T>(g), src_shape));
             });
    return out;
  };
  return in_place("copy_", should_record(*this, src), result,
                  [&](xt::xarray<T>& v) { detail::put_view("copy_", v, whole(shape()), src.data()); });
}

template <typename T>
Tensor<T>& Tensor<T>::masked_fill_(const xt::xarray<bool>& mask, T value) & {
  return in_place(
      "masked_fill_", should_record(*this), [&] { return tapegrad::masked_fill(*this, mask, value); }, nullptr);
}

template <typename T>
Tensor<T>& Tensor<T>::index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values) & {
  // values may be this tensor's own storage (x.index_put_({...}, x)): it then has x's shape, so the
  // part is all of x in order, and the copy reads each element before writing it.
  return in_place(
      "index_put_", should_record(*this, values), [&] { return tapegrad::index_put(*this, indices, values); },
      [&](xt::xarray<T>& v) {
        detail::put_view("index_put_", v, detail::index_view("index_put_", shape(), indices), values.data());
      });
}
template <typename T>
Tensor<T>& Tensor<T>::index_put_(const std::vector<indexing::TensorIndex>& indices, T value) & {
  return index_put_(indices, Tensor::scalar(value));
}

// tensor.cpp instantiates the class (and with it only the members it defines), so each member defined
// here is instantiated here, for float and double.
#define TAPEGRAD_IN_PLACE(T)                                                                               \
  template Tensor<T>& Tensor<T>::operator+=(const Tensor<T>&)&;                                            \
  template Tensor<T>& Tensor<T>::operator-=(const Tensor<T>&)&;                                            \
  template Tensor<T>& Tensor<T>::operator*=(const Tensor<T>&)&;                                            \
  template Tensor<T>& Tensor<T>::operator/=(const Tensor<T>&)&;                                            \
  template Tensor<T>& Tensor<T>::operator+=(T)&;                                                           \
  template Tensor<T>& Tensor<T>::operator-=(T)&;                                                           \
  template Tensor<T>& Tensor<T>::operator*=(T)&;                                                           \
  template Tensor<T>& Tensor<T>::operator/=(T)&;                                                           \
  template Tensor<T>& Tensor<T>::fill_(T)&;                                                                \
  template Tensor<T>& Tensor<T>::zero_()&;                                                                 \
  template Tensor<T>& Tensor<T>::copy_(const Tensor<T>&)&;                                                 \
  template Tensor<T>& Tensor<T>::masked_fill_(const xt::xarray<bool>&, T)&;                                \
  template Tensor<T>& Tensor<T>::index_put_(const std::vector<indexing::TensorIndex>&, const Tensor<T>&)&; \
  template Tensor<T>& Tensor<T>::index_put_(const std::vector<indexing::TensorIndex>&, T)&;
TAPEGRAD_IN_PLACE(float)
TAPEGRAD_IN_PLACE(double)
#undef TAPEGRAD_IN_PLACE

}  // namespace tapegrad
