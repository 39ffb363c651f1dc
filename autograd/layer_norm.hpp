// Layer normalization over the trailing dims, with a fused backward.
#pragma once

#include "autograd/tensor.hpp"

namespace tapegrad {

// torch.nn.functional.layer_norm: normalizes over the last normalized_shape.size() dims (which must
// equal normalized_shape) with the biased variance, then scales by weight and adds bias (each
// undefined or of normalized_shape).
template <typename T>
Tensor<T> layer_norm(const Tensor<T>& x, const Shape& normalized_shape, const Tensor<T>& weight = {},
                     const Tensor<T>& bias = {}, double eps = 1e-5);

}  // namespace tapegrad
