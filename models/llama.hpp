/// @file
/// Llama: a decoder-only Transformer language model in LLaMA's layout: token embeddings without a position
/// table, pre-norm blocks of RMSNorm, causal self-attention with rotary embeddings (RoPE) on the queries
/// and keys and bias-free projections, RMSNorm and a SwiGLU feed-forward, then a final RMSNorm and the
/// output projection. Incremental decoding with a per-layer key/value cache, as GPT's.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/models/causal_lm.hpp"
#include "tapegrad/nn/attention.hpp"
#include "tapegrad/nn/container.hpp"
#include "tapegrad/nn/dropout.hpp"
#include "tapegrad/nn/embedding.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/nn/positional_encoding.hpp"
#include "tapegrad/nn/rms_norm.hpp"

namespace tapegrad::models {

/// The sizes and settings of a Llama model; validate() names the first bad field.
struct LlamaOptions {
  std::size_t vocab_size = 0;
  std::size_t max_len = 256;  ///< the context: positions the rotary tables cover
  std::size_t d_model = 128;
  std::size_t nhead = 4;
  /// The key/value heads (Hugging Face's num_key_value_heads): grouped-query attention when fewer than
  /// nhead, each shared by nhead / num_kv_heads query heads; 0 means nhead.
  std::size_t num_kv_heads = 0;
  /// The size of a head; 0 means d_model / nhead (Hugging Face's head_dim, which may differ).
  std::size_t head_dim = 0;
  std::size_t num_layers = 2;
  /// The SwiGLU width (Hugging Face's intermediate_size). 344 is LLaMA's rule, 8/3 d_model rounded up
  /// to a multiple of 8, at d_model 128; a 2-layer model over 2,000 tokens then has 651,904 parameters,
  /// within 0.5% of GPT's 654,800 with dim_feedforward 512.
  std::size_t hidden = 344;
  double rope_base = 10000.0;  ///< RoPE's theta
  double rms_norm_eps = 1e-6;  ///< Hugging Face's LlamaConfig default
  /// On the output of every attention and feed-forward branch before it joins the residual stream.
  /// LLaMA has none; there is no dropout on the attention weights.
  double dropout = 0.0;
  /// The output projection is the token embedding (no lm_head): parameter counts then compare with
  /// GPT's, whose projection is tied. LLaMA's own is untied (false).
  bool tie_embeddings = true;
  bool attention_bias = false;  ///< biases on q_proj, k_proj, v_proj and o_proj (Hugging Face's attention_bias)
  bool mlp_bias = false;        ///< biases on gate_proj, up_proj and down_proj (Hugging Face's mlp_bias)
  /// Embedding row that stays zero (Hugging Face's pad_token_id); std::nullopt for none.
  std::optional<std::int64_t> padding_idx = 0;
  /// Each residual block (attention, feed-forward) of forward() and forward_rows() under grad mode
  /// recomputed in backward instead of keeping its activations (tapegrad::checkpoint): less memory, one
  /// more forward of the layers, the same gradients bit for bit.
  bool activation_checkpointing = false;

  /// num_kv_heads and head_dim with their defaults resolved.
  std::size_t kv_heads() const { return num_kv_heads ? num_kv_heads : nhead; }
  std::size_t head_size() const { return head_dim ? head_dim : d_model / nhead; }

  /// Throws std::invalid_argument naming the offending field and value.
  void validate() const;
};

/// LLaMA's self-attention: q_proj [nhead * head_dim, d_model], k_proj and v_proj [num_kv_heads *
/// head_dim, d_model], o_proj [d_model, nhead * head_dim], bias-free unless attention_bias; RoPE rotates
/// the queries and keys at their positions; causal over the key/value cache and the new positions. With
/// fewer key/value heads than query heads (grouped-query attention), query head h reads key/value head
/// h / (nhead / num_kv_heads), as Hugging Face's repeat_kv; the cache holds the repeated heads.
template <typename T>
class LlamaAttention : public nn::Module<T, LlamaAttention<T>> {
 public:
  LlamaAttention(const LlamaOptions& options, Generator& gen);

  /// x [B, n, d_model] at positions cache.length() .. cache.length() + n - 1 -> [B, n, d_model]; appends
  /// the new (rotated) keys and values to cache. An empty cache makes it the full causal forward.
  Tensor<T> forward(const Tensor<T>& x, const nn::RotaryEmbedding<T>& rope, nn::KVCache<T>& cache) const;

  std::string name() const override { return "LlamaAttention"; }

  std::size_t nhead, num_kv_heads, head_dim;
  std::shared_ptr<nn::Linear<T>> q_proj, k_proj, v_proj, o_proj;
};

/// The SwiGLU feed-forward: down_proj(silu(gate_proj(x)) * up_proj(x)), bias-free unless mlp_bias (LLaMA's
/// w2(silu(w1 x) * w3 x)).
template <typename T>
class LlamaMLP : public nn::Module<T, LlamaMLP<T>> {
 public:
  LlamaMLP(std::size_t d_model, std::size_t hidden, Generator& gen, bool bias = false);
  Tensor<T> forward(const Tensor<T>& x) const;
  std::string name() const override { return "LlamaMLP"; }

  std::shared_ptr<nn::Linear<T>> gate_proj, up_proj, down_proj;
};

/// One block: h = x + dropout(self_attn(input_layernorm(x))); out = h + dropout(mlp(post_attention_layernorm(h))).
template <typename T>
class LlamaDecoderLayer : public nn::Module<T, LlamaDecoderLayer<T>> {
 public:
  LlamaDecoderLayer(const LlamaOptions& options, Generator& gen, std::shared_ptr<Generator> dropout_gen);

