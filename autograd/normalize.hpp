/// @file
/// Normalizing vectors along a dim: normalize (x / max(norm, eps)) and cosine_similarity, with torch
/// 1.13's guards against zero vectors and the gradients those guards give.
#pragma once

#include <cstdint>

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// torch.nn.functional.normalize: x / max(norm(x, p, dim), eps), the norm taken with keepdim and
/// broadcast back. Built from norm, clamp and div exactly as torch writes it, so it has torch's
/// gradient: at a slice of zeros x / eps with the norm's gradient 0 (docs/gradients.md, "normalize
/// and cosine_similarity"). Throws ShapeError for a bad dim or p < 0.
template <typename T>
Tensor<T> normalize(const Tensor<T>& x, double p = 2, std::int64_t dim = 1, double eps = 1e-12);

/// torch.nn.functional.cosine_similarity along dim, x1 and x2 broadcast to one shape (dim counted in
/// it): sum(x1 x2) / sqrt(max(|x1|^2, eps^2) max(|x2|^2, eps^2)), torch 1.13's formula (it clamps each
/// squared norm at eps^2, not the product of the norms at eps). As in torch the clamps are not
/// differentiated: the gradient for x1 is g (x2 - cos_raw x1) / sqrt(...), with
/// cos_raw = sum(x1 x2) / max(|x1|^2, eps^2), also where a norm is below eps (docs/gradients.md).
/// Throws ShapeError for shapes that do not broadcast or a bad dim.
template <typename T>
Tensor<T> cosine_similarity(const Tensor<T>& x1, const Tensor<T>& x2, std::int64_t dim = 1, double eps = 1e-8);

}  // namespace tapegrad
