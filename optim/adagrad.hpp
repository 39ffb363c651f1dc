/// @file
/// Adagrad (Duchi, Hazan & Singer) with torch.optim.Adagrad's update rule, learning-rate decay and L2
/// weight decay.
#pragma once

#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::optim {

/// torch.optim.Adagrad's arguments besides params, with its defaults.
struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0.0;                   ///< the step size at step t is lr / (1 + (t - 1) * lr_decay)
  double weight_decay = 0.0;               ///< L2: weight_decay * param is added to the gradient
  double initial_accumulator_value = 0.0;  ///< the value "sum" starts from
  double eps = 1e-10;
};

/// For each parameter p with gradient g, at step t = 1, 2, ... of that parameter (torch 1.13's rule):
///   g <- g + weight_decay * p
///   s <- s + g * g                                       ("sum")
///   p <- p - lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)
/// As in torch, the constructor creates every parameter's state ("sum" filled with
/// initial_accumulator_value, "step" 0), so state_dict() lists parameters never stepped too and
/// load_state_dict() requires the state of every parameter; except that a frozen parameter (one that
/// does not require grad, such as the base of a LoRA model) gets none, so that freezing saves the
/// memory, and gets it at its first step if it is unfrozen later.
template <typename T>
class Adagrad : public Optimizer<T> {
 public:
  /// Throws std::invalid_argument, naming the value, for lr, lr_decay, weight_decay,
  /// initial_accumulator_value or eps < 0.
  Adagrad(std::vector<Tensor<T>> params, AdagradOptions options = {});
  void step() override;
  const AdagradOptions& options() const { return options_; }

 protected:
  std::vector<std::string> buffer_names() const override { return {"sum"}; }
  bool counts_steps() const override { return true; }
  const char* name() const override { return "Adagrad"; }
  bool eager_state() const override { return true; }

 private:
  /// Parameter i's state, its "sum" filled with initial_accumulator_value the first time.
  typename Optimizer<T>::ParamState& initial_state(std::size_t i);

  AdagradOptions options_;
};

extern template class Adagrad<float>;
extern template class Adagrad<double>;

}  // namespace tapegrad::optim