  /// x [B, n, d_model] after the cache's positions (an empty cache: the whole sequence) -> [B, n, d_model].
  Tensor<T> forward(const Tensor<T>& x, const nn::RotaryEmbedding<T>& rope, nn::KVCache<T>& cache) const;
  /// The two residual blocks forward() is made of, op for op (forward is
  /// feed_forward_block(attention_block(x, ...))), for checkpointing them one at a time.
  ///@{
  Tensor<T> attention_block(const Tensor<T>& x, const nn::RotaryEmbedding<T>& rope, nn::KVCache<T>& cache) const;
  Tensor<T> feed_forward_block(const Tensor<T>& h) const;
  ///@}

  std::string name() const override { return "LlamaDecoderLayer"; }

  std::shared_ptr<LlamaAttention<T>> self_attn;
  std::shared_ptr<LlamaMLP<T>> mlp;
  std::shared_ptr<nn::RMSNorm<T>> input_layernorm, post_attention_layernorm;
  std::shared_ptr<nn::Dropout<T>> dropout;
};

/// Layout (state_dict names: Hugging Face's LlamaForCausalLM's, less their leading "model"):
/// embed_tokens.weight [vocab_size, d_model];
/// layers.N.self_attn.{q,k,v,o}_proj.weight (shapes in LlamaAttention; .bias too with attention_bias);
/// layers.N.mlp.{gate,up}_proj.weight [hidden, d_model], layers.N.mlp.down_proj.weight [d_model, hidden]
/// (.bias too with mlp_bias);
/// layers.N.input_layernorm.weight, layers.N.post_attention_layernorm.weight, norm.weight [d_model];
/// lm_head.weight [vocab_size, d_model] only when untied (tied: the projection is embed_tokens.weight).
/// rotary_emb holds RoPE's cos / sin tables as non-persistent buffers (not in state_dict), shared by the
/// layers; the dropout modules and the dropout generator hold no tensors.
///
/// The forward is Hugging Face's: the embedding is looked up unscaled and no output bias is added.
/// Initialization: embed_tokens as scaled_normal_embedding's N(0, d_model^-0.5) (the padding row zero),
/// so that the tied projection starts with logits of order one; the projections as torch's Linear; the
/// norms' weights one. A full forward is the incremental one over an empty cache: one code path, and
/// every self-attention runs causally (no [L, L] mask is built).
template <typename T>
class Llama : public nn::Module<T, Llama<T>>, public CausalLM<T> {
 public:
  Llama(const LlamaOptions& options, Generator& gen);

  /// The cached state of every layer for incremental decoding (GPT's type).
  using Cache = DecoderCache<T>;

  std::size_t max_len() const override { return options.max_len; }
  std::size_t vocab_size() const override { return options.vocab_size; }

  /// See CausalLM: ids [B, L] -> logits [B, L, vocab_size]. As GPT's, padding after a sequence's tokens
  /// needs no mask. Throws ShapeError past max_len, and the embedding's error for an id outside the vocabulary.
  Tensor<T> forward(const xt::xarray<std::int64_t>& ids) const override;
  Tensor<T> forward_rows(const xt::xarray<std::int64_t>& ids, const xt::xarray<std::int64_t>& rows) const override;
  /// The RoPE positions of ids start at cache.length(). Throws ShapeError past max_len or for a cache of
  /// another batch, std::invalid_argument for a cache of another model's number of layers.
  Tensor<T> forward_incremental(const xt::xarray<std::int64_t>& ids, Cache& cache) const override;
  Tensor<T> next_token_logits(const xt::xarray<std::int64_t>& ids, Cache& cache) const override;

  std::string name() const override { return "Llama"; }
  /// The generator all dropout masks are drawn from (saved in training checkpoints).
  const std::shared_ptr<Generator>& dropout_generator() const { return dropout_gen_; }

  LlamaOptions options;
  std::shared_ptr<nn::Embedding<T>> embed_tokens;
  std::shared_ptr<nn::ModuleList<T>> layers;  ///< of LlamaDecoderLayer
  std::shared_ptr<nn::RMSNorm<T>> norm;
  std::shared_ptr<nn::Linear<T>> lm_head;  ///< null when tie_embeddings
  std::shared_ptr<nn::RotaryEmbedding<T>> rotary_emb;

 private:
  /// The final hidden states [B, n, d_model] of ids after the cache's positions, appended to cache
  /// (checked as op). A scratch cache, one the caller drops, may stay empty: the layers are then
  /// checkpointed when options.activation_checkpointing asks for it.
  Tensor<T> advance(const char* op, const xt::xarray<std::int64_t>& ids, Cache& cache, bool scratch = false) const;
  Tensor<T> project(const Tensor<T>& hidden) const;

  std::vector<std::shared_ptr<LlamaDecoderLayer<T>>> typed_layers_;
  std::shared_ptr<Generator> dropout_gen_;
};

extern template class LlamaAttention<float>;
extern template class LlamaAttention<double>;
extern template class LlamaMLP<float>;
extern template class LlamaMLP<double>;
extern template class LlamaDecoderLayer<float>;
extern template class LlamaDecoderLayer<double>;
extern template class Llama<float>;
extern template class Llama<double>;

}  // namespace tapegrad::models
