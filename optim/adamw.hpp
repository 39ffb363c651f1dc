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
  /// Throws std::invalid_argument, naming the value, for lr or weight_decay < 0, eps <= 0 (torch
  /// accepts 0, which makes the update of a parameter whose gradient is 0 be 0/0), or a beta outside
  /// [0, 1).
  AdamW(std::vector<Tensor<T>> params, AdamWOptions options = {});
  void step() override;

 protected:
  const char* name() const override { return "AdamW"; }
};

extern template class detail::AdamFamily<float, AdamWOptions>;
extern template class detail::AdamFamily<double, AdamWOptions>;
extern template class AdamW<float>;
extern template class AdamW<double>;

}  // namespace tapegrad::optim
