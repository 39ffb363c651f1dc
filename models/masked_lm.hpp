/// @file
/// TransformerMaskedLM: a bidirectional Transformer encoder with BERT's masked-token head, for
/// pretraining the encoder of a TransformerClassifier on unlabeled text (self-pretraining).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/masking.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/models/classifier.hpp"

namespace tapegrad::models {

/// Built from the options of the classifier it will start (pooling and num_classes are not used), with
/// the classifier's parameter names and draws for its encoder part: the TokenInput's embedding,
/// pos_encoding and dropout, then encoder (layers.N..., and norm when pre-LN). Every name of the encoder part of a
/// TransformerClassifier built from the same options is here with the same shape, so its state_dict
/// loads into the classifier. Then BERT's head (Devlin et al. 2019): mlm_dense (Linear d -> d), GELU,
/// mlm_norm (LayerNorm), and the output projection tied to embedding.weight with mlm_bias [vocab_size].
template <typename T>
class TransformerMaskedLM : public nn::Module<T, TransformerMaskedLM<T>>, public TokenInput<T> {
 public:
  TransformerMaskedLM(const TransformerClassifierOptions& options, Generator& gen);

  /// ids [B, L], padding_mask [B, L] (true at padding) -> the encoder's outputs [B, L, d_model]; every
  /// position sees every real token (no causal mask).
  Tensor<T> encode(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask) const;
  /// The logits [M, vocab_size] at the M positions (b, t) where targets [B, L] != ignore_index, in
  /// row-major order, and those M targets.
  std::pair<Tensor<T>, xt::xarray<std::int64_t>> predict(const xt::xarray<std::int64_t>& ids,
                                                         const BoolArray& padding_mask,
                                                         const xt::xarray<std::int64_t>& targets,
                                                         std::int64_t ignore_index = -100) const;
  /// The mean cross-entropy over the targeted positions (NaN when there are none, as torch's mean).
  Tensor<T> loss(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask,
                 const xt::xarray<std::int64_t>& targets, std::int64_t ignore_index = -100) const;

  std::string name() const override { return "TransformerMaskedLM"; }
  const std::shared_ptr<Generator>& dropout_generator() const { return dropout_gen_; }

  TransformerClassifierOptions options;
  std::shared_ptr<nn::TransformerEncoder<T>> encoder;
  std::shared_ptr<nn::Linear<T>> mlm_dense;
  std::shared_ptr<nn::LayerNorm<T>> mlm_norm;
  Tensor<T> mlm_bias;

 private:
  std::shared_ptr<Generator> dropout_gen_;
};

/// Starts a classifier from a pretrained model's file (a TransformerMaskedLM's or a GPT's state_dict):
/// copies every tensor of its embedding and encoder part (the names not under "classifier.", "ngrams."
/// or "ngram_proj." and not "cls_token") from the file, leaving the head and the hashed n-gram table,
/// which a masked language model does not have, as initialized. Everything is checked first and
/// reported together in one std::runtime_error naming the file, the classifier then untouched: each of
/// those tensors must be in the file with its shape and dtype, and every tensor of the file under
/// embedding., pos_encoding. or encoder. must be one of them (a post-LN encoder has no encoder.norm, a
/// learned table is not a sinusoidal one). The rest of the file (the pretraining head) is ignored.
/// Returns the names loaded, sorted.
template <typename T>
std::vector<std::string> load_pretrained_encoder(TransformerClassifier<T>& classifier,
                                                 const io::safetensors::File& file);

extern template class TransformerMaskedLM<float>;
extern template class TransformerMaskedLM<double>;

}  // namespace tapegrad::models
