/// @file
/// Loss modules (torch.nn.CrossEntropyLoss, NLLLoss, MSELoss, L1Loss, SmoothL1Loss, HuberLoss,
/// KLDivLoss, BCELoss, BCEWithLogitsLoss):
/// the losses of autograd/loss.hpp with their options held by the module, called as `criterion(x, y)`.
#pragma once

#include <string>
#include <utility>

#include "tapegrad/autograd/loss.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

/// torch.nn.CrossEntropyLoss: cross_entropy(logits, targets) with the module's reduction,
/// ignore_index and label_smoothing.
template <typename T>
class CrossEntropyLoss : public Module<T, CrossEntropyLoss<T>> {
 public:
  explicit CrossEntropyLoss(CrossEntropyOptions options = {}) : options(options) {}
  Tensor<T> forward(const Tensor<T>& input, const IndexArray& target) const {
    return cross_entropy(input, target, options);
  }
  std::string name() const override { return "CrossEntropyLoss"; }

  CrossEntropyOptions options;
};

/// torch.nn.NLLLoss: nll_loss(log_probabilities, targets).
template <typename T>
class NLLLoss : public Module<T, NLLLoss<T>> {
 public:
  explicit NLLLoss(Reduction reduction = Reduction::Mean, std::int64_t ignore_index = -100)
      : reduction(reduction), ignore_index(ignore_index) {}
  Tensor<T> forward(const Tensor<T>& input, const IndexArray& target) const {
    return nll_loss(input, target, reduction, ignore_index);
  }
  std::string name() const override { return "NLLLoss"; }

  Reduction reduction;
  std::int64_t ignore_index;
};

/// torch.nn.MSELoss: mse_loss(input, target).
template <typename T>
class MSELoss : public Module<T, MSELoss<T>> {
 public:
  explicit MSELoss(Reduction reduction = Reduction::Mean) : reduction(reduction) {}
  Tensor<T> forward(const Tensor<T>& input, const Tensor<T>& target) const {
    return mse_loss(input, target, reduction);
  }
  std::string name() const override { return "MSELoss"; }

  Reduction reduction;
};

/// torch.nn.L1Loss: l1_loss(input, target).
template <typename T>
class L1Loss : public Module<T, L1Loss<T>> {
 public:
  explicit L1Loss(Reduction reduction = Reduction::Mean) : reduction(reduction) {}
  Tensor<T> forward(const Tensor<T>& input, const Tensor<T>& target) const { return l1_loss(input, target, reduction); }
  std::string name() const override { return "L1Loss"; }

  Reduction reduction;
};

/// torch.nn.SmoothL1Loss: smooth_l1_loss(input, target) with the module's reduction and beta.
template <typename T>
class SmoothL1Loss : public Module<T, SmoothL1Loss<T>> {
 public:
  explicit SmoothL1Loss(Reduction reduction = Reduction::Mean, double beta = 1.0) : reduction(reduction), beta(beta) {}
  Tensor<T> forward(const Tensor<T>& input, const Tensor<T>& target) const {
    return smooth_l1_loss(input, target, reduction, beta);
  }
  std::string name() const override { return "SmoothL1Loss"; }

  Reduction reduction;
  double beta;
};

/// torch.nn.HuberLoss: huber_loss(input, target) with the module's reduction and delta.
template <typename T>
class HuberLoss : public Module<T, HuberLoss<T>> {
 public:
  explicit HuberLoss(Reduction reduction = Reduction::Mean, double delta = 1.0) : reduction(reduction), delta(delta) {}
  Tensor<T> forward(const Tensor<T>& input, const Tensor<T>& target) const {
    return huber_loss(input, target, reduction, delta);
  }
  std::string name() const override { return "HuberLoss"; }

  Reduction reduction;
  double delta;
};

/// torch.nn.KLDivLoss: kl_div(log_probabilities, target) with the module's reduction (Mean by default,
/// as torch; BatchMean is the KL divergence per sample) and log_target.
template <typename T>
class KLDivLoss : public Module<T, KLDivLoss<T>> {
 public:
  explicit KLDivLoss(Reduction reduction = Reduction::Mean, bool log_target = false)
      : reduction(reduction), log_target(log_target) {}
  Tensor<T> forward(const Tensor<T>& input, const Tensor<T>& target) const {
    return kl_div(input, target, reduction, log_target);
  }
  std::string name() const override { return "KLDivLoss"; }

  Reduction reduction;
  bool log_target;
};

/// torch.nn.BCELoss: binary_cross_entropy(probabilities, target). A defined weight is a buffer named
/// "weight" (in state_dict, as torch registers it).
template <typename T>
class BCELoss : public Module<T, BCELoss<T>> {
 public:
  explicit BCELoss(BinaryCrossEntropyOptions<T> options = {}) : options(std::move(options)) {
    if (this->options.weight.defined()) this->options.weight = this->register_buffer("weight", this->options.weight);
  }
  Tensor<T> forward(const Tensor<T>& input, const Tensor<T>& target) const {
    return binary_cross_entropy(input, target, options);
  }
  std::string name() const override { return "BCELoss"; }

  BinaryCrossEntropyOptions<T> options;
};

/// torch.nn.BCEWithLogitsLoss: binary_cross_entropy_with_logits(logits, target). A defined weight or
/// pos_weight is a buffer of that name, as in torch.
template <typename T>
class BCEWithLogitsLoss : public Module<T, BCEWithLogitsLoss<T>> {
 public:
  explicit BCEWithLogitsLoss(BinaryCrossEntropyWithLogitsOptions<T> options = {}) : options(std::move(options)) {
    if (this->options.weight.defined()) this->options.weight = this->register_buffer("weight", this->options.weight);
    if (this->options.pos_weight.defined())
      this->options.pos_weight = this->register_buffer("pos_weight", this->options.pos_weight);
  }
  Tensor<T> forward(const Tensor<T>& input, const Tensor<T>& target) const {
    return binary_cross_entropy_with_logits(input, target, options);
  }
  std::string name() const override { return "BCEWithLogitsLoss"; }

  BinaryCrossEntropyWithLogitsOptions<T> options;
};

}  // namespace tapegrad::nn
