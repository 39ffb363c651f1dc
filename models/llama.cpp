#include "tapegrad/models/llama.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "tapegrad/autograd/checkpoint.hpp"
#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/indexing.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/autograd/shape_ops.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/models/embedding.hpp"
#include "tapegrad/models/option_checks.hpp"

namespace tapegrad::models {

void LlamaOptions::validate() const {
  check_stack_sizes("Llama: ", *this, {{"hidden", hidden}});
  if (head_dim == 0) check_heads_divide("Llama: ", d_model, nhead);
  if (head_dim == 0 && (d_model / nhead) % 2 != 0) {
    throw std::invalid_argument(
        fmt::format("Llama: the head size d_model / nhead = {} / {} = {} must be even for rotary embeddings", d_model,
                    nhead, d_model / nhead));
  }
  if (head_dim % 2 != 0) {
    throw std::invalid_argument(fmt::format("Llama: head_dim ({}) must be even for rotary embeddings", head_dim));
  }
  if (nhead % kv_heads() != 0) {
    throw std::invalid_argument(
        fmt::format("Llama: nhead ({}) must be divisible by num_kv_heads ({})", nhead, kv_heads()));
  }
  if (!(rope_base > 0.0))
    throw std::invalid_argument(fmt::format("Llama: rope_base must be positive, got {}", rope_base));
  if (!(rms_norm_eps > 0.0)) {
    throw std::invalid_argument(fmt::format("Llama: rms_norm_eps must be positive, got {}", rms_norm_eps));
  }
  check_dropouts("Llama: ", {{"dropout", dropout}});
  check_padding_idx("Llama: ", padding_idx, vocab_size);
}

template <typename T>
LlamaAttention<T>::LlamaAttention(const LlamaOptions& o, Generator& gen)
    : nhead(o.nhead), num_kv_heads(o.kv_heads()), head_dim(o.head_size()) {
  const auto projection = [&](const char* name, std::size_t in, std::size_t out) {
    return this->register_module(name, std::make_shared<nn::Linear<T>>(in, out, gen, o.attention_bias));
  };
  q_proj = projection("q_proj", o.d_model, nhead * head_dim);
  k_proj = projection("k_proj", o.d_model, num_kv_heads * head_dim);
  v_proj = projection("v_proj", o.d_model, num_kv_heads * head_dim);
  o_proj = projection("o_proj", nhead * head_dim, o.d_model);
}

template <typename T>
Tensor<T> LlamaAttention<T>::forward(const Tensor<T>& x, const nn::RotaryEmbedding<T>& rope,
                                     nn::KVCache<T>& cache) const {
  const auto batch = static_cast<std::int64_t>(x.size(0)), n = static_cast<std::int64_t>(x.size(1));
  const auto d = static_cast<std::int64_t>(head_dim);
  const std::size_t past = cache.length();
  // RoPE rotates [B, H, n, D]; the cache and the attention op take the heads side by side, [B, n, H * D]
  // (as MultiheadAttention's), so that one KVCache type serves GPT and Llama.
  const auto rotated = [&](const Tensor<T>& t, std::size_t count) {
    const auto heads = static_cast<std::int64_t>(count);
    // One new position (decoding a token): [B, 1, H, D] and [B, H, 1, D] are the same memory, so no
    // permute copies on the path that runs once per token and layer.
    if (n == 1) return reshape(rope.forward(reshape(t, {batch, heads, 1, d}), past), {batch, 1, heads * d});
    const Tensor<T> split = permute(reshape(t, {batch, n, heads, d}), {0, 2, 1, 3});
    return reshape(permute(rope.forward(split, past), {0, 2, 1, 3}), {batch, n, heads * d});
  };
  // Grouped-query attention: each key/value head repeated for its nhead / num_kv_heads query heads
  // ([B, n, Hkv * D] -> [B, n, H * D]), Hugging Face's repeat_kv.
  const auto repeated = [&](const Tensor<T>& t) {
    if (num_kv_heads == nhead) return t;
    xt::xarray<std::int64_t> source = xt::xarray<std::int64_t>::from_shape({nhead});
    for (std::size_t h = 0; h < nhead; ++h) source(h) = static_cast<std::int64_t>(h / (nhead / num_kv_heads));
    const Tensor<T> heads = index_select(reshape(t, {batch, n, static_cast<std::int64_t>(num_kv_heads), d}), 2, source);
    return reshape(heads, {batch, n, static_cast<std::int64_t>(nhead) * d});
  };
  return o_proj->forward(nn::cached_causal_attention(rotated(q_proj->forward(x), nhead),
                                                     repeated(rotated(k_proj->forward(x), num_kv_heads)),
                                                     repeated(v_proj->forward(x)), nhead, cache));
}

template <typename T>
LlamaMLP<T>::LlamaMLP(std::size_t d_model, std::size_t hidden, Generator& gen, bool bias) {
  gate_proj = this->register_module("gate_proj", std::make_shared<nn::Linear<T>>(d_model, hidden, gen, bias));
  up_proj = this->register_module("up_proj", std::make_shared<nn::Linear<T>>(d_model, hidden, gen, bias));
  down_proj = this->register_module("down_proj", std::make_shared<nn::Linear<T>>(hidden, d_model, gen, bias));
}

template <typename T>
Tensor<T> LlamaMLP<T>::forward(const Tensor<T>& x) const {
  return down_proj->forward(silu(gate_proj->forward(x)) * up_proj->forward(x));
}

template <typename T>
LlamaDecoderLayer<T>::LlamaDecoderLayer(const LlamaOptions& o, Generator& gen, std::shared_ptr<Generator> dropout_gen) {
  self_attn = this->register_module("self_attn", std::make_shared<LlamaAttention<T>>(o, gen));
  mlp = this->register_module("mlp", std::make_shared<LlamaMLP<T>>(o.d_model, o.hidden, gen, o.mlp_bias));
  input_layernorm =
      this->register_module("input_layernorm", std::make_shared<nn::RMSNorm<T>>(o.d_model, o.rms_norm_eps));
  post_attention_layernorm =
      this->register_module("post_attention_layernorm", std::make_shared<nn::RMSNorm<T>>(o.d_model, o.rms_norm_eps));
  dropout = this->register_module("dropout", std::make_shared<nn::Dropout<T>>(o.dropout, std::move(dropout_gen)));
}

template <typename T>
Tensor<T> LlamaDecoderLayer<T>::forward(const Tensor<T>& x, const nn::RotaryEmbedding<T>& rope,
                                        nn::KVCache<T>& cache) const {
  return feed_forward_block(attention_block(x, rope, cache));
}

template <typename T>
Tensor<T> LlamaDecoderLayer<T>::attention_block(const Tensor<T>& x, const nn::RotaryEmbedding<T>& rope,
                                                nn::KVCache<T>& cache) const {
  return x + dropout->forward(self_attn->forward(input_layernorm->forward(x), rope, cache));
}

template <typename T>
Tensor<T> LlamaDecoderLayer<T>::feed_forward_block(const Tensor<T>& h) const {
  return h + dropout->forward(mlp->forward(post_attention_layernorm->forward(h)));
}

template <typename T>
Llama<T>::Llama(const LlamaOptions& o, Generator& gen) : options(o) {
  o.validate();
  dropout_gen_ = this->register_dropout_generator(gen);
  embed_tokens =
      this->register_module("embed_tokens", scaled_normal_embedding<T>(o.vocab_size, o.d_model, o.padding_idx, gen));
  layers = this->register_module("layers", std::make_shared<nn::ModuleList<T>>());
  for (std::size_t i = 0; i < o.num_layers; ++i) {
    typed_layers_.push_back(std::make_shared<LlamaDecoderLayer<T>>(o, gen, dropout_gen_));
    layers->push_back(typed_layers_.back());
  }
  norm = this->register_module("norm", std::make_shared<nn::RMSNorm<T>>(o.d_model, o.rms_norm_eps));
  if (!o.tie_embeddings) {
    lm_head = this->register_module("lm_head", std::make_shared<nn::Linear<T>>(o.d_model, o.vocab_size, gen, false));
  }
  rotary_emb = this->register_module("rotary_emb",
                                     std::make_shared<nn::RotaryEmbedding<T>>(o.head_size(), o.rope_base, o.max_len));
}

template <typename T>
Tensor<T> Llama<T>::advance(const char* op, const xt::xarray<std::int64_t>& ids, DecoderCache<T>& cache,
                            bool scratch) const {
  this->check_cache("Llama", op, ids, cache);
  if (cache.layers.empty()) cache.layers.resize(typed_layers_.size());
  if (cache.layers.size() != typed_layers_.size()) {
    throw std::invalid_argument(fmt::format("Llama.{}: the cache holds {} layers, the model has {}", op,
                                            cache.layers.size(), typed_layers_.size()));
  }
  Tensor<T> x = embed_tokens->forward(ids);
  if (scratch && options.activation_checkpointing && is_grad_enabled()) {
    const std::vector<std::shared_ptr<Generator>> generators{dropout_gen_};
    for (const auto& layer : typed_layers_) {
      // Per residual block, as nn::TransformerEncoder; each run of the attention starts from an empty cache.
      x = checkpoint<T>(
          [layer, rope = rotary_emb](const std::vector<Tensor<T>>& in) {
            nn::KVCache<T> fresh;
            return layer->attention_block(in[0], *rope, fresh);
          },
          {x}, generators);
      x = checkpoint<T>([layer](const std::vector<Tensor<T>>& in) { return layer->feed_forward_block(in[0]); }, {x},
                        generators);
    }
    return norm->forward(x);
  }
  for (std::size_t i = 0; i < typed_layers_.size(); ++i) x = typed_layers_[i]->forward(x, *rotary_emb, cache.layers[i]);
  return norm->forward(x);
}

template <typename T>
Tensor<T> Llama<T>::project(const Tensor<T>& hidden) const {
  return lm_head ? lm_head->forward(hidden) : linear(hidden, embed_tokens->weight);
}

template <typename T>
Tensor<T> Llama<T>::forward(const xt::xarray<std::int64_t>& ids) const {
  DecoderCache<T> scratch;  // the keys and values of this call only
  return project(advance("forward", ids, scratch, /*scratch=*/true));
}

template <typename T>
Tensor<T> Llama<T>::forward_rows(const xt::xarray<std::int64_t>& ids, const xt::xarray<std::int64_t>& rows) const {
  DecoderCache<T> scratch;
  return project(this->gather_rows(advance("forward_rows", ids, scratch, /*scratch=*/true), rows));
}

template <typename T>
Tensor<T> Llama<T>::forward_incremental(const xt::xarray<std::int64_t>& ids, DecoderCache<T>& cache) const {
  return project(advance("forward_incremental", ids, cache));
}

template <typename T>
Tensor<T> Llama<T>::next_token_logits(const xt::xarray<std::int64_t>& ids, DecoderCache<T>& cache) const {
  return project(this->last_positions(advance("next_token_logits", ids, cache)));
}

template class LlamaAttention<float>;
template class LlamaAttention<double>;
template class LlamaMLP<float>;
template class LlamaMLP<double>;
template class LlamaDecoderLayer<float>;
template class LlamaDecoderLayer<double>;
template class Llama<float>;
template class Llama<double>;

}  // namespace tapegrad::models
