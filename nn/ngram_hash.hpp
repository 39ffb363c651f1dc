/// @file
/// Hashed token n-grams (fastText's hashing trick, Joulin et al. 2017): the hash of an n-gram of token
/// ids and its bucket in a table, the n-grams ending at each position of a batch, and each row's set of
/// distinct n-grams.
#pragma once

#include <cstdint>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/masking.hpp"

namespace tapegrad::nn {

/// The hash of the n-gram tokens[0..n): 64-bit FNV-1a (offset basis 14695981039346656037, prime
/// 1099511628211) over the byte n, then each token id as 8 little-endian bytes (two's complement).
/// Any implementation that follows this sentence reproduces tapegrad's buckets.
std::uint64_t ngram_hash(const std::int64_t* tokens, std::size_t n);

/// The bucket of the n-gram tokens[0..n) in a table of num_buckets rows: 1 + ngram_hash(tokens, n) %
/// (num_buckets - 1), never 0 (the row that stands for "no n-gram"). num_buckets must be at least 2.
inline std::int64_t ngram_bucket(const std::int64_t* tokens, std::size_t n, std::size_t num_buckets) {
  return static_cast<std::int64_t>(1 + ngram_hash(tokens, n) % (num_buckets - 1));
}

/// The bucket of every n-gram of `ids` [B, L] ending at each position, for n = 2 .. max_n:
/// [B, L, max_n - 1], entry (b, t, n - 2) = ngram_bucket(ids[b, t-n+1 .. t], n, num_buckets)
/// when those n positions are all real tokens (padding_mask false), else 0 ("no n-gram").
/// Throws std::invalid_argument for num_buckets < 2, max_n < 2 or mismatched shapes.
xt::xarray<std::int64_t> ngram_buckets(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask,
                                       std::size_t num_buckets, std::size_t max_n);

/// The distinct buckets of every n-gram (n = 1 .. max_n, single tokens included) of each row's real
/// tokens: [B, K], K the largest count of the batch, each row sorted ascending and padded with bucket 0
/// ("no n-gram"). An n-gram's bucket is ngram_bucket(its tokens, n, num_buckets), as in
/// ngram_buckets; an n-gram never spans a padding position. A document is thus a set of n-grams: a
/// repeated n-gram counts once (the binarized features of NBSVM, Wang and Manning 2012), and the rows
/// are bags for embedding_bag with padding_idx 0.
/// Throws std::invalid_argument for num_buckets < 2, max_n < 1 or mismatched shapes.
xt::xarray<std::int64_t> document_ngram_buckets(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask,
                                                std::size_t num_buckets, std::size_t max_n);

}  // namespace tapegrad::nn
