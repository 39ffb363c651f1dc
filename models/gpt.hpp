/// @file
/// GPT: a decoder-only Transformer language model (GPT-2's layout): token embeddings and positions,
/// pre-LN blocks of causal self-attention and a GELU feed-forward, a final LayerNorm, and an output
/// projection, tied to the token embedding or not. Incremental decoding with a per-layer key/value cache.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/models/causal_lm.hpp"
#include "tapegrad/models/embedding.hpp"
#include "tapegrad/nn/dropout.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/nn/positional_encoding.hpp"
#include "tapegrad/nn/transformer.hpp"

namespace tapegrad::models {

/// The sizes and settings of a GPT model; validate() names the first bad field.
struct GPTOptions {
  std::size_t vocab_size = 0;
  std::size_t max_len = 256;  ///< the context: positions the positional table covers
  std::size_t d_model = 128;
  std::size_t nhead = 4;
  std::size_t num_layers = 2;
  std::size_t dim_feedforward = 512;
  double dropout = 0.1;            ///< on embeddings + positions, and everywhere inside the blocks
  double attention_dropout = 0.1;  ///< on the attention weights
  /// On embeddings + positions when it differs from dropout (GPT-2's embd_pdrop beside resid_pdrop).
  std::optional<double> embedding_dropout;
  /// Between the feed-forward's two linear layers when it differs from dropout (GPT-2 has none there: 0).
  std::optional<double> activation_dropout;
  /// GELU (exact), GELUTanh (GPT-2's "gelu_new") or ReLU.
  nn::Activation activation = nn::Activation::GELU;
  double layer_norm_eps = 1e-5;
  PositionalKind positional = PositionalKind::Learned;
  /// Embedding row that stays zero; none (std::nullopt) in GPT-2, whose every row is a token.
  std::optional<std::int64_t> padding_idx = 0;
  /// Token embeddings multiplied by sqrt(d_model) (see scaled_normal_embedding); GPT-2 adds them unscaled.
  bool scale_embeddings = true;
  /// A learned bias on the logits; GPT-2's lm_head has none.
  bool output_bias = true;
  /// The output projection is the token embedding; when false it is its own lm_head (GPT-2's
  /// tie_word_embeddings = false).
  bool tie_embeddings = true;
  /// Each residual block of a training forward recomputed in backward instead of keeping its activations
  /// (nn::TransformerEncoder::activation_checkpointing): less memory, one more forward of the blocks.
  bool activation_checkpointing = false;

  /// Throws std::invalid_argument naming the offending field and value.
  void validate() const;
};

/// Layout (state_dict names, those of TransformerClassifier's encoder so that its weights can start a
/// classifier): the TokenInput's embedding, pos_encoding (a learned table, or the non-persistent
/// sinusoidal one) and dropout, then encoder (layers.N... of nn::TransformerEncoderLayer with norm_first, then norm),
/// output_bias (when options.output_bias) and lm_head.weight [vocab_size, d_model] (when untied; tied,
/// the output projection's weight is embedding.weight).
///
/// Every block runs its self-attention with is_causal: position t sees positions 0..t only, so no
/// output depends on a later token and no [L, L] mask is built. Embeddings as in scaled_normal_embedding.
template <typename T>
class GPT : public nn::Module<T, GPT<T>>, public CausalLM<T>, public TokenInput<T> {
 public:
  GPT(const GPTOptions& options, Generator& gen);

  std::size_t max_len() const override { return options.max_len; }
  std::size_t vocab_size() const override { return options.vocab_size; }

  /// ids [B, L] (1 <= L <= max_len) -> logits [B, L, vocab_size]; row t predicts token t + 1. Padding
  /// after a sequence's tokens needs no mask: under the causal mask no real position sees it.
  Tensor<T> forward(const xt::xarray<std::int64_t>& ids) const override;
  /// The logits of chosen positions only: ids [B, L], rows = flat positions b * L + t -> [rows, vocab_size],
  /// equal to those rows of forward(ids). A language model's loss needs no logits at padding, and the
  /// [B * L, vocab_size] logits are the largest tensor of a training step (and of its memory traffic).
  Tensor<T> forward_rows(const xt::xarray<std::int64_t>& ids, const xt::xarray<std::int64_t>& rows) const override;

  /// The cached state of every layer for incremental decoding (see forward_incremental).
  using Cache = DecoderCache<T>;
  /// ids [B, n]: the tokens at positions cache.length() .. cache.length() + n - 1 -> their logits
  /// [B, n, vocab_size], equal to forward() of the whole sequence at those rows (in eval mode, up to
  /// rounding); appends their keys and values to cache. Throws ShapeError past max_len.
  Tensor<T> forward_incremental(const xt::xarray<std::int64_t>& ids, Cache& cache) const override;
  /// The same, projecting only the last of the n positions: the logits [B, vocab_size] of the token that
  /// follows, which is all that decoding reads (a prompt's other positions need no [vocab_size] row).
  Tensor<T> next_token_logits(const xt::xarray<std::int64_t>& ids, Cache& cache) const override;

  std::string name() const override { return "GPT"; }
  /// The generator all dropout masks are drawn from (saved in training checkpoints).
  const std::shared_ptr<Generator>& dropout_generator() const { return dropout_gen_; }

  GPTOptions options;
  std::shared_ptr<nn::TransformerEncoder<T>> encoder;
  Tensor<T> output_bias;                   ///< [vocab_size]; undefined without options.output_bias
  std::shared_ptr<nn::Linear<T>> lm_head;  ///< null when tie_embeddings

 private:
  /// The hidden states [B, n, d_model] of ids appended to cache (checked as op).
  Tensor<T> advance(const char* op, const xt::xarray<std::int64_t>& ids, Cache& cache) const;
  Tensor<T> embed(const xt::xarray<std::int64_t>& ids, std::size_t offset) const;
  Tensor<T> project(const Tensor<T>& hidden) const;

  std::shared_ptr<Generator> dropout_gen_;
};

extern template class GPT<float>;
extern template class GPT<double>;

}  // namespace tapegrad::models
