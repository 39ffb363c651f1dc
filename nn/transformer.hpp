/// @file
/// Transformer blocks laid out exactly as torch.nn's: TransformerEncoderLayer, TransformerDecoderLayer
/// and their stacks, with torch's flat submodule names (self_attn, linear1, dropout, linear2, norm1,
/// ..., dropout1, ...) so that state_dict names match; plus FeedForward, the position-wise block as a
/// standalone module for users (the layers do not use it, since torch's layers hold its parts directly).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/nn/activation.hpp"
#include "tapegrad/nn/attention.hpp"
#include "tapegrad/nn/container.hpp"
#include "tapegrad/nn/dropout.hpp"
#include "tapegrad/nn/layer_norm.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

/// torch's constructor arguments of TransformerEncoderLayer / TransformerDecoderLayer, with its defaults.
struct TransformerLayerOptions {
  TransformerLayerOptions(std::size_t d_model, std::size_t nhead) : d_model(d_model), nhead(nhead) {}
  std::size_t d_model, nhead;
  std::size_t dim_feedforward = 2048;
  double dropout = 0.1;
  /// Dropout on the attention weights; torch's layers use `dropout` there too, which is the default.
  std::optional<double> attention_dropout;
  /// Dropout between the feed-forward block's two linear layers; torch's layers use `dropout` there too,
  /// which is the default (GPT-2 has none there: 0).
  std::optional<double> activation_dropout;
  Activation activation = Activation::ReLU;
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;  ///< pre-LN when true, post-LN (the original Transformer) when false
};

/// linear2(dropout(activation(linear1(x)))).
template <typename T>
class FeedForward : public Module<T, FeedForward<T>> {
 public:
  FeedForward(std::size_t d_model, std::size_t dim_feedforward, Generator& gen, double dropout = 0.1,
              Activation activation = Activation::ReLU, std::shared_ptr<Generator> dropout_gen = nullptr);
  Tensor<T> forward(const Tensor<T>& x) const;
  std::string name() const override { return "FeedForward"; }
  std::string extra_repr() const override;

  Activation activation;
  std::shared_ptr<Linear<T>> linear1;
  std::shared_ptr<Dropout<T>> dropout;
  std::shared_ptr<Linear<T>> linear2;
};

/// All the layer's dropouts (and its attention dropout) share one generator: dropout_gen, or one
/// seeded from gen. Save dropout_generator()->state() in a checkpoint to resume the same masks.
template <typename T>
class TransformerEncoderLayer : public Module<T, TransformerEncoderLayer<T>> {
 public:
  TransformerEncoderLayer(const TransformerLayerOptions& options, Generator& gen,
                          std::shared_ptr<Generator> dropout_gen = nullptr);

  /// post-LN: x = norm1(x + sa(x)); x = norm2(x + ff(x)).
  /// pre-LN:  x = x + sa(norm1(x)); x = x + ff(norm2(x)).
  /// sa(x) = dropout1(self_attn(x, x, x)), ff(x) = dropout2(linear2(dropout(activation(linear1(x))))).
  /// Masks and is_causal as in MultiheadAttention::forward (is_causal without src_mask applies the
  /// causal mask). attn_weights, when given (for inspecting a model; not in torch), receives the
  /// self-attention's per-head weights [B, H, L, S] as applied to the values (after attention dropout).
  Tensor<T> forward(const Tensor<T>& src, const AttentionMask<T>& src_mask = {},
                    const AttentionMask<T>& src_key_padding_mask = {}, bool is_causal = false,
                    Tensor<T>* attn_weights = nullptr) const;
  /// The causal layer on new positions after those held in cache (incremental decoding): the same
  /// blocks as forward(..., is_causal=true) with self_attn->forward_incremental as sa. Call eval() first
  /// for outputs equal to a full causal pass.
  Tensor<T> forward_incremental(const Tensor<T>& src, KVCache<T>& cache) const;
  /// The two residual blocks forward() is made of, x -> x + sa(norm1(x)) (or norm1(x + sa(x))) and
  /// x -> x + ff(norm2(x)) (or norm2(x + ff(x))): forward(src, ...) is
  /// feed_forward_block(attention_block(src, ...)), op for op, for checkpointing them one at a time.
  ///@{
  Tensor<T> attention_block(const Tensor<T>& x, const AttentionMask<T>& src_mask = {},
                            const AttentionMask<T>& src_key_padding_mask = {}, bool is_causal = false) const;
  Tensor<T> feed_forward_block(const Tensor<T>& x) const;
  ///@}

