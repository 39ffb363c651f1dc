#include "tapegrad/nn/embedding.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

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
                              std::optional<std::int64_t> padding, bool include_last_offset)
    : num_embeddings(num),
      embedding_dim(dim),
      mode(mode),
      padding_idx(normalized_padding("EmbeddingBag", padding, num)),
      include_last_offset(include_last_offset) {
  weight = this->register_parameter("weight", normal_table<T>(num, dim, gen, padding_idx));
}

template <typename T>
Tensor<T> EmbeddingBag<T>::forward(const xt::xarray<std::int64_t>& ids) const {
  if (ids.dimension() == 0)
    throw ShapeError("EmbeddingBag: ids must have at least one dim (the bag's), got a 0-d array");
  return embedding_bag(weight, ids, mode, padding_idx);
}

template <typename T>
Tensor<T> EmbeddingBag<T>::forward(const xt::xarray<std::int64_t>& ids, const Tensor<T>& per_sample_weights) const {
  if (mode != EmbeddingBagMode::Sum)
    throw std::invalid_argument(
        fmt::format("EmbeddingBag: per_sample_weights are only supported with mode Sum, as in torch, got mode {}",
                    mode_name(mode)));
  if (ids.dimension() == 0)
    throw ShapeError("EmbeddingBag: ids must have at least one dim (the bag's), got a 0-d array");
  return embedding_bag(weight, ids, mode, padding_idx, per_sample_weights);
}

template <typename T>
Tensor<T> EmbeddingBag<T>::forward(const xt::xarray<std::int64_t>& input,
                                   const xt::xarray<std::int64_t>& offsets) const {
  return embedding_bag(weight, input, offsets, mode, padding_idx, include_last_offset);
}

template <typename T>
Tensor<T> EmbeddingBag<T>::forward(const xt::xarray<std::int64_t>& input, const xt::xarray<std::int64_t>& offsets,
                                   const Tensor<T>& per_sample_weights) const {
  return embedding_bag(weight, input, offsets, mode, padding_idx, include_last_offset, per_sample_weights);
}

template <typename T>
std::string EmbeddingBag<T>::extra_repr() const {
  // As torch: include_last_offset is not shown.
  std::string s = fmt::format("{}, {}, mode={}", num_embeddings, embedding_dim, mode_name(mode));
  if (padding_idx) s += fmt::format(", padding_idx={}", *padding_idx);
  return s;
}

template class EmbeddingBag<float>;
template class EmbeddingBag<double>;

}  // namespace tapegrad::nn
