/// @file
/// RMSprop (Hinton's lecture notes; the centered variant of Graves 2013) with torch.optim.RMSprop's
/// update rule, momentum and L2 weight decay.
#pragma once

#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::optim {

/// torch.optim.RMSprop's arguments besides params, with its defaults.
struct RMSpropOptions {
  double lr = 1e-2;
  double alpha = 0.99;  ///< smoothing constant of the moving averages
  double eps = 1e-8;
  double weight_decay = 0.0;  ///< L2: weight_decay * param is added to the gradient
  double momentum = 0.0;
  bool centered = false;  ///< normalize by an estimate of the gradient's variance, not its second moment
};

/// For each parameter p with gradient g (torch 1.13's rule):
///   g <- g + weight_decay * p
///   v <- alpha * v + (1 - alpha) * g * g                 ("square_avg")
///   if centered:
///     a <- alpha * a + (1 - alpha) * g                   ("grad_avg")
///     d <- sqrt(v - a * a) + eps
///   else d <- sqrt(v) + eps
///   if momentum > 0:
///     buf <- momentum * buf + g / d                      ("momentum_buffer")
///     p <- p - lr * buf
///   else p <- p - lr * g / d
/// eps is added after the square root, as in torch (TensorFlow adds it under the root). The state
/// also counts steps ("step"), which the rule does not use.
template <typename T>
class RMSprop : public Optimizer<T> {
 public:
  /// Throws std::invalid_argument, naming the value, for lr, eps, momentum, weight_decay or alpha < 0
  /// (torch accepts alpha > 1).
  RMSprop(std::vector<Tensor<T>> params, RMSpropOptions options = {});
  void step() override;
  const RMSpropOptions& options() const { return options_; }

 protected:
  std::vector<std::string> buffer_names() const override;
  bool counts_steps() const override { return true; }
  const char* name() const override { return "RMSprop"; }

 private:
  RMSpropOptions options_;
};

extern template class RMSprop<float>;
extern template class RMSprop<double>;

}  // namespace tapegrad::optim
