/// @file
/// Layer normalization over the trailing dims, with a fused backward.
#pragma once

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// torch.nn.functional.layer_norm: normalizes over the last normalized_shape.size() dims (which must
/// equal normalized_shape) with the biased variance, then scales by weight and adds bias (each
/// undefined or of normalized_shape). The forward keeps only the mean and 1/std of each row (besides
/// x and weight) for a fused backward of x, weight and bias. Throws ShapeError, naming both shapes,
/// when x's trailing dims are not normalized_shape (or it is empty) or weight/bias have another shape.
template <typename T>
Tensor<T> layer_norm(const Tensor<T>& x, const Shape& normalized_shape, const Tensor<T>& weight = {},
                     const Tensor<T>& bias = {}, double eps = 1e-5);

}  // namespace tapegrad
