/// @file
/// Fused multi-head attention core: per (batch, head), softmax(Q K^T / sqrt(head_dim) with masks),
/// dropout, times V, in one op with one backward. It works on projections laid out [B, L, H * D]
/// (heads side by side, as the input projection produces them) and writes [B, L, H * D], so the head
/// split and merge need no copies; each (batch, head) is a few BLAS calls on strided slices, and the
/// (batch, head) pairs are split over the threads. nn::MultiheadAttention uses it for bool masks.
#pragma once

#include <cstddef>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/masking.hpp"
#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// Bool masks, true = masked (may not be attended), as nn::MultiheadAttention takes them. Not owned.
struct AttentionBoolMasks {
  const BoolArray* key_padding_mask = nullptr;  ///< [B, S]
  const BoolArray* attn_mask = nullptr;         ///< [L, S] or [B * H, L, S] (batch-major, head-minor)
  bool is_causal = false;                       ///< also mask key j > query i
};

/// q [B, L, E], k and v [B, S, E], E = num_heads * D -> [B, L, E]. Semantics are those of the
/// composed ops in nn::MultiheadAttention: scores scaled by 1 / sqrt(D), masked to -inf; a query
/// with no visible key gets all-zero weights (and no gradient); in training with p > 0 the weights
/// [B, H, L, S] go through dropout(weights, p, true, gen) (the same single draw from gen, the same
/// mask rule, see autograd/dropout.hpp). Throws ShapeError for shapes that do not fit.
template <typename T>
Tensor<T> fused_attention(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v, std::size_t num_heads,
                          const AttentionBoolMasks& masks, double dropout_p, bool training, Generator& gen);

/// The same with q, k and v side by side in one [B, L, 3 E] tensor (self-attention's packed
/// projection): no chunk copies, and one [B, L, 3 E] gradient.
template <typename T>
Tensor<T> fused_self_attention(const Tensor<T>& qkv, std::size_t num_heads, const AttentionBoolMasks& masks,
                               double dropout_p, bool training, Generator& gen);

}  // namespace tapegrad
