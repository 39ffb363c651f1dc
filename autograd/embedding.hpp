// Embedding lookup: rows of a weight table picked by integer ids, with a scatter-add backward.
#pragma once

#include <cstdint>
#include <optional>
#include <xtensor/xarray.hpp>

#include "autograd/tensor.hpp"

namespace tapegrad {

// weight [num_embeddings, dim], ids of any shape -> [*ids.shape, dim]. An id outside
// [0, num_embeddings) throws, naming the id and the table size. The padding_idx row gets no gradient.
template <typename T>
Tensor<T> embedding(const Tensor<T>& weight, const xt::xarray<std::int64_t>& ids,
                    std::optional<std::int64_t> padding_idx = std::nullopt);

}  // namespace tapegrad
