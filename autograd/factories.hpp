/// @file
/// torch's factory functions, as free functions: `randn({2, 3}, gen)`, `arange(5)`, `zeros({4})`.
/// The element type is float unless asked for (`randn<double>(...)`), torch's default dtype; each is
/// the Tensor<T> factory of the same meaning (autograd/tensor.hpp). Random ones draw from the
/// Generator passed, as every random function here does, so a seed reproduces them.
#pragma once

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// torch.zeros, torch.ones and torch.full.
///@{
template <typename T = float>
Tensor<T> zeros(const Shape& shape, bool requires_grad = false) {
  return Tensor<T>::zeros(shape, requires_grad);
}
template <typename T = float>
Tensor<T> ones(const Shape& shape, bool requires_grad = false) {
  return Tensor<T>::ones(shape, requires_grad);
}
template <typename T = float>
Tensor<T> full(const Shape& shape, detail::scalar_t<T> value, bool requires_grad = false) {
  return Tensor<T>::full(shape, value, requires_grad);
}
///@}

/// torch.arange(end) and torch.arange(start, end, step): [start, end) in steps of step. Unlike torch,
/// whose arange of integers is int64, the elements are T (float unless asked for).
///@{
template <typename T = float>
Tensor<T> arange(detail::scalar_t<T> end) {
  return Tensor<T>::arange(end);
}
template <typename T = float>
Tensor<T> arange(detail::scalar_t<T> start, detail::scalar_t<T> end, detail::scalar_t<T> step = 1) {
  return Tensor<T>::arange(start, end, step);
}
///@}

/// torch.rand: uniform in [0, 1).
template <typename T = float>
Tensor<T> rand(const Shape& shape, Generator& gen, bool requires_grad = false) {
  return Tensor<T>::uniform(shape, T(0), T(1), gen, requires_grad);
}
/// torch.randn: standard normal.
template <typename T = float>
Tensor<T> randn(const Shape& shape, Generator& gen, bool requires_grad = false) {
  return Tensor<T>::normal(shape, T(0), T(1), gen, requires_grad);
}

}  // namespace tapegrad
