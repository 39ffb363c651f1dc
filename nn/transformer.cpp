#include "tapegrad/nn/transformer.hpp"

#include <fmt/format.h>

#include <initializer_list>
#include <stdexcept>
#include <utility>

#include "tapegrad/autograd/checkpoint.hpp"
#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad::nn {

namespace {
MultiheadAttentionOptions attention_options(const TransformerLayerOptions& o) {
  MultiheadAttentionOptions a(o.d_model, o.nhead);
  a.dropout = o.attention_dropout.value_or(o.dropout);
  a.batch_first = o.batch_first;
  return a;
}

// Registers the parts torch's encoder and decoder layers both hold, in torch's order of names and of draws
// from gen: the attentions, linear1, dropout, linear2, then a norm and a dropout per residual block
// (norm1, norm2, ..., dropout1, dropout2, ...), all dropouts drawing from dropout_gen.
template <typename T, typename Layer>
void register_parts(Layer& layer, const TransformerLayerOptions& o, Generator& gen,
                    const std::shared_ptr<Generator>& dropout_gen,
                    std::initializer_list<std::pair<const char*, std::shared_ptr<MultiheadAttention<T>>*>> attentions,
                    std::initializer_list<std::shared_ptr<LayerNorm<T>>*> norms,
                    std::initializer_list<std::shared_ptr<Dropout<T>>*> dropouts) {
  for (const auto& [name, attention] : attentions) {
    *attention =
        layer.register_module(name, std::make_shared<MultiheadAttention<T>>(attention_options(o), gen, dropout_gen));
  }
  layer.linear1 = layer.register_module("linear1", std::make_shared<Linear<T>>(o.d_model, o.dim_feedforward, gen));
  layer.dropout = layer.register_module(
      "dropout", std::make_shared<Dropout<T>>(o.activation_dropout.value_or(o.dropout), dropout_gen));
  layer.linear2 = layer.register_module("linear2", std::make_shared<Linear<T>>(o.dim_feedforward, o.d_model, gen));
  int i = 0;
  for (auto* norm : norms) {
    *norm =
        layer.register_module(fmt::format("norm{}", ++i), std::make_shared<LayerNorm<T>>(o.d_model, o.layer_norm_eps));
  }
  i = 0;
  for (auto* d : dropouts)
    *d = layer.register_module(fmt::format("dropout{}", ++i), std::make_shared<Dropout<T>>(o.dropout, dropout_gen));
}

// A residual block around block: x + block(norm(x)) pre-LN, norm(x + block(x)) post-LN (the add fused
// into the norm).
template <typename T, typename Block>
Tensor<T> residual(const Tensor<T>& x, const LayerNorm<T>& norm, bool norm_first, const Block& block) {
  if (norm_first) return x + block(norm.forward(x));
  return norm.forward(x, block(x));
}

// The position-wise feed-forward linear2(dropout(activation(linear1(x)))).
template <typename T>
Tensor<T> feed_forward(const Linear<T>& linear1, const Dropout<T>& dropout, const Linear<T>& linear2,
                       Activation activation, const Tensor<T>& x) {
  return linear2.forward(dropout.forward(linear1.forward(x, activation)));
}

// The random generators a checkpointed block of `layer` draws from, restored when backward runs it again.
template <typename T>
std::vector<std::shared_ptr<Generator>> generators_of(const Module<T>& layer) {
  std::vector<std::shared_ptr<Generator>> generators;
  for (const auto& named : layer.named_generators()) generators.push_back(named.second);
  return generators;
}

}  // namespace

template <typename T>
FeedForward<T>::FeedForward(std::size_t d_model, std::size_t dim_feedforward, Generator& gen, double p,
                            Activation activation, std::shared_ptr<Generator> dropout_gen)
    : activation(activation) {
  linear1 = this->register_module("linear1", std::make_shared<Linear<T>>(d_model, dim_feedforward, gen));
  dropout = this->register_module(
      "dropout",
      std::make_shared<Dropout<T>>(p, dropout_gen ? dropout_gen : std::make_shared<Generator>(gen.next_u64())));
  linear2 = this->register_module("linear2", std::make_shared<Linear<T>>(dim_feedforward, d_model, gen));
}