  std::string name() const override { return "TransformerEncoderLayer"; }
  const std::shared_ptr<Generator>& dropout_generator() const { return dropout_gen_; }

  TransformerLayerOptions options;
  std::shared_ptr<MultiheadAttention<T>> self_attn;
  std::shared_ptr<Linear<T>> linear1;
  std::shared_ptr<Dropout<T>> dropout;
  std::shared_ptr<Linear<T>> linear2;
  std::shared_ptr<LayerNorm<T>> norm1, norm2;
  std::shared_ptr<Dropout<T>> dropout1, dropout2;

 private:
  /// The residual block around an attention function sa (which ends before dropout1).
  template <typename SelfAttention>
  Tensor<T> sa_block(const Tensor<T>& x, const SelfAttention& sa) const;

  std::shared_ptr<Generator> dropout_gen_;
};

/// torch.nn.TransformerDecoderLayer: self-attention, cross-attention over the
/// encoder's memory and the feed-forward block, post-LN or pre-LN.
template <typename T>
class TransformerDecoderLayer : public Module<T, TransformerDecoderLayer<T>> {
 public:
  TransformerDecoderLayer(const TransformerLayerOptions& options, Generator& gen,
                          std::shared_ptr<Generator> dropout_gen = nullptr);

  /// post-LN: x = norm1(x + sa(x)); x = norm2(x + mha(x, memory)); x = norm3(x + ff(x)).
  /// pre-LN:  x = x + sa(norm1(x)); x = x + mha(norm2(x), memory); x = x + ff(norm3(x)).
  /// sa, mha and ff end in dropout1, dropout2 and dropout3. tgt_is_causal as is_causal of
  /// MultiheadAttention::forward for the self-attention.
  Tensor<T> forward(const Tensor<T>& tgt, const Tensor<T>& memory, const AttentionMask<T>& tgt_mask = {},
                    const AttentionMask<T>& memory_mask = {}, const AttentionMask<T>& tgt_key_padding_mask = {},
                    const AttentionMask<T>& memory_key_padding_mask = {}, bool tgt_is_causal = false) const;
  /// The three residual blocks forward() is made of: forward(tgt, memory, ...) is
  /// feed_forward_block(cross_attention_block(self_attention_block(tgt, ...), memory, ...)), op for op,
  /// for checkpointing them one at a time.
  ///@{
  Tensor<T> self_attention_block(const Tensor<T>& x, const AttentionMask<T>& tgt_mask = {},
                                 const AttentionMask<T>& tgt_key_padding_mask = {}, bool tgt_is_causal = false) const;
  Tensor<T> cross_attention_block(const Tensor<T>& x, const Tensor<T>& memory, const AttentionMask<T>& memory_mask = {},
                                  const AttentionMask<T>& memory_key_padding_mask = {}) const;
  Tensor<T> feed_forward_block(const Tensor<T>& x) const;
  ///@}

  std::string name() const override { return "TransformerDecoderLayer"; }
  const std::shared_ptr<Generator>& dropout_generator() const { return dropout_gen_; }

  TransformerLayerOptions options;
  std::shared_ptr<MultiheadAttention<T>> self_attn, multihead_attn;
  std::shared_ptr<Linear<T>> linear1;
  std::shared_ptr<Dropout<T>> dropout;
  std::shared_ptr<Linear<T>> linear2;
  std::shared_ptr<LayerNorm<T>> norm1, norm2, norm3;
  std::shared_ptr<Dropout<T>> dropout1, dropout2, dropout3;

 private:
  std::shared_ptr<Generator> dropout_gen_;
};

namespace detail {

/// What TransformerEncoder and TransformerDecoder share: num_layers layers named layers.0, layers.1,
/// ..., then the optional final `norm`. Unlike torch, which deep-copies one layer (so every layer starts
/// with identical weights), each layer here is built from the options with its own draws from gen. All
/// layers share one dropout generator.
template <typename T, typename Layer, typename Derived>
class TransformerStack : public Module<T, Derived> {
 public:
  const std::shared_ptr<Generator>& dropout_generator() const { return dropout_gen_; }

