#include "tapegrad/nn/embedding.hpp"

#include <fmt/format.h>

#include "tapegrad/autograd/embedding.hpp"

namespace tapegrad::nn {

template <typename T>
Embedding<T>::Embedding(std::size_t num, std::size_t dim, Generator& gen, std::optional<std::int64_t> padding)
    : num_embeddings(num), embedding_dim(dim) {
  if (padding) {
    const auto n = static_cast<std::int64_t>(num);
    if (*padding >= n || *padding < -n) {
      throw ShapeError(fmt::format("Embedding: padding_idx {} is out of range for {} embeddings", *padding, num));
    }
    padding_idx = *padding < 0 ? *padding + n : *padding;
  }
  Tensor<T> w = Tensor<T>::normal({num, dim}, T(0), T(1), gen);
  if (padding_idx) {
    T* row = w.mutable_data().data() + static_cast<std::size_t>(*padding_idx) * dim;
    std::fill(row, row + dim, T(0));
  }
  weight = this->register_parameter("weight", w);
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

}  // namespace tapegrad::nn