template <typename T>
Tensor<T> FeedForward<T>::forward(const Tensor<T>& x) const {
  return feed_forward(*linear1, *dropout, *linear2, activation, x);
}

template <typename T>
std::string FeedForward<T>::extra_repr() const {
  if (activation == Activation::GELUTanh) return "activation=gelu(approximate=tanh)";
  return activation == Activation::ReLU ? "activation=relu" : "activation=gelu";
}

template <typename T>
TransformerEncoderLayer<T>::TransformerEncoderLayer(const TransformerLayerOptions& o, Generator& gen,
                                                    std::shared_ptr<Generator> dropout_gen)
    : options(o), dropout_gen_(this->register_dropout_generator(gen, std::move(dropout_gen))) {
  register_parts<T>(*this, o, gen, dropout_gen_, {{"self_attn", &self_attn}}, {&norm1, &norm2}, {&dropout1, &dropout2});
}

template <typename T>
template <typename SelfAttention>
Tensor<T> TransformerEncoderLayer<T>::sa_block(const Tensor<T>& x, const SelfAttention& self_attention) const {
  return residual(x, *norm1, options.norm_first,
                  [&](const Tensor<T>& y) { return dropout1->forward(self_attention(y)); });
}

template <typename T>
Tensor<T> TransformerEncoderLayer<T>::feed_forward_block(const Tensor<T>& x) const {
  return residual(x, *norm2, options.norm_first, [&](const Tensor<T>& y) {
    return dropout2->forward(feed_forward(*linear1, *dropout, *linear2, options.activation, y));
  });
}

template <typename T>
Tensor<T> TransformerEncoderLayer<T>::attention_block(const Tensor<T>& x, const AttentionMask<T>& src_mask,
                                                      const AttentionMask<T>& src_key_padding_mask,
                                                      bool is_causal) const {
  return sa_block(x, [&](const Tensor<T>& y) {
    return self_attn
        ->forward(y, y, y, src_key_padding_mask, /*need_weights=*/false, src_mask,
                  /*average_attn_weights=*/false, is_causal)
        .first;
  });
}

template <typename T>
Tensor<T> TransformerEncoderLayer<T>::forward(const Tensor<T>& src, const AttentionMask<T>& src_mask,
                                              const AttentionMask<T>& src_key_padding_mask, bool is_causal,
                                              Tensor<T>* attn_weights) const {
  return feed_forward_block(sa_block(src, [&](const Tensor<T>& x) {
    auto [out, weights] = self_attn->forward(x, x, x, src_key_padding_mask, /*need_weights=*/attn_weights != nullptr,
                                             src_mask, /*average_attn_weights=*/false, is_causal);
    if (attn_weights) *attn_weights = weights;
    return out;
  }));
}

template <typename T>
Tensor<T> TransformerEncoderLayer<T>::forward_incremental(const Tensor<T>& src, KVCache<T>& cache) const {
  return feed_forward_block(
      sa_block(src, [&](const Tensor<T>& x) { return self_attn->forward_incremental(x, cache); }));
}

template <typename T>
TransformerDecoderLayer<T>::TransformerDecoderLayer(const TransformerLayerOptions& o, Generator& gen,
                                                    std::shared_ptr<Generator> dropout_gen)
    : options(o), dropout_gen_(this->register_dropout_generator(gen, std::move(dropout_gen))) {
  register_parts<T>(*this, o, gen, dropout_gen_, {{"self_attn", &self_attn}, {"multihead_attn", &multihead_attn}},
                    {&norm1, &norm2, &norm3}, {&dropout1, &dropout2, &dropout3});
}

