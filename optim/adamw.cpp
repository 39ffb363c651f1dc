#include "tapegrad/optim/adamw.hpp"

namespace tapegrad::optim {

template <typename T>
AdamW<T>::AdamW(std::vector<Tensor<T>> params, AdamWOptions options)
    : detail::AdamFamily<T, AdamWOptions>(std::move(params), options, "AdamW") {}

template <typename T>
void AdamW<T>::step() {
  // torch multiplies by (1 - lr * weight_decay) computed in double, used at T's precision.
  this->update_all(static_cast<T>(1.0 - this->lr_ * this->options_.weight_decay), T(0));
}

template class AdamW<float>;
template class AdamW<double>;

}  // namespace tapegrad::optim
