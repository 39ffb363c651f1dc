#include "tapegrad/models/causal_lm.hpp"

#include <fmt/format.h>

#include "tapegrad/autograd/embedding.hpp"
#include "tapegrad/autograd/shape_ops.hpp"

namespace tapegrad::models {

template <typename T>
void CausalLM<T>::check_ids(const char* model, const char* op, const xt::xarray<std::int64_t>& ids,
                            std::size_t offset) const {
  if (ids.dimension() != 2 || ids.shape(1) == 0) {
    throw ShapeError(fmt::format("{}.{}: ids must be [batch, length] with length >= 1, got {}", model, op,
                                 format_shape(shape_of(ids))));
  }
  if (offset + ids.shape(1) > max_len()) {
    throw ShapeError(fmt::format("{}.{}: positions {}..{} exceed the context of max_len = {} positions", model, op,
                                 offset, offset + ids.shape(1) - 1, max_len()));
  }
}

template <typename T>
void CausalLM<T>::check_cache(const char* model, const char* op, const xt::xarray<std::int64_t>& ids,
                              const Cache& cache) const {
  check_ids(model, op, ids, cache.length());
  if (cache.length() > 0 && cache.layers.front().key.size(0) != ids.shape(0)) {
    throw ShapeError(fmt::format("{}.{}: ids have batch {} but the cache holds batch {}", model, op, ids.shape(0),
                                 cache.layers.front().key.size(0)));
  }
}

template <typename T>
Tensor<T> CausalLM<T>::gather_rows(const Tensor<T>& hidden, const xt::xarray<std::int64_t>& rows) {
  // Selecting rows of the [B * L, d] hidden states is a lookup, with the lookup's gradient.
  const Tensor<T> flat = reshape(hidden, {-1, static_cast<std::int64_t>(hidden.size(2))});
  return tapegrad::embedding(flat, rows);
}

template <typename T>
Tensor<T> CausalLM<T>::last_positions(const Tensor<T>& hidden) {
  const std::size_t batch = hidden.size(0), n = hidden.size(1);
  xt::xarray<std::int64_t> last = xt::xarray<std::int64_t>::from_shape({batch});
  for (std::size_t b = 0; b < batch; ++b) last(b) = static_cast<std::int64_t>(b * n + n - 1);
  return gather_rows(hidden, last);
}

template class CausalLM<float>;
template class CausalLM<double>;

}  // namespace tapegrad::models