template <typename T>
Tensor<T> TransformerDecoderLayer<T>::self_attention_block(const Tensor<T>& x, const AttentionMask<T>& tgt_mask,
                                                           const AttentionMask<T>& tgt_key_padding_mask,
                                                           bool tgt_is_causal) const {
  return residual(x, *norm1, options.norm_first, [&](const Tensor<T>& y) {
    return dropout1->forward(
        self_attn->forward(y, y, y, tgt_key_padding_mask, /*need_weights=*/false, tgt_mask, true, tgt_is_causal).first);
  });
}

template <typename T>
Tensor<T> TransformerDecoderLayer<T>::cross_attention_block(const Tensor<T>& x, const Tensor<T>& memory,
                                                            const AttentionMask<T>& memory_mask,
                                                            const AttentionMask<T>& memory_key_padding_mask) const {
  return residual(x, *norm2, options.norm_first, [&](const Tensor<T>& y) {
    return dropout2->forward(
        multihead_attn->forward(y, memory, memory, memory_key_padding_mask, /*need_weights=*/false, memory_mask).first);
  });
}

template <typename T>
Tensor<T> TransformerDecoderLayer<T>::feed_forward_block(const Tensor<T>& x) const {
  return residual(x, *norm3, options.norm_first, [&](const Tensor<T>& y) {
    return dropout3->forward(feed_forward(*linear1, *dropout, *linear2, options.activation, y));
  });
}

template <typename T>
Tensor<T> TransformerDecoderLayer<T>::forward(const Tensor<T>& tgt, const Tensor<T>& memory,
                                              const AttentionMask<T>& tgt_mask, const AttentionMask<T>& memory_mask,
                                              const AttentionMask<T>& tgt_key_padding_mask,
                                              const AttentionMask<T>& memory_key_padding_mask,
                                              bool tgt_is_causal) const {
  return feed_forward_block(
      cross_attention_block(self_attention_block(tgt, tgt_mask, tgt_key_padding_mask, tgt_is_causal), memory,
                            memory_mask, memory_key_padding_mask));
}

namespace detail {

template <typename T, typename Layer, typename Derived>
TransformerStack<T, Layer, Derived>::TransformerStack(const TransformerLayerOptions& layer, std::size_t num_layers,
                                                      Generator& gen, std::shared_ptr<LayerNorm<T>> final_norm,
                                                      std::shared_ptr<Generator> dropout_gen)
    : dropout_gen_(this->register_dropout_generator(gen, std::move(dropout_gen))) {
  layers = this->register_module("layers", std::make_shared<ModuleList<T>>());
  for (std::size_t i = 0; i < num_layers; ++i) {
    typed_layers_.push_back(std::make_shared<Layer>(layer, gen, dropout_gen_));
    layers->push_back(typed_layers_.back());
  }
  if (final_norm) norm = this->register_module("norm", std::move(final_norm));
}

}  // namespace detail

template <typename T>
TransformerEncoder<T>::TransformerEncoder(const TransformerLayerOptions& layer, std::size_t num_layers, Generator& gen,
                                          std::shared_ptr<LayerNorm<T>> norm, std::shared_ptr<Generator> dropout_gen)
    : detail::TransformerStack<T, TransformerEncoderLayer<T>, TransformerEncoder<T>>(
          layer, num_layers, gen, std::move(norm), std::move(dropout_gen)) {}

template <typename T>
Tensor<T> TransformerEncoder<T>::forward(const Tensor<T>& src, const AttentionMask<T>& mask,
                                         const AttentionMask<T>& src_key_padding_mask, bool is_causal,
                                         std::vector<Tensor<T>>* attn_weights) const {
  Tensor<T> x = src;
  if (this->activation_checkpointing && !attn_weights && is_grad_enabled()) {
    // Per residual block rather than per layer: the feed-forward's activations alone are about half a
    // layer's, and only one block's are alive at a time in backward.
    for (const auto& layer : this->typed_layers_) {
      const auto generators = generators_of(*layer);
      x = checkpoint<T>(
          [layer, mask, src_key_padding_mask, is_causal](const std::vector<Tensor<T>>& in) {
            return layer->attention_block(in[0], mask, src_key_padding_mask, is_causal);
          },
          {x}, generators);
      x = checkpoint<T>([layer](const std::vector<Tensor<T>>& in) { return layer->feed_forward_block(in[0]); }, {x},
                        generators);
    }
    return this->normed(x);
  }
  for (const auto& layer : this->typed_layers_) {
    Tensor<T> weights;
    x = layer->forward(x, mask, src_key_padding_mask, is_causal, attn_weights ? &weights : nullptr);
    if (attn_weights) attn_weights->push_back(weights);
  }
  return this->normed(x);
}

