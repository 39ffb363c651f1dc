#include "tapegrad/models/classifier.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/reduce.hpp"
#include "tapegrad/autograd/shape_ops.hpp"
#include "tapegrad/models/layer_options.hpp"
#include "tapegrad/models/option_checks.hpp"

namespace tapegrad::models {

std::string pooling_name(Pooling p) { return p == Pooling::Mean ? "mean" : p == Pooling::Max ? "max" : "cls"; }

void TransformerClassifierOptions::validate() const {
  check_stack_sizes("", *this, {{"dim_feedforward", dim_feedforward}, {"num_classes", num_classes}});
  check_heads_divide("", d_model, nhead);
  check_dropouts("", {{"dropout", dropout}, {"attention_dropout", attention_dropout}});
  if (ngram_buckets == 1) throw std::invalid_argument("ngram_buckets must be 0 (none) or at least 2, got 1");
  if (ngram_buckets > 0 && ngram_dim > d_model) {
    throw std::invalid_argument(fmt::format("ngram_dim ({}) must not exceed d_model ({})", ngram_dim, d_model));
  }
  if (ngram_buckets > 0 && ngram_max < 2) {
    throw std::invalid_argument(fmt::format("ngram_max must be at least 2, got {}", ngram_max));
  }
  check_padding_idx("", padding_idx, vocab_size);
}

template <typename T>
std::shared_ptr<nn::TransformerEncoder<T>> make_classifier_encoder(const TransformerClassifierOptions& o,
                                                                   Generator& gen,
                                                                   std::shared_ptr<Generator> dropout_gen) {
  nn::TransformerLayerOptions layer = batch_first_layer(o);
  layer.attention_dropout = o.attention_dropout;
  layer.norm_first = o.norm_first;
  auto final_norm = o.norm_first ? std::make_shared<nn::LayerNorm<T>>(o.d_model) : nullptr;
  auto encoder =
      std::make_shared<nn::TransformerEncoder<T>>(layer, o.num_layers, gen, final_norm, std::move(dropout_gen));
  encoder->activation_checkpointing = o.activation_checkpointing;
  return encoder;
}

template <typename T>
TransformerClassifier<T>::TransformerClassifier(const TransformerClassifierOptions& o, Generator& gen) : options(o) {
  o.validate();
  dropout_gen_ = this->register_dropout_generator(gen);

  this->register_embedding(*this, o, gen);
  if (o.ngram_buckets > 0) {
    const std::size_t width = o.ngram_dim == 0 ? o.d_model : o.ngram_dim;
    ngrams = this->register_module(
        "ngrams", std::make_shared<nn::HashedNgramEmbedding<T>>(o.ngram_buckets, width, o.ngram_max, gen,
                                                                1.0 / std::sqrt(static_cast<double>(o.d_model))));
    if (width != o.d_model) {
      ngram_proj = this->register_module("ngram_proj", std::make_shared<nn::Linear<T>>(width, o.d_model, gen, false));
    }
  }
  this->register_positions_and_dropout(*this, o, o.dropout, gen, dropout_gen_);
  if (o.pooling == Pooling::Cls) {
    cls_token = this->register_parameter("cls_token", Tensor<T>::normal({o.d_model}, T(0), T(1), gen));
  }

  encoder = this->register_module("encoder", make_classifier_encoder<T>(o, gen, dropout_gen_));
  classifier = this->register_module("classifier", std::make_shared<nn::Linear<T>>(o.d_model, o.num_classes, gen));
}

template <typename T>
Tensor<T> TransformerClassifier<T>::forward(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask,
                                            ClassifierTrace<T>* trace) const {
  if (ids.dimension() != 2 || padding_mask.dimension() != 2 || ids.shape(0) != padding_mask.shape(0) ||
      ids.shape(1) != padding_mask.shape(1)) {
    throw ShapeError(fmt::format("TransformerClassifier: ids {} and padding_mask {} must both be [batch, length]",
                                 format_shape(shape_of(ids)), format_shape(shape_of(padding_mask))));
  }
  const std::size_t batch = ids.shape(0), length = ids.shape(1), d = options.d_model;
  if (length == 0 || length > options.max_len) {
    throw ShapeError(
        fmt::format("TransformerClassifier: sequence length {} is outside [1, max_len = {}]", length, options.max_len));
  }

  // Sequences without a real token are pooled (and attended) over their first position.
  BoolArray mask = padding_mask;
  for (std::size_t b = 0; b < batch; ++b) {
    bool all_padding = true;
    for (std::size_t t = 0; t < length && all_padding; ++t) all_padding = mask(b, t);
    if (all_padding) mask(b, 0) = false;
  }

  Tensor<T> embedded = this->embedding->forward(ids);
  if (trace) {
    if (embedded.requires_grad()) embedded.retain_grad();
    trace->embeddings = embedded;
    trace->attention.clear();
  }
  if (ngrams) {
    const Tensor<T> rows = ngrams->forward(ids, padding_mask);
    embedded = add(embedded, ngram_proj ? ngram_proj->forward(rows) : rows);
  }
  Tensor<T> x = this->add_positions(mul(embedded, static_cast<T>(std::sqrt(static_cast<double>(d)))));
  if (options.pooling == Pooling::Cls) {
    x = cat<T>({expand(reshape(cls_token, {1, 1, static_cast<std::int64_t>(d)}), {batch, 1, d}), x}, 1);
    BoolArray with_cls = xt::zeros<bool>({batch, length + 1});
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t t = 0; t < length; ++t) with_cls(b, t + 1) = mask(b, t);
    mask = std::move(with_cls);
  }
  x = encoder->forward(x, {}, nn::AttentionMask<T>(mask), false, trace ? &trace->attention : nullptr);

  Tensor<T> pooled;
  const std::size_t positions = mask.shape(1);
  switch (options.pooling) {
    case Pooling::Mean: {
      xt::xarray<T> keep = xt::xarray<T>::from_shape({batch, positions, 1});
      xt::xarray<T> count = xt::zeros<T>({batch, std::size_t{1}});
      for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t t = 0; t < positions; ++t) {
          keep(b, t, 0) = mask(b, t) ? T(0) : T(1);
          count(b, 0) += keep(b, t, 0);
        }
      pooled = div(sum(mul(x, Tensor<T>(std::move(keep))), {1}), Tensor<T>(std::move(count)));
      break;
    }
    case Pooling::Max: {
      BoolArray pad = xt::xarray<bool>::from_shape({batch, positions, 1});
      for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t t = 0; t < positions; ++t) pad(b, t, 0) = mask(b, t);
      pooled = max(masked_fill(x, pad, -std::numeric_limits<T>::infinity()), 1).values;
      break;
    }
    case Pooling::Cls:
      pooled = select(x, 1, 0);
      break;
  }
  return classifier->forward(pooled);
}

template std::shared_ptr<nn::TransformerEncoder<float>> make_classifier_encoder<float>(
    const TransformerClassifierOptions&, Generator&, std::shared_ptr<Generator>);
template std::shared_ptr<nn::TransformerEncoder<double>> make_classifier_encoder<double>(
    const TransformerClassifierOptions&, Generator&, std::shared_ptr<Generator>);
template class TransformerClassifier<float>;
template class TransformerClassifier<double>;

}  // namespace tapegrad::models
