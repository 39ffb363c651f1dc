/// @file
/// Position information added to token embeddings: the fixed sinusoidal table of "Attention Is All
/// You Need" and a learned table; and rotary embeddings (RoPE), which rotate queries and keys instead.
#pragma once

#include <string>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

/// PE[pos, 2i] = sin(pos / 10000^(2i / d_model)), PE[pos, 2i + 1] = cos(pos / 10000^(2i / d_model)).
///
/// The table is a non-persistent buffer "pe" [max_len, d_model]: it is not trained and is a pure
/// function of (d_model, max_len), so it is rebuilt at construction rather than stored. Keeping it out
/// of state_dict() makes checkpoints smaller, lets a model with a different max_len load them, and
/// leaves state_dict() with exactly the trained tensors of the equivalent torch model.
template <typename T>
class SinusoidalPositionalEncoding : public Module<T, SinusoidalPositionalEncoding<T>> {
 public:
  SinusoidalPositionalEncoding(std::size_t d_model, std::size_t max_len = 5000, bool batch_first = false);

  /// x [L, B, D] (or [B, L, D] when batch_first) plus PE[offset : offset + L], broadcast over the
  /// batch. offset > 0 places x after `offset` earlier positions (incremental decoding).
  Tensor<T> forward(const Tensor<T>& x, std::size_t offset = 0) const;

  std::string name() const override { return "SinusoidalPositionalEncoding"; }
  std::string extra_repr() const override;

  std::size_t d_model, max_len;
  bool batch_first;
  Tensor<T> pe;
};

/// A trained table "weight" [max_len, d_model] drawn from N(0, 1) like an Embedding's; forward adds
/// weight[offset : offset + L] the same way as the sinusoidal encoding.
template <typename T>
class LearnedPositionalEmbedding : public Module<T, LearnedPositionalEmbedding<T>> {
 public:
  LearnedPositionalEmbedding(std::size_t max_len, std::size_t d_model, Generator& gen, bool batch_first = false);

  Tensor<T> forward(const Tensor<T>& x, std::size_t offset = 0) const;

  std::string name() const override { return "LearnedPositionalEmbedding"; }
  std::string extra_repr() const override;

  std::size_t max_len, d_model;
  bool batch_first;
  Tensor<T> weight;
};

/// Rotary position embeddings (RoPE) of LLaMA / GPT-NeoX in the "rotate half" layout: forward(q or k)
/// rotates each head's [length, head_dim] rows by position-dependent angles (autograd's
/// rotary_embedding), so that a query at position m and a key at n have a dot product depending on
/// m - n only.
///
/// The tables are precomputed non-persistent buffers "cos" and "sin" [max_len, head_dim / 2]: a forward
/// then reads them instead of evaluating 2 * length * head_dim / 2 transcendentals per call (for every
/// layer's q and k alike), and they are a pure function of (head_dim, base, max_len), so, as in
/// Hugging Face's LlamaRotaryEmbedding, they stay out of state_dict(), which holds only trained tensors.
/// The cost is max_len * head_dim values (1 MB in float for 2048 positions of head_dim 128).
template <typename T>
class RotaryEmbedding : public Module<T, RotaryEmbedding<T>> {
 public:
  /// Throws std::invalid_argument for an odd or zero head_dim or a base not > 0, naming the value.
  explicit RotaryEmbedding(std::size_t head_dim, double base = 10000.0, std::size_t max_len = 2048);

  /// x [batch, heads, length, head_dim] rotated at positions offset to offset + length - 1 (offset: the
  /// length of a key/value cache). Throws ShapeError naming the positions past max_len.
  Tensor<T> forward(const Tensor<T>& x, std::size_t offset = 0) const;

  std::string name() const override { return "RotaryEmbedding"; }
  std::string extra_repr() const override;

  std::size_t head_dim;
  double base;
  std::size_t max_len;
  Tensor<T> cos, sin;  ///< [max_len, head_dim / 2]
};

extern template class SinusoidalPositionalEncoding<float>;
extern template class SinusoidalPositionalEncoding<double>;
extern template class LearnedPositionalEmbedding<float>;
extern template class LearnedPositionalEmbedding<double>;
extern template class RotaryEmbedding<float>;
extern template class RotaryEmbedding<double>;

}  // namespace tapegrad::nn