template <typename T>
Tensor<T> TransformerEncoder<T>::forward_incremental(const Tensor<T>& src, std::vector<KVCache<T>>& caches) const {
  if (caches.empty()) caches.resize(this->typed_layers_.size());
  if (caches.size() != this->typed_layers_.size()) {
    throw std::invalid_argument(fmt::format("TransformerEncoder.forward_incremental: {} caches for {} layers",
                                            caches.size(), this->typed_layers_.size()));
  }
  Tensor<T> x = src;
  for (std::size_t i = 0; i < this->typed_layers_.size(); ++i)
    x = this->typed_layers_[i]->forward_incremental(x, caches[i]);
  return this->normed(x);
}

template <typename T>
TransformerDecoder<T>::TransformerDecoder(const TransformerLayerOptions& layer, std::size_t num_layers, Generator& gen,
                                          std::shared_ptr<LayerNorm<T>> norm, std::shared_ptr<Generator> dropout_gen)
    : detail::TransformerStack<T, TransformerDecoderLayer<T>, TransformerDecoder<T>>(
          layer, num_layers, gen, std::move(norm), std::move(dropout_gen)) {}

template <typename T>
Tensor<T> TransformerDecoder<T>::forward(const Tensor<T>& tgt, const Tensor<T>& memory,
                                         const AttentionMask<T>& tgt_mask, const AttentionMask<T>& memory_mask,
                                         const AttentionMask<T>& tgt_key_padding_mask,
                                         const AttentionMask<T>& memory_key_padding_mask, bool tgt_is_causal) const {
  Tensor<T> x = tgt;
  if (this->activation_checkpointing && is_grad_enabled()) {
    for (const auto& layer : this->typed_layers_) {
      const auto generators = generators_of(*layer);
      x = checkpoint<T>(
          [layer, tgt_mask, tgt_key_padding_mask, tgt_is_causal](const std::vector<Tensor<T>>& in) {
            return layer->self_attention_block(in[0], tgt_mask, tgt_key_padding_mask, tgt_is_causal);
          },
          {x}, generators);
      x = checkpoint<T>(
          [layer, memory_mask, memory_key_padding_mask](const std::vector<Tensor<T>>& in) {
            return layer->cross_attention_block(in[0], in[1], memory_mask, memory_key_padding_mask);
          },
          {x, memory}, generators);
      x = checkpoint<T>([layer](const std::vector<Tensor<T>>& in) { return layer->feed_forward_block(in[0]); }, {x},
                        generators);
    }
    return this->normed(x);
  }
  for (const auto& layer : this->typed_layers_)
    x = layer->forward(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask, tgt_is_causal);
  return this->normed(x);
}

template class FeedForward<float>;
template class FeedForward<double>;
template class TransformerEncoderLayer<float>;
template class TransformerEncoderLayer<double>;
template class TransformerDecoderLayer<float>;
template class TransformerDecoderLayer<double>;
template class detail::TransformerStack<float, TransformerEncoderLayer<float>, TransformerEncoder<float>>;
template class detail::TransformerStack<double, TransformerEncoderLayer<double>, TransformerEncoder<double>>;
template class detail::TransformerStack<float, TransformerDecoderLayer<float>, TransformerDecoder<float>>;
template class detail::TransformerStack<double, TransformerDecoderLayer<double>, TransformerDecoder<double>>;
template class TransformerEncoder<float>;
template class TransformerEncoder<double>;
template class TransformerDecoder<float>;
template class TransformerDecoder<double>;

}  // namespace tapegrad::nn
