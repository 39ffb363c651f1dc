/// @file
/// Stochastic gradient descent with optional momentum, dampening, Nesterov momentum and L2 weight
/// decay: torch.optim.SGD's update rule, step for step.
#pragma once

#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::optim {

/// torch.optim.SGD's arguments besides params, with its defaults.
struct SGDOptions {
  double lr;  ///< required, as in torch
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;  ///< L2: weight_decay * param is added to the gradient
  bool nesterov = false;
};

/// For each parameter p with gradient g (torch 1.13's rule):
///   g <- g + weight_decay * p
///   if momentum != 0:
///     buf <- g on the first step (no dampening), else buf <- momentum * buf + (1 - dampening) * g
///     g <- g + momentum * buf if nesterov, else buf
///   p <- p - lr * g
/// State: "momentum_buffer" (only when momentum != 0).
template <typename T>
class SGD : public Optimizer<T> {
 public:
  /// Throws std::invalid_argument, naming the value, for lr, momentum or weight_decay < 0, or
  /// nesterov without momentum > 0 and zero dampening.
  SGD(std::vector<Tensor<T>> params, SGDOptions options);
  void step() override;
  const SGDOptions& options() const { return options_; }

 protected:
  std::vector<std::string> buffer_names() const override;
  bool counts_steps() const override { return false; }
  const char* name() const override { return "SGD"; }

 private:
  SGDOptions options_;
};

extern template class SGD<float>;
extern template class SGD<double>;

}  // namespace tapegrad::optim
