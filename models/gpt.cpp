#include "tapegrad/models/gpt.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/models/layer_options.hpp"
#include "tapegrad/models/option_checks.hpp"

namespace tapegrad::models {

void GPTOptions::validate() const {
  check_stack_sizes("GPT: ", *this, {{"dim_feedforward", dim_feedforward}});
  check_heads_divide("GPT: ", d_model, nhead);
  check_dropouts("GPT: ", {{"dropout", dropout},
                           {"attention_dropout", attention_dropout},
                           {"embedding_dropout", embedding_dropout.value_or(dropout)},
                           {"activation_dropout", activation_dropout.value_or(dropout)}});
  if (!(layer_norm_eps > 0.0)) {
    throw std::invalid_argument(fmt::format("GPT: layer_norm_eps must be positive, got {}", layer_norm_eps));
  }
  check_padding_idx("GPT: ", padding_idx, vocab_size);
}

template <typename T>
GPT<T>::GPT(const GPTOptions& o, Generator& gen) : options(o) {
  o.validate();
  dropout_gen_ = this->register_dropout_generator(gen);
  this->register_embedding(*this, o, gen);
  this->register_positions_and_dropout(*this, o, o.embedding_dropout.value_or(o.dropout), gen, dropout_gen_);

  nn::TransformerLayerOptions layer = batch_first_layer(o);
  layer.attention_dropout = o.attention_dropout;
  layer.activation_dropout = o.activation_dropout;
  layer.layer_norm_eps = o.layer_norm_eps;
  layer.norm_first = true;
  encoder = this->register_module(
      "encoder",
      std::make_shared<nn::TransformerEncoder<T>>(
          layer, o.num_layers, gen, std::make_shared<nn::LayerNorm<T>>(o.d_model, o.layer_norm_eps), dropout_gen_));
  encoder->activation_checkpointing = o.activation_checkpointing;
  if (o.output_bias) output_bias = this->register_parameter("output_bias", Tensor<T>::zeros({o.vocab_size}));
  if (!o.tie_embeddings) {
    lm_head = this->register_module("lm_head", std::make_shared<nn::Linear<T>>(o.d_model, o.vocab_size, gen, false));
  }
}

template <typename T>
Tensor<T> GPT<T>::embed(const xt::xarray<std::int64_t>& ids, std::size_t offset) const {
  const nn::Embedding<T>& table = *this->embedding;
  return this->add_positions(options.scale_embeddings ? scaled_lookup(table, ids) : table.forward(ids), offset);
}

template <typename T>
Tensor<T> GPT<T>::project(const Tensor<T>& hidden) const {
  return linear(hidden, lm_head ? lm_head->weight : this->embedding->weight, output_bias);
}

template <typename T>
Tensor<T> GPT<T>::forward(const xt::xarray<std::int64_t>& ids) const {
  this->check_ids("GPT", "forward", ids, 0);
  return project(encoder->forward(embed(ids, 0), {}, {}, /*is_causal=*/true));
}

template <typename T>
Tensor<T> GPT<T>::forward_rows(const xt::xarray<std::int64_t>& ids, const xt::xarray<std::int64_t>& rows) const {
  this->check_ids("GPT", "forward_rows", ids, 0);
  return project(this->gather_rows(encoder->forward(embed(ids, 0), {}, {}, /*is_causal=*/true), rows));
}

template <typename T>
Tensor<T> GPT<T>::advance(const char* op, const xt::xarray<std::int64_t>& ids, Cache& cache) const {
  this->check_cache("GPT", op, ids, cache);
  return encoder->forward_incremental(embed(ids, cache.length()), cache.layers);
}

template <typename T>
Tensor<T> GPT<T>::forward_incremental(const xt::xarray<std::int64_t>& ids, Cache& cache) const {
  return project(advance("forward_incremental", ids, cache));
}

template <typename T>
Tensor<T> GPT<T>::next_token_logits(const xt::xarray<std::int64_t>& ids, Cache& cache) const {
  return project(this->last_positions(advance("next_token_logits", ids, cache)));
}

template class GPT<float>;
template class GPT<double>;

}  // namespace tapegrad::models
