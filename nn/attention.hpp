/// @file
/// MultiheadAttention (torch.nn.MultiheadAttention): scaled dot-product attention over num_heads
/// heads, softmax(Q K^T / sqrt(d_head) + masks) V, with torch's parameter names and layouts.
///
/// Masks follow torch: a bool mask marks positions that may NOT be attended (true = masked, added
/// as -inf); a float mask is added to the scores as is (for key_padding_mask too, as torch 2 does;
/// torch 1.13 treated a float key_padding_mask as bool). key_padding_mask is [B, S]; attn_mask is
/// [L, S] or [B * num_heads, L, S] (batch-major, head-minor, as torch).
///
/// Fully masked rows: when every key of a query is masked, torch's softmax yields NaN weights and a
/// NaN output that poisons the loss. tapegrad instead gives such a query all-zero attention weights,
/// so its attention output is out_proj.bias, and its gradient is zero: a fully padded sequence in a
/// batch then leaves the rest of the batch untouched. Rows with at least one visible key are exactly
/// as in torch.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/masking.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

/// A bool mask (true = masked) or a float mask added to the attention scores; default: no mask.
template <typename T>
class AttentionMask {
 public:
  AttentionMask() = default;
  AttentionMask(BoolArray mask) : bool_mask_(std::move(mask)), is_bool_(true), defined_(true) {}
  AttentionMask(Tensor<T> additive) : float_mask_(std::move(additive)), defined_(float_mask_.defined()) {}

  bool defined() const { return defined_; }
  bool is_bool() const { return is_bool_; }
  const BoolArray& bool_mask() const { return bool_mask_; }
  const Tensor<T>& float_mask() const { return float_mask_; }
  Shape shape() const { return is_bool_ ? shape_of(bool_mask_) : float_mask_.shape(); }

 private:
  BoolArray bool_mask_;
  Tensor<T> float_mask_;
  bool is_bool_ = false;
  bool defined_ = false;
};

/// [sz, sz], true above the diagonal: position i may attend to positions 0..i only.
BoolArray causal_mask(std::size_t sz);
/// torch.nn.Transformer.generate_square_subsequent_mask: -inf above the diagonal, 0 elsewhere.
template <typename T>
Tensor<T> generate_square_subsequent_mask(std::size_t sz);

/// The keys and values a self-attention layer has computed for the positions seen so far, kept between
/// calls of MultiheadAttention::forward_incremental (the "KV cache" of incremental decoding).
template <typename T>
struct KVCache {
  Tensor<T> key, value;  ///< [B, S, E] batch-major, heads side by side; undefined while empty
  std::size_t length() const { return key.defined() ? key.size(1) : 0; }
  void clear() { key = value = Tensor<T>(); }
};

/// One step of incremental decoding's self-attention, shared by MultiheadAttention::forward_incremental
/// and models::Llama: appends key and value [B, n, E] to cache, then attends query [B, n, E] (positions
/// S .. S + n - 1 after the cache's S earlier ones) causally over every cached position, num_heads heads
/// side by side -> [B, n, E]. No attention dropout. The caller checks that the shapes fit the cache.
template <typename T>
Tensor<T> cached_causal_attention(const Tensor<T>& query, const Tensor<T>& key, const Tensor<T>& value,
                                  std::size_t num_heads, KVCache<T>& cache);

/// torch.nn.MultiheadAttention's constructor arguments besides embed_dim and num_heads.
struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(std::size_t embed_dim, std::size_t num_heads)
      : embed_dim(embed_dim), num_heads(num_heads) {}
  std::size_t embed_dim, num_heads;
  double dropout = 0.0;  ///< on the attention weights, in training only
  bool bias = true;
  std::size_t kdim = 0, vdim = 0;  ///< 0 means embed_dim
  bool batch_first = false;        ///< inputs [B, L, E] instead of [L, B, E]
};

