/// @file
/// Embedding lookup: rows of a weight table picked by integer ids, with a scatter-add backward.
#pragma once

#include <cstdint>
#include <optional>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// weight [num_embeddings, dim], ids of any shape -> [*ids.shape, dim]. An id outside
/// [0, num_embeddings) throws ShapeError naming the id, its position and the table size. The ids are
/// not differentiable; the backward scatter-adds into a [num_embeddings, dim] gradient. padding_idx
/// may be negative (-1 is the last row, as in torch; out of range throws); its row is looked up as
/// usual but gets no gradient.
template <typename T>
Tensor<T> embedding(const Tensor<T>& weight, const xt::xarray<std::int64_t>& ids,
                    std::optional<std::int64_t> padding_idx = std::nullopt);

/// torch.nn.functional.embedding_bag with mode="sum" where each bag is the last axis of ids:
/// weight [num_embeddings, dim], ids [..., K] -> [..., dim], the sum of the K rows of each bag. Ids
/// equal to padding_idx add nothing, not even their row's value (as in torch), and their row gets no
/// gradient. Ids out of range throw ShapeError as in embedding().
template <typename T>
Tensor<T> embedding_bag_sum(const Tensor<T>& weight, const xt::xarray<std::int64_t>& ids,
                            std::optional<std::int64_t> padding_idx = std::nullopt);

/// The same with torch's per_sample_weights: per_sample_weights has the shape of ids, and member k of a
/// bag adds per_sample_weights[..., k] times its row (its row's gradient is scaled alike). The weights
/// are constants here: no gradient flows to them. A shape other than ids' throws ShapeError. Taken by
/// value: the backward keeps them, so a caller that moves them in saves a copy.
template <typename T>
Tensor<T> embedding_bag_sum(const Tensor<T>& weight, const xt::xarray<std::int64_t>& ids,
                            std::optional<std::int64_t> padding_idx, xt::xarray<T> per_sample_weights);

}  // namespace tapegrad
