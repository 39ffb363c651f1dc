/// @file
/// CausalLM: what a decoder-only language model offers to decoding (models::generate) and to a training
/// program (the logits of chosen rows): its context, its vocabulary, a full forward and an incremental one
/// with a per-layer key/value cache. GPT and Llama implement it.
///
/// An abstract interface rather than a template over the model type: generate() and the programs that
/// use a model hold it by reference without knowing which one it is (train_lm loads either from a run
/// folder), generate() is compiled once, and a user's own model can be decoded by implementing five
/// functions. The virtual calls happen once per forward (once per generated token), never per element.
#pragma once

#include <cstdint>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/tensor.hpp"
#include "tapegrad/nn/attention.hpp"

namespace tapegrad::models {

/// The cached state of every layer of a decoder-only model for incremental decoding: one key/value
/// cache per self-attention layer, sized by the model on the first call.
template <typename T>
struct DecoderCache {
  std::vector<nn::KVCache<T>> layers;
  /// The number of positions already processed.
  std::size_t length() const { return layers.empty() ? 0 : layers.front().length(); }
};

/// A causal (decoder-only) language model: the logits at position t depend on tokens 0..t only.
template <typename T>
class CausalLM {
 public:
  using Cache = DecoderCache<T>;

  virtual ~CausalLM() = default;

  /// The context: the number of positions a sequence may have.
  virtual std::size_t max_len() const = 0;
  virtual std::size_t vocab_size() const = 0;

  /// ids [B, L] (1 <= L <= max_len()) -> logits [B, L, vocab_size()]; row t predicts token t + 1.
  virtual Tensor<T> forward(const xt::xarray<std::int64_t>& ids) const = 0;
  /// The logits of chosen positions only: rows = flat positions b * L + t -> [rows, vocab_size()], equal to
  /// those rows of forward(ids) (a loss needs no logits at padding; they are a step's largest tensor).
  virtual Tensor<T> forward_rows(const xt::xarray<std::int64_t>& ids, const xt::xarray<std::int64_t>& rows) const = 0;
  /// ids [B, n]: the tokens at positions cache.length() .. cache.length() + n - 1 -> their logits
  /// [B, n, vocab_size()], equal to forward() of the whole sequence at those rows (in eval mode, up to
  /// rounding); appends their keys and values to cache.
  virtual Tensor<T> forward_incremental(const xt::xarray<std::int64_t>& ids, Cache& cache) const = 0;
  /// The same, projecting only the last of the n positions: the logits [B, vocab_size()] of the token that
  /// follows, which is all that decoding reads.
  virtual Tensor<T> next_token_logits(const xt::xarray<std::int64_t>& ids, Cache& cache) const = 0;

 protected:
  CausalLM() = default;
  CausalLM(const CausalLM&) = default;
  CausalLM& operator=(const CausalLM&) = default;

  /// The checks every implementation makes, with messages "<model>.<op>: ...": ids [batch, length >= 1]
  /// at positions offset .. offset + length - 1 within max_len() (ShapeError naming the positions), and,
  /// for a non-empty cache, the cache's batch (ShapeError naming both). Ids outside the vocabulary are
  /// named by the embedding lookup.
  void check_ids(const char* model, const char* op, const xt::xarray<std::int64_t>& ids, std::size_t offset) const;
  void check_cache(const char* model, const char* op, const xt::xarray<std::int64_t>& ids, const Cache& cache) const;
  /// Rows of hidden states [B, L, d] as [rows, d] (rows = flat positions b * L + t), by a lookup, with the
  /// lookup's gradient: what forward_rows projects.
  static Tensor<T> gather_rows(const Tensor<T>& hidden, const xt::xarray<std::int64_t>& rows);
  /// The last position of each sequence of hidden states [B, n, d] as [B, d]: what next_token_logits projects.
  static Tensor<T> last_positions(const Tensor<T>& hidden);
};

extern template class CausalLM<float>;
extern template class CausalLM<double>;

}  // namespace tapegrad::models
