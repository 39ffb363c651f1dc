#include "tapegrad/models/transformer.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/models/embedding.hpp"
#include "tapegrad/models/layer_options.hpp"
#include "tapegrad/models/option_checks.hpp"

namespace tapegrad::models {

namespace {

// ids [B, L] and, when given, its padding mask [B, L].
void check_ids(const char* op, const char* what, const xt::xarray<std::int64_t>& ids, const BoolArray& padding,
               std::size_t max_len) {
  if (ids.dimension() != 2) {
    throw ShapeError(
        fmt::format("Transformer.{}: {} must be [batch, length], got {}", op, what, format_shape(shape_of(ids))));
  }
  if (ids.shape(1) == 0 || ids.shape(1) > max_len) {
    throw ShapeError(
        fmt::format("Transformer.{}: {} length {} is outside [1, max_len = {}]", op, what, ids.shape(1), max_len));
  }
  if (padding.dimension() != 0) {
    if (padding.dimension() != 2 || padding.shape(0) != ids.shape(0) || padding.shape(1) != ids.shape(1)) {
      throw ShapeError(fmt::format("Transformer.{}: the padding mask of {} is {}, expected {}", op, what,
                                   format_shape(shape_of(padding)), format_shape(shape_of(ids))));
    }
  }
}

bool given(const BoolArray& mask) { return mask.dimension() != 0; }

// A key padding mask for the attention layers: none when the caller gave none.
template <typename T>
nn::AttentionMask<T> padding_mask(const BoolArray& mask) {
  return given(mask) ? nn::AttentionMask<T>(mask) : nn::AttentionMask<T>();
}

}  // namespace

void TransformerOptions::validate() const {
  check_positive("Transformer: ", {{"src_vocab_size", src_vocab_size},
                                   {"tgt_vocab_size", tgt_vocab_size},
                                   {"d_model", d_model},
                                   {"nhead", nhead},
                                   {"num_encoder_layers", num_encoder_layers},
                                   {"num_decoder_layers", num_decoder_layers},
                                   {"dim_feedforward", dim_feedforward},
                                   {"max_len", max_len}});
  check_heads_divide("Transformer: ", d_model, nhead);
  check_dropouts("Transformer: ", {{"dropout", dropout}});
  for (auto [field, size] :
       {std::pair{"src_vocab_size", src_vocab_size}, std::pair{"tgt_vocab_size", tgt_vocab_size}}) {
    if (padding_idx < 0 || static_cast<std::size_t>(padding_idx) >= size) {
      throw std::invalid_argument(
          fmt::format("Transformer: padding_idx {} is outside {} = {}", padding_idx, field, size));
    }
  }
}

template <typename T>
Transformer<T>::Transformer(const TransformerOptions& o, Generator& gen) : options(o) {
  o.validate();
  dropout_gen_ = this->register_dropout_generator(gen);

  src_embedding = this->register_module("src_embedding",
                                        scaled_normal_embedding<T>(o.src_vocab_size, o.d_model, o.padding_idx, gen));
  tgt_embedding = this->register_module("tgt_embedding",
                                        scaled_normal_embedding<T>(o.tgt_vocab_size, o.d_model, o.padding_idx, gen));
  pos_encoding = this->register_module("pos_encoding", std::make_shared<nn::SinusoidalPositionalEncoding<T>>(
                                                           o.d_model, o.max_len, /*batch_first=*/true));
  dropout = this->register_module("dropout", std::make_shared<nn::Dropout<T>>(o.dropout, dropout_gen_));

  nn::TransformerLayerOptions layer = batch_first_layer(o);
  layer.layer_norm_eps = o.layer_norm_eps;
  layer.norm_first = o.norm_first;
  encoder = this->register_module(
      "encoder", std::make_shared<nn::TransformerEncoder<T>>(
                     layer, o.num_encoder_layers, gen, std::make_shared<nn::LayerNorm<T>>(o.d_model, o.layer_norm_eps),
                     dropout_gen_));
  decoder = this->register_module(
      "decoder", std::make_shared<nn::TransformerDecoder<T>>(
                     layer, o.num_decoder_layers, gen, std::make_shared<nn::LayerNorm<T>>(o.d_model, o.layer_norm_eps),
                     dropout_gen_));
  encoder->activation_checkpointing = o.activation_checkpointing;
  decoder->activation_checkpointing = o.activation_checkpointing;
  if (o.tie_output) {
    output_bias = this->register_parameter("output_bias", Tensor<T>::zeros({o.tgt_vocab_size}));
  } else {
    output_projection =
        this->register_module("output_projection", std::make_shared<nn::Linear<T>>(o.d_model, o.tgt_vocab_size, gen));
  }
}

template <typename T>
Tensor<T> Transformer<T>::embed(const nn::Embedding<T>& table, const xt::xarray<std::int64_t>& ids) const {
  return dropout->forward(pos_encoding->forward(scaled_lookup(table, ids)));
}

template <typename T>
Tensor<T> Transformer<T>::encode(const xt::xarray<std::int64_t>& src, const BoolArray& src_padding) const {
  check_ids("encode", "src", src, src_padding, options.max_len);
  const nn::AttentionMask<T> padding = padding_mask<T>(src_padding);
  return encoder->forward(embed(*src_embedding, src), {}, padding);
}

template <typename T>
Tensor<T> Transformer<T>::decode(const xt::xarray<std::int64_t>& tgt, const Tensor<T>& memory,
                                 const BoolArray& memory_padding, const BoolArray& tgt_padding) const {
  check_ids("decode", "tgt", tgt, tgt_padding, options.max_len);
  if (memory.dim() != 3 || memory.size(0) != tgt.shape(0) || memory.size(2) != options.d_model) {
    throw ShapeError(fmt::format("Transformer.decode: memory {} does not fit tgt {} and d_model {}",
                                 format_shape(memory.shape()), format_shape(shape_of(tgt)), options.d_model));
  }
  if (given(memory_padding) && (memory_padding.dimension() != 2 || memory_padding.shape(0) != memory.size(0) ||
                                memory_padding.shape(1) != memory.size(1))) {
    throw ShapeError(fmt::format("Transformer.decode: memory_padding {} does not fit memory {}",
                                 format_shape(shape_of(memory_padding)), format_shape(memory.shape())));
  }
  const nn::AttentionMask<T> tgt_pad = padding_mask<T>(tgt_padding);
  const nn::AttentionMask<T> mem_pad = padding_mask<T>(memory_padding);
  Tensor<T> x = decoder->forward(embed(*tgt_embedding, tgt), memory, {}, {}, tgt_pad, mem_pad,
                                 /*tgt_is_causal=*/true);
  return output_projection ? output_projection->forward(x) : linear(x, tgt_embedding->weight, output_bias);
}

template <typename T>
Tensor<T> Transformer<T>::forward(const xt::xarray<std::int64_t>& src, const xt::xarray<std::int64_t>& tgt,
                                  const BoolArray& src_padding, const BoolArray& tgt_padding) const {
  return decode(tgt, encode(src, src_padding), src_padding, tgt_padding);
}

template <typename T>
std::vector<std::shared_ptr<nn::TransformerDecoderLayer<T>>> Transformer<T>::decoder_layers() const {
  std::vector<std::shared_ptr<nn::TransformerDecoderLayer<T>>> out;
  for (std::size_t i = 0; i < decoder->layers->size(); ++i)
    out.push_back(decoder->layers->template at<nn::TransformerDecoderLayer<T>>(i));
  return out;
}

template <typename T>
std::vector<xt::xarray<T>> Transformer<T>::cross_attention(const xt::xarray<std::int64_t>& tgt, const Tensor<T>& memory,
                                                           const BoolArray& memory_padding) const {
  check_ids("cross_attention", "tgt", tgt, {}, options.max_len);
  NoGradGuard no_grad;
  const nn::AttentionMask<T> mem_pad = padding_mask<T>(memory_padding);
  std::vector<xt::xarray<T>> maps;
  Tensor<T> x = embed(*tgt_embedding, tgt);
  for (const auto& layer : decoder_layers()) {
    // The query of the cross-attention is the layer's state after its self-attention block, which
    // TransformerDecoderLayer::forward computes as below (see nn/transformer.hpp).
    const auto sa = [&](const Tensor<T>& h) {
      return layer->dropout1->forward(layer->self_attn->forward(h, h, h, {}, false, {}, true, true).first);
    };
    const Tensor<T> query = layer->options.norm_first ? layer->norm2->forward(x + sa(layer->norm1->forward(x)))
                                                      : layer->norm1->forward(x + sa(x));
    maps.push_back(layer->multihead_attn->forward(query, memory, memory, mem_pad, /*need_weights=*/true).second.data());
    x = layer->forward(x, memory, {}, {}, {}, mem_pad, /*tgt_is_causal=*/true);
  }
  return maps;
}

template class Transformer<float>;
template class Transformer<double>;

}  // namespace tapegrad::models
