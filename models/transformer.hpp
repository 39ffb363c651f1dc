/// @file
/// Transformer: the encoder-decoder model of "Attention Is All You Need" over token ids: embeddings
/// scaled by sqrt(d_model), sinusoidal positions, torch.nn.Transformer's encoder and decoder stacks,
/// and an output projection to target-vocabulary logits (optionally tied to the target embedding).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/masking.hpp"
#include "tapegrad/nn/embedding.hpp"
#include "tapegrad/nn/positional_encoding.hpp"
#include "tapegrad/nn/transformer.hpp"

namespace tapegrad::models {

/// torch.nn.Transformer's argument names and defaults where they apply, plus what a token-level model
/// needs. Always batch-first: ids are [batch, length].
struct TransformerOptions {
  std::size_t src_vocab_size = 0;
  std::size_t tgt_vocab_size = 0;
  std::size_t d_model = 512;
  std::size_t nhead = 8;
  std::size_t num_encoder_layers = 6;
  std::size_t num_decoder_layers = 6;
  std::size_t dim_feedforward = 2048;
  double dropout = 0.1;  ///< on embeddings + positions, and everywhere inside the layers
  nn::Activation activation = nn::Activation::ReLU;
  double layer_norm_eps = 1e-5;
  bool norm_first = false;       ///< pre-LN when true, post-LN (the paper's) when false
  std::size_t max_len = 512;     ///< longest sequence the positional table covers
  std::int64_t padding_idx = 0;  ///< embedding row that stays zero, in both vocabularies
  /// The output projection uses the target embedding's weight (section 3.4 of the paper); only the
  /// projection's bias ("output_bias") is then a separate parameter.
  bool tie_output = false;
  /// Each residual block of the encoder's and the decoder's layers is recomputed in backward instead of
  /// keeping its activations (nn::TransformerEncoder / nn::TransformerDecoder::activation_checkpointing):
  /// less memory, one more forward of the layers, the same gradients bit for bit.
  bool activation_checkpointing = false;

  /// Throws std::invalid_argument naming the offending field and value.
  void validate() const;
};

/// Layout (state_dict names): src_embedding, tgt_embedding, pos_encoding (a non-persistent table),
/// dropout, encoder (layers.N..., norm), decoder (layers.N..., norm), then output_projection (weight,
/// bias) or, when tied, output_bias. As in torch.nn.Transformer both stacks end in a LayerNorm, for
/// post-LN too.
///
/// Embeddings are drawn from N(0, d_model^-0.5) and multiplied by sqrt(d_model), as in
/// TransformerClassifier (models/classifier.hpp), so they start at the scale of the positional encoding and a
/// tied output projection starts with logits of order one.
///
/// Masks: src_padding / tgt_padding are [B, S] / [B, T] bools, true at padding. The decoder's
/// self-attention is always causal: position t sees target positions 0..t only, so decode() on a
/// prefix gives the same outputs for that prefix as on any longer sequence (incremental decoding).
template <typename T>
class Transformer : public nn::Module<T, Transformer<T>> {
 public:
  Transformer(const TransformerOptions& options, Generator& gen);

  /// src [B, S], src_padding [B, S] -> memory [B, S, d_model].
  Tensor<T> encode(const xt::xarray<std::int64_t>& src, const BoolArray& src_padding) const;
  /// tgt [B, T] (starting with the begin-of-sequence token), memory from encode(), memory_padding the
  /// src_padding it was encoded with, tgt_padding optional -> logits [B, T, tgt_vocab_size].
  Tensor<T> decode(const xt::xarray<std::int64_t>& tgt, const Tensor<T>& memory, const BoolArray& memory_padding,
                   const BoolArray& tgt_padding = {}) const;
  /// decode(tgt, encode(src, src_padding), src_padding, tgt_padding): the teacher-forcing pass.
  Tensor<T> forward(const xt::xarray<std::int64_t>& src, const xt::xarray<std::int64_t>& tgt,
                    const BoolArray& src_padding, const BoolArray& tgt_padding = {}) const;

  /// The cross-attention weights of every decoder layer, averaged over heads: one [B, T, S] tensor per
  /// layer (row t: how target position t spreads over the source). Computed without recording, in the
  /// model's current mode (call eval() first for the weights decode() uses at inference).
  std::vector<xt::xarray<T>> cross_attention(const xt::xarray<std::int64_t>& tgt, const Tensor<T>& memory,
                                             const BoolArray& memory_padding) const;

  std::string name() const override { return "Transformer"; }
  /// The generator all dropout masks are drawn from (saved in training checkpoints).
  const std::shared_ptr<Generator>& dropout_generator() const { return dropout_gen_; }

  TransformerOptions options;
  std::shared_ptr<nn::Embedding<T>> src_embedding, tgt_embedding;
  std::shared_ptr<nn::SinusoidalPositionalEncoding<T>> pos_encoding;
  std::shared_ptr<nn::Dropout<T>> dropout;
  std::shared_ptr<nn::TransformerEncoder<T>> encoder;
  std::shared_ptr<nn::TransformerDecoder<T>> decoder;
  std::shared_ptr<nn::Linear<T>> output_projection;  ///< null when tied
  Tensor<T> output_bias;                             ///< defined only when tied

 private:
  Tensor<T> embed(const nn::Embedding<T>& table, const xt::xarray<std::int64_t>& ids) const;
  std::vector<std::shared_ptr<nn::TransformerDecoderLayer<T>>> decoder_layers() const;

  std::shared_ptr<Generator> dropout_gen_;
};

extern template class Transformer<float>;
extern template class Transformer<double>;

}  // namespace tapegrad::models
