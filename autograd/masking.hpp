/// @file
/// Selecting by boolean masks: masked_fill and where, with broadcasting.
#pragma once

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

}  // namespace tapegrad
