/// @file
/// Adam (Kingma & Ba) with torch.optim.Adam's update rule, L2 weight decay and AMSGrad.
#pragma once

#include <utility>

#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::optim {

/// torch.optim.Adam's arguments besides params, with its defaults.
struct AdamOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.0;  ///< L2: weight_decay * param is added to the gradient
  bool amsgrad = false;
};

namespace detail {

/// What Adam and AdamW share: their moments ("exp_avg", "exp_avg_sq", "max_exp_avg_sq" with amsgrad),
/// counted steps and the update of every parameter; they differ in the weight decay they hand it.
template <typename T, typename Options>
class AdamFamily : public Optimizer<T> {
 public:
  const Options& options() const { return options_; }

 protected:
  /// Throws std::invalid_argument naming `name` and the value, for lr or weight_decay < 0, eps <= 0,
  /// or a beta outside [0, 1).
  AdamFamily(std::vector<Tensor<T>> params, const Options& options, const char* name);
  std::vector<std::string> buffer_names() const override;
  bool counts_steps() const override { return true; }
  /// One step of every parameter that has a gradient: p is multiplied by decay first (AdamW) and l2 * p
  /// added to its gradient (Adam); 1 and 0 are none.
  void update_all(T decay, T l2);

  Options options_;
};

}  // namespace detail

/// For each parameter p with gradient g, at step t = 1, 2, ... of that parameter (torch 1.13's rule):
///   g <- g + weight_decay * p
///   m <- beta1 * m + (1 - beta1) * g                 ("exp_avg")
///   v <- beta2 * v + (1 - beta2) * g * g             ("exp_avg_sq")
///   vmax <- max(vmax, v) if amsgrad                  ("max_exp_avg_sq"), and v below is vmax
///   p <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
/// eps is added after the bias correction of sqrt(v), as in torch (not to v itself).
template <typename T>
class Adam : public detail::AdamFamily<T, AdamOptions> {
 public:
  /// Throws std::invalid_argument, naming the value, for what torch refuses (lr or weight_decay < 0,
  /// eps < 0, a beta outside [0, 1)) and, stricter than torch, for eps == 0 (the update of a parameter
  /// whose gradient is 0 would be 0/0).
  Adam(std::vector<Tensor<T>> params, AdamOptions options = {});
  void step() override;

 protected:
  const char* name() const override { return "Adam"; }
};

extern template class detail::AdamFamily<float, AdamOptions>;
extern template class detail::AdamFamily<double, AdamOptions>;
extern template class Adam<float>;
extern template class Adam<double>;

namespace detail {

/// Checks Adam/AdamW hyperparameters; `op` names the optimizer in the message.
void check_adam_options(const char* op, double lr, std::pair<double, double> betas, double eps, double weight_decay);

/// The moment updates and the parameter update shared by Adam and AdamW, for one parameter of n
/// elements at step t (already incremented), in one pass; vmax is null without amsgrad. AdamW's
/// weight decay multiplies p by decay first; Adam's adds l2 * p to the gradient (1 and 0: none).
template <typename T>
void adam_update(T* p, const T* g, T* m, T* v, T* vmax, std::size_t n, std::int64_t t, double lr,
                 std::pair<double, double> betas, double eps, T decay, T l2);

}  // namespace detail

}  // namespace tapegrad::optim
