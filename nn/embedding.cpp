#include "tapegrad/nn/embedding.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/embedding.hpp"

namespace tapegrad::nn {

namespace {

// padding_idx normalized to [0, num) (a negative one counts from the end, as torch does); `who` names
// the module in the error.
std::optional<std::int64_t> normalized_padding(const char* who, std::optional<std::int64_t> padding, std::size_t num) {
  if (!padding) return std::nullopt;
  const auto n = static_cast<std::int64_t>(num);
  if (*padding >= n || *padding < -n)
    throw ShapeError(fmt::format("{}: padding_idx {} is out of range for {} embeddings", who, *padding, num));
  return *padding < 0 ? *padding + n : *padding;
}

// torch's initialization of an embedding table: N(0, 1), the padding row zeroed.
template <typename T>
Tensor<T> normal_table(std::size_t num, std::size_t dim, Generator& gen, std::optional<std::int64_t> padding_idx) {
  Tensor<T> w = Tensor<T>::normal({num, dim}, T(0), T(1), gen);
  if (padding_idx) {
    T* row = w.mutable_data().data() + static_cast<std::size_t>(*padding_idx) * dim;
    std::fill(row, row + dim, T(0));
  }
  return w;
}

}  // namespace

template <typename T>
Embedding<T>::Embedding(std::size_t num, std::size_t dim, Generator& gen, std::optional<std::int64_t> padding)
    : num_embeddings(num), embedding_dim(dim), padding_idx(normalized_padding("Embedding", padding, num)) {
  weight = this->register_parameter("weight", normal_table<T>(num, dim, gen, padding_idx));
}

template <typename T>
Tensor<T> Embedding<T>::forward(const xt::xarray<std::int64_t>& ids) const {
  return embedding(weight, ids, padding_idx);
}

template <typename T>
std::string Embedding<T>::extra_repr() const {
  std::string s = fmt::format("{}, {}", num_embeddings, embedding_dim);
  if (padding_idx) s += fmt::format(", padding_idx={}", *padding_idx);
  return s;
}

template class Embedding<float>;
template class Embedding<double>;

template <typename T>
EmbeddingBag<T>::EmbeddingBag(std::size_t num, std::size_t dim, Generator& gen, EmbeddingBagMode mode,
                              std::optional<std::int64_t> padding)
    : num_embeddings(num),
      embedding_dim(dim),
      mode(mode),
      padding_idx(normalized_padding("EmbeddingBag", padding, num)) {
  weight = this->register_parameter("weight", normal_table<T>(num, dim, gen, padding_idx));
}

template <typename T>
Tensor<T> EmbeddingBag<T>::forward(const xt::xarray<std::int64_t>& ids) const {
  if (ids.dimension() == 0)
    throw ShapeError("EmbeddingBag: ids must have at least one dim (the bag's), got a 0-d array");
  Tensor<T> sum = embedding_bag_sum(weight, ids, padding_idx);
  if (mode == EmbeddingBagMode::Sum) return sum;
  // The mean over the bag's members that are not padding; a bag of padding only divides its zeros by 1.
  Shape count_shape(ids.shape().begin(), ids.shape().end());
  const std::size_t k = count_shape.back();
  count_shape.back() = 1;
  xt::xarray<T> count = xt::xarray<T>::from_shape(count_shape);
  const std::int64_t* id = ids.data();
  for (std::size_t bag = 0; bag < count.size(); ++bag) {
    std::size_t members = 0;
    for (std::size_t j = 0; j < k; ++j) members += !(padding_idx && id[bag * k + j] == *padding_idx);
    count.data()[bag] = static_cast<T>(std::max<std::size_t>(members, 1));
  }
  return div(sum, Tensor<T>(std::move(count)));
}

template <typename T>
Tensor<T> EmbeddingBag<T>::forward(const xt::xarray<std::int64_t>& ids, xt::xarray<T> per_sample_weights) const {
  if (mode != EmbeddingBagMode::Sum)
    throw std::invalid_argument("EmbeddingBag: per_sample_weights are only supported with mode Sum, as in torch");
  if (ids.dimension() == 0)
    throw ShapeError("EmbeddingBag: ids must have at least one dim (the bag's), got a 0-d array");
  return embedding_bag_sum(weight, ids, padding_idx, std::move(per_sample_weights));
}

template <typename T>
std::string EmbeddingBag<T>::extra_repr() const {
  std::string s =
      fmt::format("{}, {}, mode={}", num_embeddings, embedding_dim, mode == EmbeddingBagMode::Sum ? "sum" : "mean");
  if (padding_idx) s += fmt::format(", padding_idx={}", *padding_idx);
  return s;
}

template class EmbeddingBag<float>;
template class EmbeddingBag<double>;

}  // namespace tapegrad::nn
