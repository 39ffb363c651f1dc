/// @file
/// Elementwise ops with full NumPy/PyTorch broadcasting for every binary op, and scalar operands.
#pragma once

#include <optional>

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
/// The smaller and the larger of a and b elementwise, broadcasting (torch.minimum, torch.maximum). NaN
/// on either side gives NaN. As torch 1.13: on a tie each side gets half the gradient, and where either
/// side is NaN both get all of it (torch masks a side's gradient only where it strictly loses).
///@{
template <typename T>
Tensor<T> minimum(const Tensor<T>& a, const Tensor<T>& b);
template <typename T>
Tensor<T> maximum(const Tensor<T>& a, const Tensor<T>& b);
///@}

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

/// |x|, log(1 + x), sin and cos of every element (torch.abs, log1p, sin, cos). abs passes no gradient
/// at 0 (nor at NaN), as torch's sgn.
///@{
template <typename T>
Tensor<T> abs(const Tensor<T>& x);
template <typename T>
Tensor<T> log1p(const Tensor<T>& x);
template <typename T>
Tensor<T> sin(const Tensor<T>& x);
template <typename T>
Tensor<T> cos(const Tensor<T>& x);
///@}

/// x * sigmoid(x) of every element (torch.nn.functional.silu).
template <typename T>
Tensor<T> silu(const Tensor<T>& x);
/// x where x > 0, else negative_slope * x (torch.nn.functional.leaky_relu); the slope at 0 (and at
/// NaN) is negative_slope, as in torch.
template <typename T>
Tensor<T> leaky_relu(const Tensor<T>& x, detail::scalar_t<T> negative_slope = 0.01);

/// torch.nn.functional.softplus: log(1 + exp(beta x)) / beta, and x itself where beta x > threshold
/// (torch's switch to the linear regime, which keeps exp from overflowing).
template <typename T>
Tensor<T> softplus(const Tensor<T>& x, detail::scalar_t<T> beta = 1, detail::scalar_t<T> threshold = 20);
/// torch.nn.functional.elu: x where x > 0, alpha (exp(x) - 1) elsewhere; the slope at 0 is alpha, as
/// torch's (its backward takes the exp branch for x <= 0).
template <typename T>
Tensor<T> elu(const Tensor<T>& x, detail::scalar_t<T> alpha = 1);

/// torch.clamp: every element limited to [min, max]; an absent bound does not limit. Both absent
/// throws ShapeError. min > max gives max everywhere, as torch. The gradient passes where
/// min <= x <= max (bounds included), not where x is NaN (which stays NaN). A NaN bound makes every
/// element NaN, as torch 1.13 does when both bounds are given (with one bound alone 1.13 returns x
/// unchanged yet gives it no gradient).
template <typename T>
Tensor<T> clamp(const Tensor<T>& x, std::optional<detail::scalar_t<T>> min,
                std::optional<detail::scalar_t<T>> max = std::nullopt);

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
