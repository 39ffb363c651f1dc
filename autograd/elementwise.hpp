/// @file
/// Elementwise ops with full NumPy/PyTorch broadcasting for every binary op, and scalar operands.
#pragma once

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// a + b, a - b, a * b and a / b elementwise, broadcasting the two shapes (torch.add, sub, mul, div).
///@{
template <typename T>
Tensor<T> add(const Tensor<T>& a, const Tensor<T>& b);
template <typename T>
Tensor<T> sub(const Tensor<T>& a, const Tensor<T>& b);
template <typename T>
Tensor<T> mul(const Tensor<T>& a, const Tensor<T>& b);
template <typename T>
Tensor<T> div(const Tensor<T>& a, const Tensor<T>& b);
///@}
/// a ** b elementwise (a > 0 where b's gradient is needed, as d/db a^b = a^b log a).
template <typename T>
Tensor<T> pow(const Tensor<T>& a, const Tensor<T>& b);

/// a + s, a * s, a / s and a ** s with a scalar s.
///@{
template <typename T>
Tensor<T> add(const Tensor<T>& a, detail::scalar_t<T> s);
template <typename T>
Tensor<T> mul(const Tensor<T>& a, detail::scalar_t<T> s);
template <typename T>
Tensor<T> div(const Tensor<T>& a, detail::scalar_t<T> s);
template <typename T>
Tensor<T> pow(const Tensor<T>& a, detail::scalar_t<T> exponent);
///@}
/// s - a and s / a.
///@{
template <typename T>
Tensor<T> rsub(const Tensor<T>& a, detail::scalar_t<T> s);
template <typename T>
Tensor<T> rdiv(const Tensor<T>& a, detail::scalar_t<T> s);
///@}

/// -x, exp, log, sqrt, tanh, sigmoid and relu of every element (torch's functions of those names).
///@{
template <typename T>
Tensor<T> neg(const Tensor<T>& x);
template <typename T>
Tensor<T> exp(const Tensor<T>& x);
template <typename T>
Tensor<T> log(const Tensor<T>& x);
template <typename T>
Tensor<T> sqrt(const Tensor<T>& x);
template <typename T>
Tensor<T> tanh(const Tensor<T>& x);
template <typename T>
Tensor<T> sigmoid(const Tensor<T>& x);
template <typename T>
Tensor<T> relu(const Tensor<T>& x);
///@}

/// torch.nn.functional.gelu: None is x * Phi(x) with the exact erf; Tanh is the tanh approximation.
enum class GeluApproximate { None, Tanh };
/// GELU of every element, exact or approximated by tanh.
template <typename T>
Tensor<T> gelu(const Tensor<T>& x, GeluApproximate approximate = GeluApproximate::None);

/// The arithmetic operators for the functions above: tensor with tensor (broadcasting), -x, and
/// tensor with scalar on either side.
///@{
template <typename T>
Tensor<T> operator+(const Tensor<T>& a, const Tensor<T>& b) {
  return add(a, b);
}
template <typename T>
Tensor<T> operator-(const Tensor<T>& a, const Tensor<T>& b) {
  return sub(a, b);
}
template <typename T>
Tensor<T> operator*(const Tensor<T>& a, const Tensor<T>& b) {
  return mul(a, b);
}
template <typename T>
Tensor<T> operator/(const Tensor<T>& a, const Tensor<T>& b) {
  return div(a, b);
}
template <typename T>
Tensor<T> operator-(const Tensor<T>& x) {
  return neg(x);
}
template <typename T>
Tensor<T> operator+(const Tensor<T>& a, detail::scalar_t<T> s) {
  return add(a, s);
}
template <typename T>
Tensor<T> operator+(detail::scalar_t<T> s, const Tensor<T>& a) {
  return add(a, s);
}
template <typename T>
Tensor<T> operator-(const Tensor<T>& a, detail::scalar_t<T> s) {
  return add(a, -s);
}
template <typename T>
Tensor<T> operator-(detail::scalar_t<T> s, const Tensor<T>& a) {
  return rsub(a, s);
}
template <typename T>
Tensor<T> operator*(const Tensor<T>& a, detail::scalar_t<T> s) {
  return mul(a, s);
}
template <typename T>
Tensor<T> operator*(detail::scalar_t<T> s, const Tensor<T>& a) {
  return mul(a, s);
}
template <typename T>
Tensor<T> operator/(const Tensor<T>& a, detail::scalar_t<T> s) {
  return div(a, s);
}
template <typename T>
Tensor<T> operator/(detail::scalar_t<T> s, const Tensor<T>& a) {
  return rdiv(a, s);
}
///@}

}  // namespace tapegrad
