/// @file
/// Selecting by masks: masked_fill and where by boolean masks, with broadcasting, and tril and triu by
/// the fixed mask of a triangle.
#pragma once

#include <cstdint>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// A mask: true where masked_fill writes, where where() takes its first operand, where a key is padding.
using BoolArray = xt::xarray<bool>;

/// x with value wherever mask is true; those positions pass no gradient. The mask must broadcast to
/// x's shape without enlarging it (stricter than torch's out-of-place masked_fill): the result always
/// has x's shape, and a mask that does not fit throws ShapeError naming both shapes.
template <typename T>
Tensor<T> masked_fill(const Tensor<T>& x, const BoolArray& mask, detail::scalar_t<T> value);

/// condition ? a : b elementwise, all three broadcast together (torch.where); each side's gradient is
/// reduced back to its shape. Call it qualified, tapegrad::where(...): an unqualified call with a
/// BoolArray also finds xt::where by argument-dependent lookup, which is the better match.
template <typename T>
Tensor<T> where(const BoolArray& condition, const Tensor<T>& a, const Tensor<T>& b);

/// torch.tril and torch.triu: x with zeros outside the lower (upper) triangle of its last two dims,
/// which holds element [i, j] where j - i <= diagonal (>= diagonal); diagonal > 0 reaches above the
/// main diagonal, < 0 below it. Zeroed elements pass no gradient. x needs at least 2 dims.
///@{
template <typename T>
Tensor<T> tril(const Tensor<T>& x, std::int64_t diagonal = 0);
template <typename T>
Tensor<T> triu(const Tensor<T>& x, std::int64_t diagonal = 0);
///@}

}  // namespace tapegrad
