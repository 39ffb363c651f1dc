/// @file
/// Layer normalization over the trailing dims, with a fused backward; fused with the residual add
/// before it; and RMS normalization (LLaMA's), its mean-free variant.
#pragma once

#include <optional>

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

/// torch.nn.functional.rms_norm (torch 2.4): y = x * rsqrt(mean(x²) + eps) * weight over the last
/// normalized_shape.size() dims, the normalization of LLaMA-style Transformers (no mean subtracted, no
/// bias). eps unset is torch's default, std::numeric_limits<T>::epsilon() (torch.finfo(dtype).eps).
/// Forward and backward are fused: the backward keeps x, weight and one 1/rms per row. Throws
/// ShapeError as layer_norm does, and std::invalid_argument for a negative or NaN eps.
template <typename T>
Tensor<T> rms_norm(const Tensor<T>& x, const Shape& normalized_shape, const Tensor<T>& weight = {},
                   std::optional<double> eps = std::nullopt);

}  // namespace tapegrad
