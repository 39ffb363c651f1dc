/// @file
/// scaled_dot_product_attention (torch.nn.functional.scaled_dot_product_attention): softmax(q k^T *
/// scale + masks) v per (batch, head), as one op with one backward, computed by a blocked kernel with
/// an online softmax (the FlashAttention-2 algorithm): no [L, S] buffer per (batch, head) beyond one
/// block, and only each query's log-sum-exp is kept for the backward.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <utility>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/masking.hpp"
#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// The masks of an attention call; any combination may be given (none by default). Bool masks mark
/// what may NOT be attended (true = masked, nn.MultiheadAttention's convention; torch's functional
/// scaled_dot_product_attention takes the complement, true = may attend). Float masks are added to
/// the scaled scores (-inf masks). attn_mask / attn_bias are [L, S] (shared by every batch and head)
/// or [B, H, L, S] (also accepted as [B * H, L, S], batch-major); key_padding_mask / key_padding_bias
/// are [B, S] (one row of keys per batch). Masks are constants: no gradient flows into them.
template <typename T>
struct AttentionMasks {
  std::shared_ptr<const BoolArray> attn_mask;
  std::shared_ptr<const xt::xarray<T>> attn_bias;
  std::shared_ptr<const BoolArray> key_padding_mask;
  std::shared_ptr<const xt::xarray<T>> key_padding_bias;
};

/// q [B, H, L, D], k [B, H, S, D], v [B, H, S, Dv] (or 3-d [N, L, D], ... with H = 1) ->
/// (output [B, H, L, Dv], weights [B, H, L, S] or an undefined tensor when !need_weights).
///
/// scale defaults to 1 / sqrt(D). is_causal masks key j > query i (top-left aligned, as torch, also
/// when L != S), on top of the masks given. With dropout_p > 0 the attention weights go through
/// dropout: one gen->next_u64() per call seeds the counter-based rule of autograd/dropout.hpp on the
/// [B, H, L, S] weights (the mask is recomputed in the backward, never stored); gen is required then.
/// As torch's functional form, dropout is applied whenever dropout_p > 0: pass 0 in eval.
///
/// Fully masked queries (every key masked, or -inf): torch yields NaN. Here such a query gets
/// all-zero weights, a zero output and no gradient, so one fully padded sequence leaves the rest of
/// a batch untouched. Every other query is exactly as in torch.
///
/// The returned weights are those applied to v (after dropout), and are differentiable; computing
/// them costs an [B, H, L, S] tensor, which training without need_weights never pays. Throws
/// ShapeError naming the shapes when they do not fit, or dropout_p outside [0, 1]
/// (1 drops every weight: the output is zero, as torch's).
template <typename T>
std::pair<Tensor<T>, Tensor<T>> scaled_dot_product_attention(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                                                             const AttentionMasks<T>& masks = {},
                                                             double dropout_p = 0.0, bool is_causal = false,
                                                             std::optional<double> scale = std::nullopt,
                                                             bool need_weights = false, Generator* gen = nullptr);

/// The same op on projections with the heads side by side, as a Linear produces them: q [B, L, H * D],
/// k [B, S, H * D], v [B, S, H * Dv] -> output [B, L, H * Dv] (weights [B, H, L, S]). No head split or
/// merge copies: each (batch, head) reads and writes strided slices. nn::MultiheadAttention uses it.
template <typename T>
std::pair<Tensor<T>, Tensor<T>> multi_head_attention(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                                                     std::size_t num_heads, const AttentionMasks<T>& masks = {},
                                                     double dropout_p = 0.0, bool is_causal = false,
                                                     std::optional<double> scale = std::nullopt,
                                                     bool need_weights = false, Generator* gen = nullptr);

/// The same with q, k and v side by side in one [B, L, 3 * H * D] tensor (self-attention's packed
/// projection): no chunk copies, and one [B, L, 3 E] gradient.
template <typename T>
std::pair<Tensor<T>, Tensor<T>> multi_head_self_attention(const Tensor<T>& qkv, std::size_t num_heads,
                                                          const AttentionMasks<T>& masks = {}, double dropout_p = 0.0,
                                                          bool is_causal = false,
                                                          std::optional<double> scale = std::nullopt,
                                                          bool need_weights = false, Generator* gen = nullptr);

}  // namespace tapegrad