  std::shared_ptr<ModuleList<T>> layers;
  std::shared_ptr<LayerNorm<T>> norm;  ///< null when there is no final norm
  /// Each residual block of each layer of forward() runs under tapegrad::checkpoint when grad mode is
  /// on: its activations are recomputed in backward instead of kept, which trades one more forward of
  /// the layers for the memory of all but the blocks' inputs. The gradients are unchanged, bit for bit.
  bool activation_checkpointing = false;

 protected:
  TransformerStack(const TransformerLayerOptions& layer, std::size_t num_layers, Generator& gen,
                   std::shared_ptr<LayerNorm<T>> norm, std::shared_ptr<Generator> dropout_gen);
  /// The final norm applied to x, or x when there is none.
  Tensor<T> normed(const Tensor<T>& x) const { return norm ? norm->forward(x) : x; }

  std::vector<std::shared_ptr<Layer>> typed_layers_;
  std::shared_ptr<Generator> dropout_gen_;
};

}  // namespace detail

/// torch.nn.TransformerEncoder: num_layers encoder layers, optionally a final norm (see
/// detail::TransformerStack). activation_checkpointing applies when no attention weights are asked for.
template <typename T>
class TransformerEncoder : public detail::TransformerStack<T, TransformerEncoderLayer<T>, TransformerEncoder<T>> {
 public:
  TransformerEncoder(const TransformerLayerOptions& layer, std::size_t num_layers, Generator& gen,
                     std::shared_ptr<LayerNorm<T>> norm = nullptr, std::shared_ptr<Generator> dropout_gen = nullptr);

  /// attn_weights, when given, receives one [B, H, L, S] tensor per layer (see TransformerEncoderLayer).
  Tensor<T> forward(const Tensor<T>& src, const AttentionMask<T>& mask = {},
                    const AttentionMask<T>& src_key_padding_mask = {}, bool is_causal = false,
                    std::vector<Tensor<T>>* attn_weights = nullptr) const;
  /// Causal incremental decoding: src [B, n, E] are the positions after those held in caches (one
  /// KVCache per layer; an empty vector is sized on the first call), then the final norm.
  Tensor<T> forward_incremental(const Tensor<T>& src, std::vector<KVCache<T>>& caches) const;

  std::string name() const override { return "TransformerEncoder"; }
};

/// torch.nn.TransformerDecoder: num_layers decoder layers, optionally a final norm (see
/// detail::TransformerStack). With activation_checkpointing, memory is an input of the
/// cross-attention's checkpoints, so its gradient flows back into the encoder.
template <typename T>
class TransformerDecoder : public detail::TransformerStack<T, TransformerDecoderLayer<T>, TransformerDecoder<T>> {
 public:
  TransformerDecoder(const TransformerLayerOptions& layer, std::size_t num_layers, Generator& gen,
                     std::shared_ptr<LayerNorm<T>> norm = nullptr, std::shared_ptr<Generator> dropout_gen = nullptr);

  Tensor<T> forward(const Tensor<T>& tgt, const Tensor<T>& memory, const AttentionMask<T>& tgt_mask = {},
                    const AttentionMask<T>& memory_mask = {}, const AttentionMask<T>& tgt_key_padding_mask = {},
                    const AttentionMask<T>& memory_key_padding_mask = {}, bool tgt_is_causal = false) const;

  std::string name() const override { return "TransformerDecoder"; }
};

extern template class FeedForward<float>;
extern template class FeedForward<double>;
extern template class TransformerEncoderLayer<float>;
extern template class TransformerEncoderLayer<double>;
extern template class TransformerDecoderLayer<float>;
extern template class TransformerDecoderLayer<double>;
extern template class detail::TransformerStack<float, TransformerEncoderLayer<float>, TransformerEncoder<float>>;
extern template class detail::TransformerStack<double, TransformerEncoderLayer<double>, TransformerEncoder<double>>;
extern template class detail::TransformerStack<float, TransformerDecoderLayer<float>, TransformerDecoder<float>>;
extern template class detail::TransformerStack<double, TransformerDecoderLayer<double>, TransformerDecoder<double>>;
extern template class TransformerEncoder<float>;
extern template class TransformerEncoder<double>;
extern template class TransformerDecoder<float>;
extern template class TransformerDecoder<double>;

}  // namespace tapegrad::nn
