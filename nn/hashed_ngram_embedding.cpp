#include "tapegrad/nn/hashed_ngram_embedding.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "tapegrad/autograd/embedding.hpp"

namespace tapegrad::nn {

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

}  // namespace tapegrad::nn
