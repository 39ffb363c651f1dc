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
/// torch.std: the square root of var() with the same arguments. Its gradient is 0 where the result is
/// 0 (a constant slice), as torch 1.13 masks it, rather than 0 / 0. Call it tapegrad::std(x, ...) or
/// x.std(...): after `using namespace tapegrad`, a bare std(...) is ambiguous with namespace std.
template <typename T>
Tensor<T> std(const Tensor<T>& x, const std::vector<std::int64_t>& dims, std::int64_t correction = 1,
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
/// std() over one dim given as a single integer, like torch's x.std(1).
template <typename T, typename I, std::enable_if_t<detail::is_dim_v<I>, int> = 0>
Tensor<T> std(const Tensor<T>& x, I dim, std::int64_t correction = 1, bool keepdim = false) {
  return std(x, std::vector<std::int64_t>{static_cast<std::int64_t>(dim)}, correction, keepdim);
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
/// torch.max(x, dim): the largest value of each slice along dim and its position, as torch's
/// (values, indices) named tuple: `auto [values, indices] = max(x, 1);` or `max(x, 1).values`. The
/// position is the first arg-max, where the gradient of values goes; NaN counts as the max, as in
/// torch. An empty dim throws.
template <typename T>
ValuesIndices<T> max(const Tensor<T>& x, std::int64_t dim, bool keepdim = false);
/// torch.min(x, dim), with max's rules: the first arg-min of each slice, NaN counts as the min, an
/// empty dim throws.
template <typename T>
ValuesIndices<T> min(const Tensor<T>& x, std::int64_t dim, bool keepdim = false);
/// torch.max(x): over every element (an empty tensor throws). Its gradient is shared equally among all
/// tied maxima, as torch 1.13's max() does (unlike max(x, dim), which picks the first); a NaN is the
/// max if present, and then the NaNs share the gradient.
template <typename T>
Tensor<T> max(const Tensor<T>& x);
/// torch.min(x): over every element, with max(x)'s rules (ties share the gradient, NaN is the min).
template <typename T>
Tensor<T> min(const Tensor<T>& x);
/// The indices of the first maxima along dim (torch.argmax; a NaN counts as the max; no gradient).
template <typename T>
xt::xarray<std::int64_t> argmax(const Tensor<T>& x, std::int64_t dim, bool keepdim = false);
/// The indices of the first minima along dim (torch.argmin; a NaN counts as the min; no gradient).
template <typename T>
xt::xarray<std::int64_t> argmin(const Tensor<T>& x, std::int64_t dim, bool keepdim = false);
/// torch.argmax(x) and torch.argmin(x) without a dim: the row-major position of the first maximum
/// (minimum) of all elements, as a 0-d array; an empty tensor throws.
///@{
template <typename T>
xt::xarray<std::int64_t> argmax(const Tensor<T>& x);
template <typename T>
xt::xarray<std::int64_t> argmin(const Tensor<T>& x);
///@}

/// torch.cumsum: out[..., i, ...] = x[..., 0, ...] + ... + x[..., i, ...] along dim, accumulated in
/// double (torch's CPU accumulator for float too); the gradient is the reversed cumulative sum of g.
template <typename T>
Tensor<T> cumsum(const Tensor<T>& x, std::int64_t dim);

/// torch.linalg.vector_norm: (sum |x|^p)^(1/p) over the listed dims (an empty list means every
/// dim); p = inf is max |x| and p = 0 counts the non-zero elements. The gradient follows torch 1.13's
/// norm_backward: 0 over a slice whose norm is 0 for every p (p = 2 included, where x / norm would be
/// 0 / 0); for p = inf it is shared equally among the tied maxima of |x|; for p = 0 it is 0.
/// Deliberate difference: a negative or NaN p throws ShapeError (torch computes a "norm" for p < 0,
/// which is not one, and -inf as min |x|).
template <typename T>
Tensor<T> norm(const Tensor<T>& x, double p = 2, const std::vector<std::int64_t>& dims = {}, bool keepdim = false);
/// norm() over one dim given as a single integer, like torch.linalg.vector_norm(x, p, dim=1).
template <typename T, typename I, std::enable_if_t<detail::is_dim_v<I>, int> = 0>
Tensor<T> norm(const Tensor<T>& x, double p, I dim, bool keepdim = false) {
  return norm(x, p, std::vector<std::int64_t>{static_cast<std::int64_t>(dim)}, keepdim);
}

}  // namespace tapegrad
