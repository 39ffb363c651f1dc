/// @file
/// HashedNgramEmbedding: fastText-style embeddings of hashed token n-grams (Joulin et al. 2017),
/// added to a sequence's token embeddings so that a model sees "not bad" as well as "not" and "bad".
#pragma once

#include <cstdint>
#include <string>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/masking.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

/// The hash of the n-gram tokens[0..n): 64-bit FNV-1a (offset basis 14695981039346656037, prime
/// 1099511628211) over the byte n, then each token id as 8 little-endian bytes (two's complement).
/// Any implementation that follows this sentence reproduces tapegrad's buckets.
std::uint64_t ngram_hash(const std::int64_t* tokens, std::size_t n);

/// The bucket of every n-gram of `ids` [B, L] ending at each position, for n = 2 .. max_n:
/// [B, L, max_n - 1], entry (b, t, n - 2) = 1 + ngram_hash(ids[b, t-n+1 .. t], n) % (num_buckets - 1)
/// when those n positions are all real tokens (padding_mask false), else 0 ("no n-gram").
/// Throws std::invalid_argument for num_buckets < 2, max_n < 2 or mismatched shapes.
xt::xarray<std::int64_t> ngram_buckets(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask,
                                       std::size_t num_buckets, std::size_t max_n);

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
