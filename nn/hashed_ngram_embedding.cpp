#include "tapegrad/nn/hashed_ngram_embedding.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "tapegrad/autograd/embedding.hpp"
#include "tapegrad/autograd/shape.hpp"

namespace tapegrad::nn {

std::uint64_t ngram_hash(const std::int64_t* tokens, std::size_t n) {
  std::uint64_t h = 14695981039346656037ULL;
  const auto mix = [&h](std::uint8_t byte) {
    h ^= byte;
    h *= 1099511628211ULL;
  };
  mix(static_cast<std::uint8_t>(n));
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = static_cast<std::uint64_t>(tokens[i]);
    for (int byte = 0; byte < 8; ++byte) mix(static_cast<std::uint8_t>(v >> (8 * byte)));
  }
  return h;
}

xt::xarray<std::int64_t> ngram_buckets(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask,
                                       std::size_t num_buckets, std::size_t max_n) {
  if (num_buckets < 2) throw std::invalid_argument(fmt::format("ngram_buckets: num_buckets {} < 2", num_buckets));
  if (max_n < 2) throw std::invalid_argument(fmt::format("ngram_buckets: max_n {} < 2", max_n));
  if (ids.dimension() != 2 || shape_of(ids) != shape_of(padding_mask)) {
    throw std::invalid_argument(fmt::format("ngram_buckets: ids {} and padding_mask {} must both be [batch, length]",
                                            format_shape(shape_of(ids)), format_shape(shape_of(padding_mask))));
  }
  const std::size_t batch = ids.shape(0), length = ids.shape(1), orders = max_n - 1;
  xt::xarray<std::int64_t> out = xt::zeros<std::int64_t>({batch, length, orders});
  const std::int64_t* id = ids.data();
  const bool* pad = padding_mask.data();
  std::int64_t* o = out.data();
  for (std::size_t b = 0; b < batch; ++b) {
    std::size_t run = 0;  // real tokens ending at t, counted back to the last padding
    for (std::size_t t = 0; t < length; ++t) {
      const std::size_t at = b * length + t;
      run = pad[at] ? 0 : run + 1;
      for (std::size_t n = 2; n <= max_n && n <= run; ++n) {
        o[at * orders + (n - 2)] = static_cast<std::int64_t>(1 + ngram_hash(id + at + 1 - n, n) % (num_buckets - 1));
      }
    }
  }
  return out;
}

xt::xarray<std::int64_t> document_ngram_buckets(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask,
                                                std::size_t num_buckets, std::size_t max_n) {
  if (num_buckets < 2) {
    throw std::invalid_argument(fmt::format("document_ngram_buckets: num_buckets {} < 2", num_buckets));
  }
  if (max_n < 1) throw std::invalid_argument("document_ngram_buckets: max_n 0 < 1");
  if (ids.dimension() != 2 || shape_of(ids) != shape_of(padding_mask)) {
    throw std::invalid_argument(
        fmt::format("document_ngram_buckets: ids {} and padding_mask {} must both be [batch, length]",
                    format_shape(shape_of(ids)), format_shape(shape_of(padding_mask))));
  }
  const std::size_t batch = ids.shape(0), length = ids.shape(1);
  const std::int64_t* id = ids.data();
  const bool* pad = padding_mask.data();
  std::vector<std::vector<std::int64_t>> rows(batch);
  std::size_t widest = 0;
  for (std::size_t b = 0; b < batch; ++b) {
    auto& row = rows[b];
    std::size_t run = 0;  // real tokens ending at t, counted back to the last padding
    for (std::size_t t = 0; t < length; ++t) {
      const std::size_t at = b * length + t;
      run = pad[at] ? 0 : run + 1;
      for (std::size_t n = 1; n <= max_n && n <= run; ++n) {
        row.push_back(static_cast<std::int64_t>(1 + ngram_hash(id + at + 1 - n, n) % (num_buckets - 1)));
      }
    }
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    widest = std::max(widest, row.size());
  }
  xt::xarray<std::int64_t> out = xt::zeros<std::int64_t>({batch, widest});
  for (std::size_t b = 0; b < batch; ++b) std::copy(rows[b].begin(), rows[b].end(), out.data() + b * widest);
  return out;
}

template <typename T>
HashedNgramEmbedding<T>::HashedNgramEmbedding(std::size_t num_buckets_, std::size_t embedding_dim_, std::size_t max_n_,
                                              Generator& gen, double init_std)
    : num_buckets(num_buckets_), embedding_dim(embedding_dim_), max_n(max_n_) {
  if (num_buckets < 2 || embedding_dim == 0 || max_n < 2) {
    throw std::invalid_argument(
        fmt::format("HashedNgramEmbedding: num_buckets {} must be at least 2, embedding_dim {} positive and max_n {} "
                    "at least 2",
                    num_buckets, embedding_dim, max_n));
  }
  auto w = Tensor<T>::normal({num_buckets, embedding_dim}, T(0), static_cast<T>(init_std), gen);
  std::fill(w.mutable_data().data(), w.mutable_data().data() + embedding_dim, T(0));
  weight = this->register_parameter("weight", w);
}

template <typename T>
Tensor<T> HashedNgramEmbedding<T>::forward(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask) const {
  // Each position is a bag of its n-grams' buckets; bucket 0 ("no n-gram") adds nothing.
  return embedding_bag_sum(weight, ngram_buckets(ids, padding_mask, num_buckets, max_n), std::int64_t{0});
}

template <typename T>
std::string HashedNgramEmbedding<T>::extra_repr() const {
  return fmt::format("{}, {}, max_n={}", num_buckets, embedding_dim, max_n);
}

template class HashedNgramEmbedding<float>;
template class HashedNgramEmbedding<double>;

template <typename T>
HashedNgramBag<T>::HashedNgramBag(std::size_t num_buckets_, std::size_t out_features_, std::size_t max_n_)
    : num_buckets(num_buckets_), out_features(out_features_), max_n(max_n_) {
  if (num_buckets < 2 || out_features == 0 || max_n < 1) {
    throw std::invalid_argument(
        fmt::format("HashedNgramBag: num_buckets {} must be at least 2, out_features {} positive and max_n {} at "
                    "least 1",
                    num_buckets, out_features, max_n));
  }
  weight = this->register_parameter("weight", Tensor<T>::zeros({num_buckets, out_features}));
}

template <typename T>
Tensor<T> HashedNgramBag<T>::forward(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask) const {
  return embedding_bag_sum(weight, document_ngram_buckets(ids, padding_mask, num_buckets, max_n), std::int64_t{0});
}

template <typename T>
std::string HashedNgramBag<T>::extra_repr() const {
  return fmt::format("{}, {}, max_n={}", num_buckets, out_features, max_n);
}

template class HashedNgramBag<float>;
template class HashedNgramBag<double>;

}  // namespace tapegrad::nn
