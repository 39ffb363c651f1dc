/// @file
/// The activations' per-element values and slopes, shared by the elementwise ops (relu, gelu) and the
/// fused linear_activation. double keeps std::erf, std::exp and std::tanh (gradchecks and the double
/// fixtures compare to 1e-12); float uses the vectorizable fast_erfc_gauss / fast_exp of
/// autograd/vector_math.hpp, branch-free, so that loops over them vectorize (std::erf does not).
#pragma once

#include <cmath>

#include "tapegrad/autograd/vector_math.hpp"

namespace tapegrad::detail {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluCubic = 0.044715;

/// relu(x); NaN propagates (v <= 0 is false for NaN), as in torch.
template <typename T>
T relu_value(T v) {
  return v <= 0 ? T(0) : v;
}
/// relu's backward from its output y: g where y > 0.
template <typename T>
T relu_grad_from_output(T g, T y) {
  return y <= 0 ? T(0) : g;
}

/// GELU, x Phi(x), and its derivative Phi(x) + x phi(x).
///@{
inline double gelu_value(double v) { return 0.5 * v * (1 + std::erf(v * kInvSqrt2)); }
inline double gelu_slope(double v) {
  const double cdf = 0.5 * (1 + std::erf(v * kInvSqrt2));
  const double pdf = kInvSqrt2Pi * std::exp(-0.5 * v * v);
  return cdf + v * pdf;
}
// Phi(x) = erfc(-x / sqrt 2) / 2, which has no cancellation for x << 0 (where 1 + erf(x / sqrt 2) has),
// and phi(x) = exp(-x^2 / 2) / sqrt(2 pi) from the same exponential.
inline float gelu_value(float v) {
  float gauss;
  const float h = 0.5f * fast_erfc_gauss(std::fabs(v) * static_cast<float>(kInvSqrt2), &gauss);
  return v * (v < 0.0f ? h : 1.0f - h);
}
inline float gelu_slope(float v) {
  float gauss;
  const float h = 0.5f * fast_erfc_gauss(std::fabs(v) * static_cast<float>(kInvSqrt2), &gauss);
  return (v < 0.0f ? h : 1.0f - h) + v * (static_cast<float>(kInvSqrt2Pi) * gauss);
}
///@}

/// The tanh approximation 0.5 x (1 + tanh(u)), u = sqrt(2 / pi) (x + 0.044715 x^3), and its derivative.
///@{
inline double gelu_tanh_value(double v) {
  return 0.5 * v * (1 + std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v)));
}
inline double gelu_tanh_slope(double v) {
  const double t = std::tanh(kSqrt2OverPi * (v + kGeluCubic * v * v * v));
  const double dinner = kSqrt2OverPi * (1 + 3 * kGeluCubic * v * v);
  return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * dinner;
}
// In float, (1 + tanh(u)) / 2 = s = 1 / (1 + e) with e = exp(-2 u), which keeps its relative accuracy
// for u << 0; the derivative is s + 2 x s (1 - s) du/dx, with 1 - s = 1 / (1 + 1 / e) (1 - s itself
// cancels when s is near 1; both forms are exact at e = 0 and e = inf).
inline float gelu_tanh_exp(float v) {
  const float u = static_cast<float>(kSqrt2OverPi) * (v + static_cast<float>(kGeluCubic) * v * v * v);
  return fast_exp(-2.0f * u);
}
inline float gelu_tanh_value(float v) { return v / (1.0f + gelu_tanh_exp(v)); }
inline float gelu_tanh_slope(float v) {
  const float e = gelu_tanh_exp(v);
  const float s = 1.0f / (1.0f + e), one_minus_s = 1.0f / (1.0f + 1.0f / e);
  const float dinner = static_cast<float>(kSqrt2OverPi) * (1.0f + static_cast<float>(3 * kGeluCubic) * v * v);
  return s + 2.0f * v * s * one_minus_s * dinner;
}
///@}

/// softplus, log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (torch's linear
/// regime); its slope exp(beta x) / (1 + exp(beta x)), and 1 past the threshold. NaN fails the
/// threshold test and propagates through exp.
///@{
template <typename T>
T softplus_value(T v, T beta, T threshold) {
  const T bx = v * beta;
  // Both sides computed, then selected: a call under a condition keeps the loop from vectorizing.
  const T smooth = fast_log1p(fast_exp(bx)) / beta;
  return bx > threshold ? v : smooth;
}
template <typename T>
T softplus_slope(T v, T beta, T threshold) {
  const T bx = v * beta;
  const T z = fast_exp(bx);
  return bx > threshold ? T(1) : z / (z + 1);
}
///@}

/// ELU: x where x > 0, alpha (exp(x) - 1) elsewhere (with expm1, as torch); its slope 1, or
/// alpha exp(x) where x <= 0.
///@{
template <typename T>
T elu_value(T v, T alpha) {
  return v <= 0 ? alpha * fast_expm1(v) : v;
}
template <typename T>
T elu_slope(T v, T alpha) {
  return v <= 0 ? alpha * fast_exp(v) : T(1);
}
///@}

}  // namespace tapegrad::detail
