/// @file
/// Layer normalization over the trailing dims, with a fused backward; and fused with the residual add
/// before it.
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

/// layer_norm(x + residual, ...) in one op, the residual connection of a post-LN Transformer block:
/// the sum is formed row by row inside the normalization (no separate pass over memory) and kept for
/// the backward instead of x, whose gradient is computed once and given to x and residual alike. The
/// same values as the composed ops. Throws ShapeError as layer_norm does, and when residual's shape
/// differs from x's (no broadcasting).
template <typename T>
Tensor<T> add_layer_norm(const Tensor<T>& x, const Tensor<T>& residual, const Shape& normalized_shape,
                         const Tensor<T>& weight = {}, const Tensor<T>& bias = {}, double eps = 1e-5);

}  // namespace tapegrad
