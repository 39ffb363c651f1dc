/// @file
/// Embedding (torch.nn.Embedding): a table of num_embeddings rows looked up by integer ids; and
/// EmbeddingBag (torch.nn.EmbeddingBag): the sum, mean or maximum of the rows of each bag of ids.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/embedding.hpp"
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

/// How EmbeddingBag reduces a bag's rows (torch's mode='sum' | 'mean' | 'max'), autograd's enum.
using tapegrad::EmbeddingBagMode;

/// torch.nn.EmbeddingBag in both of torch's input forms: fixed-length bags, ids [..., K] with one bag
/// of K ids per row of its last axis, giving [..., embedding_dim]; or a 1-D input cut into bags by
/// offsets, giving [bags, embedding_dim]. Each bag's rows are summed, averaged or reduced by their
/// maximum (autograd's embedding_bag) without forming the lookup of every member (a bag-of-words or
/// fastText model). Ids equal to padding_idx count for nothing: they add no row, are not counted in a
/// mean, and their row gets no gradient; a bag of padding only, or an empty bag, gives zeros, as in
/// torch.
template <typename T>
class EmbeddingBag : public Module<T, EmbeddingBag<T>> {
 public:
  /// weight [num_embeddings, embedding_dim] from N(0, 1) with the padding_idx row zeroed, as torch
  /// (the default mode is torch's too).
  /// include_last_offset: offsets passed to forward end with the end of the last bag (torch's CSR form).
  EmbeddingBag(std::size_t num_embeddings, std::size_t embedding_dim, Generator& gen,
               EmbeddingBagMode mode = EmbeddingBagMode::Mean, std::optional<std::int64_t> padding_idx = std::nullopt,
               bool include_last_offset = false);

  /// ids [..., K] -> [..., embedding_dim]. Ids outside [0, num_embeddings) throw ShapeError naming the
  /// id and its position; a 0-d ids throws.
  Tensor<T> forward(const xt::xarray<std::int64_t>& ids) const;
  /// With torch's per_sample_weights (ids' shape; mode Sum only, as torch): member k of a bag adds
  /// per_sample_weights[..., k] times its row; a per_sample_weights that requires grad gets its
  /// gradient (autograd's embedding_bag).
  Tensor<T> forward(const xt::xarray<std::int64_t>& ids, const Tensor<T>& per_sample_weights) const;
  /// torch's offsets form: input [N] ids, bag b from input[offsets[b]] up to input[offsets[b + 1]]
  /// excluded -> [bags, embedding_dim]; errors as autograd's embedding_bag.
  Tensor<T> forward(const xt::xarray<std::int64_t>& input, const xt::xarray<std::int64_t>& offsets) const;
  /// The offsets form with per_sample_weights (input's shape; mode Sum only).
  Tensor<T> forward(const xt::xarray<std::int64_t>& input, const xt::xarray<std::int64_t>& offsets,
                    const Tensor<T>& per_sample_weights) const;

  std::string name() const override { return "EmbeddingBag"; }
  std::string extra_repr() const override;

  std::size_t num_embeddings, embedding_dim;
  EmbeddingBagMode mode;
  std::optional<std::int64_t> padding_idx;  ///< normalized to [0, num_embeddings)
  bool include_last_offset;
  Tensor<T> weight;
};

extern template class EmbeddingBag<float>;
extern template class EmbeddingBag<double>;

}  // namespace tapegrad::nn
