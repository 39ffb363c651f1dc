/// @file
/// Embedding (torch.nn.Embedding): a table of num_embeddings rows looked up by integer ids; and
/// EmbeddingBag (torch.nn.EmbeddingBag): the sum or mean of the rows of each bag of ids.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

/// torch.nn.Embedding: weight [num_embeddings, embedding_dim] looked up by ids.
template <typename T>
class Embedding : public Module<T, Embedding<T>> {
 public:
  /// weight [num_embeddings, embedding_dim] from N(0, 1) with the padding_idx row zeroed, as torch.
  /// A negative padding_idx counts from the end (torch normalizes it the same way).
  Embedding(std::size_t num_embeddings, std::size_t embedding_dim, Generator& gen,
            std::optional<std::int64_t> padding_idx = std::nullopt);

  /// ids of any shape -> [*ids.shape, embedding_dim]; the padding row receives no gradient.
  Tensor<T> forward(const xt::xarray<std::int64_t>& ids) const;

  std::string name() const override { return "Embedding"; }
  std::string extra_repr() const override;

  std::size_t num_embeddings, embedding_dim;
  std::optional<std::int64_t> padding_idx;  ///< normalized to [0, num_embeddings)
  Tensor<T> weight;
};

extern template class Embedding<float>;
extern template class Embedding<double>;

/// How EmbeddingBag reduces a bag's rows (torch's mode='sum' | 'mean'; 'max' is not supported).
enum class EmbeddingBagMode { Sum, Mean };

/// torch.nn.EmbeddingBag over fixed-length bags, torch's 2-D input form: ids [..., K] holds one bag of
/// K ids per row of its last axis, and forward gives [..., embedding_dim], the sum or the mean of the
/// bag's rows, without forming the [..., K, embedding_dim] lookup (a bag-of-words or fastText model).
/// Ids equal to padding_idx count for nothing: they add no row, are not counted in a mean, and their
/// row gets no gradient; a bag of padding only gives zeros, as in torch.
template <typename T>
class EmbeddingBag : public Module<T, EmbeddingBag<T>> {
 public:
  /// weight [num_embeddings, embedding_dim] from N(0, 1) with the padding_idx row zeroed, as torch
  /// (the default mode is torch's too).
  EmbeddingBag(std::size_t num_embeddings, std::size_t embedding_dim, Generator& gen,
               EmbeddingBagMode mode = EmbeddingBagMode::Mean, std::optional<std::int64_t> padding_idx = std::nullopt);

  /// ids [..., K] -> [..., embedding_dim]. Ids outside [0, num_embeddings) throw ShapeError naming the
  /// id and its position; a 0-d ids throws.
  Tensor<T> forward(const xt::xarray<std::int64_t>& ids) const;
  /// With torch's per_sample_weights (mode Sum only, as torch): member k of a bag adds
  /// per_sample_weights[..., k] times its row. The weights have ids' shape and are constants.
  Tensor<T> forward(const xt::xarray<std::int64_t>& ids, xt::xarray<T> per_sample_weights) const;

  std::string name() const override { return "EmbeddingBag"; }
  std::string extra_repr() const override;

  std::size_t num_embeddings, embedding_dim;
  EmbeddingBagMode mode;
  std::optional<std::int64_t> padding_idx;  ///< normalized to [0, num_embeddings)
  Tensor<T> weight;
};

extern template class EmbeddingBag<float>;
extern template class EmbeddingBag<double>;

}  // namespace tapegrad::nn