/// torch.nn.MultiheadAttention: packed in_proj_weight / in_proj_bias and out_proj,
/// with key padding and attention masks.
template <typename T>
class MultiheadAttention : public Module<T, MultiheadAttention<T>> {
 public:
  /// Initialization as torch: out_proj is a Linear (its own init, then its bias zeroed), the input
  /// projections xavier_uniform_, in_proj_bias zero. Dropout draws from dropout_gen, or from a
  /// generator seeded from gen when none is shared.
  MultiheadAttention(const MultiheadAttentionOptions& options, Generator& gen,
                     std::shared_ptr<Generator> dropout_gen = nullptr);
  MultiheadAttention(std::size_t embed_dim, std::size_t num_heads, Generator& gen)
      : MultiheadAttention(MultiheadAttentionOptions(embed_dim, num_heads), gen) {}

  /// query [L, B, E], key [S, B, kdim], value [S, B, vdim] ([B, ., .] when batch_first) ->
  /// (output [L, B, E], weights [B, L, S] averaged over heads or [B, H, L, S] per head; an undefined
  /// tensor when !need_weights). Unbatched inputs [L, E], [S, kdim], [S, vdim] give [L, E] and
  /// [L, S] / [H, L, S], with key_padding_mask [S] and attn_mask [L, S] or [H, L, S], as torch. The weights returned
  /// are those applied to the values, i.e. after dropout, as torch. is_causal without attn_mask applies causal_mask(L,
  /// S) (torch requires the mask and treats is_causal as a hint; with attn_mask given, attn_mask is used as is).
  std::pair<Tensor<T>, Tensor<T>> forward(const Tensor<T>& query, const Tensor<T>& key, const Tensor<T>& value,
                                          const AttentionMask<T>& key_padding_mask = {}, bool need_weights = true,
                                          const AttentionMask<T>& attn_mask = {}, bool average_attn_weights = true,
                                          bool is_causal = false) const;

  /// Causal self-attention of new positions x [B, n, E] ([n, B, E] without batch_first) that follow
  /// the cache's S earlier positions: query i (position S + i) sees positions 0..S + i. The new keys
  /// and values are appended to cache, so decoding one token costs one position of projections and
  /// S + 1 scores, not a re-run of the prefix. The output equals that of forward(x_all, x_all, x_all,
  /// {}, false, {}, true, /*is_causal=*/true) at those positions in eval mode (no attention dropout
  /// here). Needs the packed in_proj_weight (kdim = vdim = embed_dim); throws ShapeError for an x
  /// that does not fit the layer or the cache's batch.
  Tensor<T> forward_incremental(const Tensor<T>& x, KVCache<T>& cache) const;

  std::string name() const override { return "MultiheadAttention"; }
  const std::shared_ptr<Generator>& dropout_generator() const { return dropout_gen_; }

  std::size_t embed_dim, num_heads, head_dim, kdim, vdim;
  double dropout;
  bool batch_first;
  /// Packed [3E, E] when kdim == vdim == embed_dim; otherwise q/k/v_proj_weight [E, E], [E, kdim],
  /// [E, vdim]. The unused ones are undefined, as are the biases when bias = false.
  Tensor<T> in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias;
  std::shared_ptr<Linear<T>> out_proj;
  /// The LoRA adapter of the packed in-projection that nn::inject_lora added (its A [r, E] and B
  /// [3E, r] are the submodules lora_A and lora_B); null without one. Every path of forward and
  /// forward_incremental adds its term to the projections, unless it is merged.
  std::shared_ptr<LoraAdapter<T>> lora;

 private:
  /// x [..., E] projected by the rows [begin, end) of in_proj_weight (and in_proj_bias), plus the LoRA
  /// adapter's share of them: weight and bias are those rows already cut out (the whole for 0, 3E).
  Tensor<T> in_projection(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias, std::size_t begin,
                          std::size_t end) const;

  /// The shapes of a batched forward's inputs and masks; throws ShapeError naming them.
  void check_inputs(const Tensor<T>& query, const Tensor<T>& key, const Tensor<T>& value,
                    const AttentionMask<T>& key_padding_mask, const AttentionMask<T>& attn_mask) const;

  std::shared_ptr<Generator> dropout_gen_;
};

extern template class MultiheadAttention<float>;
extern template class MultiheadAttention<double>;

}  // namespace tapegrad::nn
