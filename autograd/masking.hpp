// Selecting by boolean masks: masked_fill and where, with broadcasting.
#pragma once

#include <xtensor/xarray.hpp>

#include "autograd/tensor.hpp"

namespace tapegrad {

using BoolArray = xt::xarray<bool>;

// x with value wherever mask (broadcast to x's shape) is true; those positions pass no gradient.
template <typename T>
Tensor<T> masked_fill(const Tensor<T>& x, const BoolArray& mask, detail::scalar_t<T> value);

// condition ? a : b elementwise, all three broadcast together (torch.where).
template <typename T>
Tensor<T> where(const BoolArray& condition, const Tensor<T>& a, const Tensor<T>& b);

}  // namespace tapegrad
