/// @file
/// Embedding lookup: rows of a weight table picked by integer ids, with a scatter-add backward; and
/// embedding bags, the sum, mean or maximum of the rows of each bag of ids.
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

/// How embedding_bag reduces a bag's rows (torch's mode='sum' | 'mean' | 'max').
enum class EmbeddingBagMode { Sum, Mean, Max };

/// torch's name of a mode, as its mode argument and repr write it: "sum", "mean" or "max".
const char* mode_name(EmbeddingBagMode mode);

/// torch.nn.functional.embedding_bag with mode="sum" where each bag is the last axis of ids:
/// weight [num_embeddings, dim], ids [..., K] -> [..., dim], the sum of the K rows of each bag. Ids
/// equal to padding_idx add nothing, not even their row's value (as in torch), and their row gets no
/// gradient. With per_sample_weights (ids' shape), member k of a bag adds per_sample_weights[..., k]
/// times its row, as in embedding_bag. Ids out of range throw ShapeError as in embedding().
template <typename T>
Tensor<T> embedding_bag_sum(const Tensor<T>& weight, const xt::xarray<std::int64_t>& ids,
                            std::optional<std::int64_t> padding_idx = std::nullopt,
                            const Tensor<T>& per_sample_weights = {});

/// torch.nn.functional.embedding_bag, fixed-length form: weight [num_embeddings, dim], ids [..., K]
/// (one bag per row of the last axis) -> [..., dim]. Ids equal to padding_idx count for nothing (no
/// row, not counted in a mean, no gradient); a bag without other members gives zeros. Mode Max takes
/// each column's maximum over the bag and sends its gradient to the row it came from; on a tie, the
/// earlier member's row, as torch 1.13.
///
/// per_sample_weights (undefined: none) has ids' shape and works with mode Sum only
/// (std::invalid_argument otherwise, as torch): member k of a bag adds per_sample_weights[..., k]
/// times its row. Both weight and per_sample_weights get gradients, as in torch: row r's gradient is
/// the sum over its members of the weight times their bag's gradient, and a member's weight gets the
/// dot product of its bag's gradient with its row (0 for a padding_idx member). Ids out of range
/// throw ShapeError as in embedding(), and so does a per_sample_weights of another shape.
template <typename T>
Tensor<T> embedding_bag(const Tensor<T>& weight, const xt::xarray<std::int64_t>& ids, EmbeddingBagMode mode,
                        std::optional<std::int64_t> padding_idx = std::nullopt,
                        const Tensor<T>& per_sample_weights = {});

/// torch.nn.functional.embedding_bag, offsets form: input is 1-D and bag b holds the ids from
/// input[offsets[b]] up to input[offsets[b + 1]] excluded (the last bag runs to the end) -> [bags,
/// dim]; an empty bag gives zeros. With include_last_offset, offsets has one more entry, the end of
/// the last bag, which must be input's length (torch's CSR form). Reduction, padding_idx and
/// per_sample_weights (input's shape) as in the fixed-length form. Throws ShapeError, naming the
/// values, when input or offsets is not 1-D, offsets[0] is not 0, offsets decrease or go past the
/// input.
template <typename T>
Tensor<T> embedding_bag(const Tensor<T>& weight, const xt::xarray<std::int64_t>& input,
                        const xt::xarray<std::int64_t>& offsets, EmbeddingBagMode mode,
                        std::optional<std::int64_t> padding_idx = std::nullopt, bool include_last_offset = false,
                        const Tensor<T>& per_sample_weights = {});

}  // namespace tapegrad
