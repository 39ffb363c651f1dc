/// @file
/// Reductions over all elements or any set of dims, with keepdim as in torch.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// Sum and mean over every element: a 0-d tensor.
///@{
template <typename T>
Tensor<T> sum(const Tensor<T>& x);
template <typename T>
Tensor<T> mean(const Tensor<T>& x);
///@}
/// Over the listed dims (negative allowed, each at most once; an empty list means every dim, as in
/// torch). A 0-d tensor accepts dim 0 or -1. The mean of no elements is NaN, as in torch.
///@{
template <typename T>
Tensor<T> sum(const Tensor<T>& x, const std::vector<std::int64_t>& dims, bool keepdim = false);
template <typename T>
Tensor<T> mean(const Tensor<T>& x, const std::vector<std::int64_t>& dims, bool keepdim = false);
///@}
/// torch.var with `correction` (1 = unbiased, the default; 0 = population variance).
template <typename T>
Tensor<T> var(const Tensor<T>& x, const std::vector<std::int64_t>& dims, std::int64_t correction = 1,
              bool keepdim = false);
/// One dim given as an integer, as torch accepts (`sum(x, 1)`, `mean(x, -1, true)`, `var(x, 0)`).
template <typename T, typename I, std::enable_if_t<detail::is_dim_v<I>, int> = 0>
Tensor<T> sum(const Tensor<T>& x, I dim, bool keepdim = false) {
  return sum(x, std::vector<std::int64_t>{static_cast<std::int64_t>(dim)}, keepdim);
}
/// mean() over one dim given as a single integer, like torch's x.mean(1).
template <typename T, typename I, std::enable_if_t<detail::is_dim_v<I>, int> = 0>
Tensor<T> mean(const Tensor<T>& x, I dim, bool keepdim = false) {
  return mean(x, std::vector<std::int64_t>{static_cast<std::int64_t>(dim)}, keepdim);
}
/// var() over one dim given as a single integer, like torch's x.var(1).
template <typename T, typename I, std::enable_if_t<detail::is_dim_v<I>, int> = 0>
Tensor<T> var(const Tensor<T>& x, I dim, std::int64_t correction = 1, bool keepdim = false) {
  return var(x, std::vector<std::int64_t>{static_cast<std::int64_t>(dim)}, correction, keepdim);
}
/// torch.logsumexp: log(sum(exp(x))) over the listed dims, as sum's (an empty list means every dim,
/// which torch 1.13 refuses with an internal shape error), computed around each slice's max so that
/// large values do not overflow. As torch 1.13: a slice of all -inf (or an empty one) gives -inf, one
/// holding +inf gives +inf, and the gradient g * exp(x - out) is NaN in a slice of all -inf and at a
/// +inf.
template <typename T>
Tensor<T> logsumexp(const Tensor<T>& x, const std::vector<std::int64_t>& dims, bool keepdim = false);
/// logsumexp() over one dim given as a single integer, like torch's x.logsumexp(1).
template <typename T, typename I, std::enable_if_t<detail::is_dim_v<I>, int> = 0>
Tensor<T> logsumexp(const Tensor<T>& x, I dim, bool keepdim = false) {
  return logsumexp(x, std::vector<std::int64_t>{static_cast<std::int64_t>(dim)}, keepdim);
}
/// torch.max(x, dim).values: the gradient goes to the first arg-max of each slice; NaN counts as the
/// max, as in torch. An empty dim throws.
template <typename T>
Tensor<T> max(const Tensor<T>& x, std::int64_t dim, bool keepdim = false);
/// torch.min(x, dim).values, with max's rules: the gradient goes to the first arg-min of each slice,
/// NaN counts as the min, an empty dim throws.
template <typename T>
Tensor<T> min(const Tensor<T>& x, std::int64_t dim, bool keepdim = false);
/// torch.max(x): over every element (an empty tensor throws). Its gradient is shared equally among all
/// tied maxima, as torch 1.13's max() does (unlike max(x, dim), which picks the first); a NaN is the
/// max if present, and then the NaNs share the gradient.
template <typename T>
Tensor<T> max(const Tensor<T>& x);
/// torch.min(x): over every element, with max(x)'s rules (ties share the gradient, NaN is the min).
template <typename T>
Tensor<T> min(const Tensor<T>& x);
/// The indices of the first maxima along dim (no gradient).
template <typename T>
xt::xarray<std::int64_t> argmax(const Tensor<T>& x, std::int64_t dim, bool keepdim = false);
/// The indices of the first minima along dim (torch.argmin; a NaN counts as the min; no gradient).
template <typename T>
xt::xarray<std::int64_t> argmin(const Tensor<T>& x, std::int64_t dim, bool keepdim = false);

}  // namespace tapegrad
