/// @file
/// Rotary position embeddings (RoPE, Su et al. 2021) in the "rotate half" layout of GPT-NeoX and
/// LLaMA, with a fused backward.
#pragma once

#include <cstddef>
#include <utility>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// The cos and sin tables of rotary_embedding, each [positions, head_dim / 2]: entry (p, i) is
/// cos (or sin) of p * base^(-2i / head_dim). Computed in double and rounded to T, so that a far
/// position's angle keeps its precision in float too. Throws std::invalid_argument for an odd or zero
/// head_dim or a base that is not > 0, naming the value.
template <typename T>
std::pair<xt::xarray<T>, xt::xarray<T>> rotary_tables(std::size_t head_dim, std::size_t positions,
                                                      double base = 10000.0);

/// Rotates x [batch, heads, length, head_dim] (a query or key) by its positions, offset to
/// offset + length - 1 (offset: the positions already in a key/value cache). With h = head_dim / 2,
/// c = cos[p, j] and s = sin[p, j], element j pairs with j + h, as Hugging Face's
/// `x * cos + rotate_half(x) * sin`:
///   y[j] = x[j] c - x[j + h] s,   y[j + h] = x[j + h] c + x[j] s   (j < h).
/// The tables (rotary_tables) are constants: no gradient flows to them, and tables that require grad
/// are refused. The backward is the inverse rotation of the gradient, recomputed from the tables
/// (nothing of x is kept). Throws ShapeError naming the shapes for x not 4-D, an odd head_dim or tables
/// not [positions, head_dim / 2], and naming the positions when offset + length goes past the tables.
template <typename T>
Tensor<T> rotary_embedding(const Tensor<T>& x, const Tensor<T>& cos, const Tensor<T>& sin, std::size_t offset = 0);

}  // namespace tapegrad
