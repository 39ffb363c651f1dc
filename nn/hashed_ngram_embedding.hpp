/// @file
/// HashedNgramEmbedding: fastText's n-gram embeddings (Joulin et al. 2017), the hashed n-grams ending
/// at each position added to a sequence's token embeddings, so that a model sees "not bad" as well as
/// "not" and "bad".
#pragma once

#include <cstdint>
#include <string>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/masking.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/nn/ngram_hash.hpp"

namespace tapegrad::nn {

/// forward(ids [B, L], padding_mask [B, L]) -> [B, L, embedding_dim]: at each position, the sum of the
/// table rows of the n-grams (n = 2 .. max_n) that end there (see ngram_buckets). Row 0 stands for "no
/// n-gram": it adds nothing and receives no gradient. weight [num_buckets, embedding_dim] starts from
/// N(0, init_std^2) (row 0 zero).
template <typename T>
class HashedNgramEmbedding : public Module<T> {
 public:
  HashedNgramEmbedding(std::size_t num_buckets, std::size_t embedding_dim, std::size_t max_n, Generator& gen,
                       double init_std = 1.0);

  Tensor<T> forward(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask) const;

  std::string name() const override { return "HashedNgramEmbedding"; }
  std::string extra_repr() const override;

  std::size_t num_buckets, embedding_dim, max_n;
  Tensor<T> weight;
};

extern template class HashedNgramEmbedding<float>;
extern template class HashedNgramEmbedding<double>;

}  // namespace tapegrad::nn
