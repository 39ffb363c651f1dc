/// @file
/// Embedding (torch.nn.Embedding): a table of num_embeddings rows looked up by integer ids.
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

}  // namespace tapegrad::nn
