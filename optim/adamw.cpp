#include "tapegrad/optim/adamw.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace tapegrad::optim {

namespace {

// Stricter than torch, which accepts any product: at lr * weight_decay >= 1 the decoupled decay factor
// 1 - lr * weight_decay is 0 or negative, so every step wipes the weights or flips their signs (and
// grows them beyond 2), which no training recovers from.
void check_decay(double lr, double weight_decay) {
  if (lr * weight_decay >= 1.0) {
    throw std::invalid_argument(
        fmt::format("AdamW: learning rate {} times weight_decay {} is {}, not below 1: the decoupled decay factor "
                    "1 - lr * weight_decay = {} would zero or flip every weight each step",
                    lr, weight_decay, lr * weight_decay, 1.0 - lr * weight_decay));
  }
}

const AdamWOptions& checked(const AdamWOptions& options) {
  // The generic checks first, so that a negative or NaN value is named as such.
  detail::check_adam_options("AdamW", options.lr, options.betas, options.eps, options.weight_decay);
  check_decay(options.lr, options.weight_decay);
  return options;
}

}  // namespace

template <typename T>
AdamW<T>::AdamW(std::vector<Tensor<T>> params, AdamWOptions options)
    : detail::AdamFamily<T, AdamWOptions>(std::move(params), checked(options), "AdamW") {}

template <typename T>
void AdamW<T>::step() {
  check_decay(this->lr_, this->options_.weight_decay);  // a schedule may have raised lr since
  // torch multiplies by (1 - lr * weight_decay) computed in double, used at T's precision.
  this->update_all(static_cast<T>(1.0 - this->lr_ * this->options_.weight_decay), T(0));
}

template class AdamW<float>;
template class AdamW<double>;

}  // namespace tapegrad::optim
