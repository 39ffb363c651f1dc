/// @file
/// Losses with torch.nn.functional's semantics: cross_entropy from logits and nll_loss for classes;
/// mse_loss, l1_loss, smooth_l1_loss and huber_loss for regression; binary_cross_entropy and
/// binary_cross_entropy_with_logits for binary (or multi-label) targets; kl_div between distributions.
#pragma once

#include <cstdint>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// How a loss reduces over the batch (torch's reduction='none' | 'mean' | 'sum' | 'batchmean').
/// BatchMean (the sum divided by the size of dim 0) is kl_div's only, as in torch: every other loss
/// throws ShapeError for it (and for a value outside the enum).
enum class Reduction { None, Mean, Sum, BatchMean };

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

/// ((input - target)^2), reduced as torch's `reduction` ('mean' by default). input and target broadcast
/// as torch does (which warns when their shapes differ); Reduction::None gives the broadcast shape, and
/// the mean of no elements is NaN. Both input and target get gradients when they require them.
template <typename T>
Tensor<T> mse_loss(const Tensor<T>& input, const Tensor<T>& target, Reduction reduction = Reduction::Mean);

/// |input - target| with the same broadcasting and reductions as mse_loss; the gradient at
/// input == target is 0 (torch's sign(0)).
template <typename T>
Tensor<T> l1_loss(const Tensor<T>& input, const Tensor<T>& target, Reduction reduction = Reduction::Mean);

/// torch.nn.functional.smooth_l1_loss: 0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere,
/// d = input - target, with mse_loss's broadcasting and reductions. beta = 0 is l1_loss (as torch);
/// a negative beta throws ShapeError. Deliberate difference: at beta = 0 and d = 0 the gradient is 0,
/// as l1_loss's (torch 1.13's smooth_l1 backward gives -g there, from its `d <= -beta` branch, while its
/// forward and its l1_loss treat that point as l1_loss does).
template <typename T>
Tensor<T> smooth_l1_loss(const Tensor<T>& input, const Tensor<T>& target, Reduction reduction = Reduction::Mean,
                         double beta = 1.0);

/// torch.nn.functional.huber_loss: 0.5 d^2 where |d| < delta, delta (|d| - 0.5 delta) elsewhere (smooth_l1_loss
/// times delta, with beta = delta), with mse_loss's broadcasting and reductions. delta must be > 0 (ShapeError
/// otherwise, as torch).
template <typename T>
Tensor<T> huber_loss(const Tensor<T>& input, const Tensor<T>& target, Reduction reduction = Reduction::Mean,
                     double delta = 1.0);

/// torch.nn.functional.kl_div: input holds log-probabilities, target probabilities (log-probabilities
/// when log_target); pointwise target (log target - input), with 0 where target is 0 (torch's xlogy), or
/// exp(target) (target - input) when log_target. Broadcasts as mse_loss. Reduction::Mean is the mean
/// over every element (torch's default, which it warns is not the KL divergence); BatchMean divides the
/// sum by input's size of dim 0 (by 1 for a 0-d input), the true KL divergence per sample. Both sides
/// get torch's gradients: -target (-exp(target)) for the input; log(target) + 1 - input for the target,
/// NaN where the target is 0 as in torch 1.13 (xlogy's 0 / 0), and exp(target) (target - input + 1)
/// for a log target.
template <typename T>
Tensor<T> kl_div(const Tensor<T>& input, const Tensor<T>& target, Reduction reduction = Reduction::Mean,
                 bool log_target = false);

/// Options of binary_cross_entropy (torch's weight and reduction arguments).
template <typename T>
struct BinaryCrossEntropyOptions {
  /// Multiplies each element's loss; broadcasts to the input's shape; undefined means 1. A constant:
  /// like torch, a weight that requires grad is refused while grad mode is on.
  Tensor<T> weight;
  Reduction reduction = Reduction::Mean;
};

/// -weight * (target * log(input) + (1 - target) * log(1 - input)) for probabilities input in [0, 1]
/// and a target of input's shape. Each log is clamped at -100, as torch does, so an input of exactly
/// 0 or 1 gives a finite loss (100 per element at worst); the input gradient
/// weight * (input - target) / max(input * (1 - input), 1e-12) is torch's too (with 1e-12 rounded to
/// float, as torch 1.13 does). Mean divides by the
/// number of elements. Throws ShapeError for an input outside [0, 1] (naming the value and its
/// position), a target or weight whose shape does not fit, or a weight that requires grad.
template <typename T>
Tensor<T> binary_cross_entropy(const Tensor<T>& input, const Tensor<T>& target,
                               const BinaryCrossEntropyOptions<T>& options = {});

/// Options of binary_cross_entropy_with_logits (torch's weight, pos_weight and reduction arguments).
template <typename T>
struct BinaryCrossEntropyWithLogitsOptions {
  /// As in BinaryCrossEntropyOptions: a constant factor per element, broadcast to the input's shape.
  Tensor<T> weight;
  /// The weight of the positive term, broadcast to the input's shape: for multi-label targets [N, C]
  /// a [C] tensor weighs each class's positives (> 1 raises recall). Undefined means 1. A constant, as
  /// weight.
  Tensor<T> pos_weight;
  Reduction reduction = Reduction::Mean;
};

/// binary_cross_entropy(sigmoid(input), target) computed from the logits without forming the
/// sigmoid: weight * ((1 - target) * x + (1 + (pos_weight - 1) * target) * softplus(-x)), with
/// softplus(-x) = log(1 + exp(-x)) evaluated as max(-x, 0) + log(exp(-max(-x, 0)) + exp(-x - max(-x, 0)))
/// (torch's log-sum-exp form), finite for any finite logit. Same shape rules and errors as
/// binary_cross_entropy, except that input is any real number.
template <typename T>
Tensor<T> binary_cross_entropy_with_logits(const Tensor<T>& input, const Tensor<T>& target,
                                           const BinaryCrossEntropyWithLogitsOptions<T>& options = {});

}  // namespace tapegrad
