/// @file
/// AdamW (Loshchilov & Hutter): Adam with decoupled weight decay, torch.optim.AdamW's update rule.
#pragma once

#include "tapegrad/optim/adam.hpp"

namespace tapegrad::optim {

/// torch.optim.AdamW's arguments besides params, with its defaults.
struct AdamWOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;  ///< decoupled: p <- p * (1 - lr * weight_decay) before the Adam step
  bool amsgrad = false;
};

/// For each parameter p with gradient g, at step t of that parameter (torch 1.13's rule):
///   p <- p * (1 - lr * weight_decay)
///   then Adam's update with g unchanged (see optim/adam.hpp).
/// State: "exp_avg", "exp_avg_sq", "max_exp_avg_sq" (amsgrad only) and "step".
template <typename T>
class AdamW : public detail::AdamFamily<T, AdamWOptions> {
 public:
  /// Throws std::invalid_argument, naming the values, for what torch refuses (lr or weight_decay < 0,
  /// eps < 0, a beta outside [0, 1)) and, stricter than torch, for eps == 0 (the update of a parameter
  /// whose gradient is 0 would be 0/0) and lr * weight_decay >= 1 (the decay factor 1 - lr *
  /// weight_decay would zero or flip every weight each step, which no training recovers from).
  AdamW(std::vector<Tensor<T>> params, AdamWOptions options = {});
  /// Throws std::invalid_argument, changing nothing, when set_lr has made lr * weight_decay >= 1.
  void step() override;

 protected:
  const char* name() const override { return "AdamW"; }
};

extern template class detail::AdamFamily<float, AdamWOptions>;
extern template class detail::AdamFamily<double, AdamWOptions>;
extern template class AdamW<float>;
extern template class AdamW<double>;

}  // namespace tapegrad::optim
