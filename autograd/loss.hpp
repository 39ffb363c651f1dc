/// @file
/// Classification losses with torch's semantics: cross_entropy from logits and nll_loss.
#pragma once

#include <cstdint>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// Class indices (targets, token ids).
using IndexArray = xt::xarray<std::int64_t>;

/// How a loss reduces over the batch (torch's reduction='none' | 'mean' | 'sum').
enum class Reduction { None, Mean, Sum };

/// torch.nn.functional.cross_entropy's keyword arguments.
struct CrossEntropyOptions {
  Reduction reduction = Reduction::Mean;
  std::int64_t ignore_index = -100;  ///< targets equal to it contribute nothing (and are not counted)
  double label_smoothing = 0.0;      ///< in [0, 1]
};

/// input: logits [N, C] (or [C] with a 0-d target); target: class indices [N] in [0, C) or ignore_index.
/// With label smoothing eps, the per-sample loss is (1 - eps) * nll + eps * mean_c(-log p_c), as in
/// torch; ignored samples contribute 0 to both parts. Mean divides by the number of non-ignored
/// targets, so with none it is 0/0 = NaN (as torch); Reduction::None gives [N] (0 for ignored), or 0-d
/// for a [C] input. Fused: one log-softmax pass, and a backward of (softmax - smoothed one-hot) * scale.
/// Throws ShapeError for a target out of range (naming the value, its position and C), a target shape
/// that does not fit the input, or label_smoothing outside [0, 1].
template <typename T>
Tensor<T> cross_entropy(const Tensor<T>& input, const IndexArray& target, const CrossEntropyOptions& options = {});

/// input: log-probabilities [N, C] (or [C]); loss_i = -input[i, target_i], with the same target,
/// reduction, ignore_index and error rules as cross_entropy.
template <typename T>
Tensor<T> nll_loss(const Tensor<T>& input, const IndexArray& target, Reduction reduction = Reduction::Mean,
                   std::int64_t ignore_index = -100);

}  // namespace tapegrad
