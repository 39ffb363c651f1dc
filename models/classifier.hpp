/// @file
/// TransformerClassifier: a Transformer encoder over token ids with a pooled classification head
/// (embeddings, positions, encoder stack, pooling, Linear), as for text classification.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/masking.hpp"
#include "tapegrad/models/embedding.hpp"
#include "tapegrad/nn/embedding.hpp"
#include "tapegrad/nn/hashed_ngram_embedding.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/nn/positional_encoding.hpp"
#include "tapegrad/nn/transformer.hpp"

namespace tapegrad::models {

/// How the encoder's outputs [B, L, D] become one vector per sequence.
enum class Pooling {
  Mean,  ///< average over the real (non-padding) tokens
  Max,   ///< elementwise maximum over the real tokens
  Cls,   ///< the output at a learned [CLS] vector prepended to every sequence
};

/// "mean", "max" or "cls".
std::string pooling_name(Pooling p);

/// The classifier's architecture and head.
struct TransformerClassifierOptions {
  std::size_t vocab_size = 20000;
  std::size_t max_len = 512;  ///< longest sequence the positional table covers
  std::size_t d_model = 64;
  std::size_t nhead = 4;
  std::size_t num_layers = 1;
  std::size_t dim_feedforward = 128;
  double dropout = 0.1;
  double attention_dropout = 0.1;
  nn::Activation activation = nn::Activation::ReLU;
  bool norm_first = false;  ///< pre-LN (with a final LayerNorm) when true
  Pooling pooling = Pooling::Mean;
  PositionalKind positional = PositionalKind::Sinusoidal;
  std::size_t num_classes = 2;
  std::int64_t padding_idx = 0;
  /// Hashed n-gram embeddings added to the token embeddings (nn::HashedNgramEmbedding): 0 = none,
  /// else the table's rows (at least 2), for the n-grams of n = 2 .. ngram_max.
  std::size_t ngram_buckets = 0;
  std::size_t ngram_max = 3;
  /// The n-gram table's width: 0 = d_model (added as they are); else narrower rows projected to d_model
  /// by a Linear without bias ("ngram_proj"), so that the same memory holds d_model / ngram_dim times
  /// as many buckets (fewer collisions), as fastText's low-dimensional n-gram vectors do.
  std::size_t ngram_dim = 0;
  /// Each residual block of the encoder's layers recomputed in backward instead of keeping its
  /// activations (nn::TransformerEncoder::activation_checkpointing): less memory, one more forward.
  bool activation_checkpointing = false;

  /// Throws std::invalid_argument naming the offending field and value.
  void validate() const;
};

/// The classifier's encoder stack for these options (batch-first; a pre-LN stack ends in a LayerNorm, as
/// in GPT-2, since pre-LN leaves the residual stream unnormalized), its dropouts drawing from dropout_gen.
/// Shared with the models whose encoder must load into a classifier (TransformerMaskedLM).
template <typename T>
std::shared_ptr<nn::TransformerEncoder<T>> make_classifier_encoder(const TransformerClassifierOptions& options,
                                                                   Generator& gen,
                                                                   std::shared_ptr<Generator> dropout_gen);

/// What one forward pass can hand back besides the logits, for looking inside the model (attention
/// maps, saliency). Nothing is collected unless forward is given one.
template <typename T>
struct ClassifierTrace {
  /// embedding->forward(ids) [B, L, D] (before the sqrt(d_model) scale and the positions); it keeps its
  /// gradient after backward() when it requires one (grad mode on), for gradient-times-input saliency.
  Tensor<T> embeddings;
  /// Per encoder layer, the self-attention weights [B, H, P, P] as applied (P = L, or L + 1 with the
  /// [CLS] position first for Pooling::Cls); a padding key gets weight 0.
  std::vector<Tensor<T>> attention;
};

/// forward(ids [B, L], padding_mask [B, L] with true at padding) -> logits [B, num_classes].
///
/// As in "Attention Is All You Need" (section 3.4), token embeddings are drawn from N(0, d_model^-0.5)
/// (plus, with ngram_buckets, the hashed n-gram rows of each position, drawn alike) and multiplied by
/// sqrt(d_model), so they start at unit scale, like the positional encoding, while
/// Adam moves them at a rate relative to that scale (torch's N(0, 1) embeddings times sqrt(d_model)
/// start 8x larger at d_model 64 and learn correspondingly slower). Then dropout, the batch-first
/// encoder (with a final LayerNorm when pre-LN), pooling and a Linear head. The input layer is a
/// TokenInput (embedding, the n-gram table between it and pos_encoding, dropout), as GPT's and
/// TransformerMaskedLM's, whose weights load into it.
///
/// A sequence with no real token at all (an empty text) is pooled over its first position, which the
/// attention may then also see, so no row is fully masked and no NaN can appear.
template <typename T>
class TransformerClassifier : public nn::Module<T, TransformerClassifier<T>>, public TokenInput<T> {
 public:
  TransformerClassifier(const TransformerClassifierOptions& options, Generator& gen);

  Tensor<T> forward(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask,
                    ClassifierTrace<T>* trace = nullptr) const;

  std::string name() const override { return "TransformerClassifier"; }
  /// The generator all dropout masks are drawn from (saved in training checkpoints).
  const std::shared_ptr<Generator>& dropout_generator() const { return dropout_gen_; }

  TransformerClassifierOptions options;
  std::shared_ptr<nn::HashedNgramEmbedding<T>> ngrams;  ///< set when options.ngram_buckets > 0
  std::shared_ptr<nn::Linear<T>> ngram_proj;            ///< set when ngram_dim is not d_model
  Tensor<T> cls_token;                                  ///< [d_model], only for Pooling::Cls
  std::shared_ptr<nn::TransformerEncoder<T>> encoder;
  std::shared_ptr<nn::Linear<T>> classifier;

 private:
  std::shared_ptr<Generator> dropout_gen_;
};

extern template class TransformerClassifier<float>;
extern template class TransformerClassifier<double>;

}  // namespace tapegrad::models
