#include "tapegrad/optim/sgd.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace tapegrad::optim {

namespace {

SGDOptions checked(const SGDOptions& o) {
  detail::check_nonnegative(
      "SGD", {{"learning rate", o.lr}, {"momentum value", o.momentum}, {"weight_decay value", o.weight_decay}});
  if (o.nesterov && (o.momentum <= 0.0 || o.dampening != 0.0)) {
    throw std::invalid_argument(
        fmt::format("SGD: Nesterov momentum requires a momentum and zero dampening (momentum={}, dampening={})",
                    o.momentum, o.dampening));
  }
  return o;
}

}  // namespace

template <typename T>
SGD<T>::SGD(std::vector<Tensor<T>> params, SGDOptions options)
    : Optimizer<T>(std::move(params), checked(options).lr), options_(options) {}

template <typename T>
std::vector<std::string> SGD<T>::buffer_names() const {
  if (options_.momentum == 0.0) return {};
  return {"momentum_buffer"};
}

template <typename T>
void SGD<T>::step() {
  const T lr = static_cast<T>(this->lr_);
  const T wd = static_cast<T>(options_.weight_decay);
  const T mom = static_cast<T>(options_.momentum);
  const T damp_keep = static_cast<T>(1.0 - options_.dampening);
  const bool use_wd = options_.weight_decay != 0.0;
  const bool use_mom = options_.momentum != 0.0;
  for (std::size_t i = 0; i < this->params_.size(); ++i) {
    Tensor<T>& param = this->params_[i];
    if (!param.has_grad()) continue;
    T* p = param.mutable_data().data();
    const T* g = param.grad().data();
    const std::size_t n = param.numel();
    if (!use_mom) {
      for (std::size_t k = 0; k < n; ++k) {
        const T d = use_wd ? g[k] + wd * p[k] : g[k];
        p[k] += -lr * d;
      }
      continue;
    }
    const bool first = !this->state_[i].initialized;
    T* buf = this->state_for(i).buffers[0].data();
    for (std::size_t k = 0; k < n; ++k) {
      T d = use_wd ? g[k] + wd * p[k] : g[k];
      buf[k] = first ? d : buf[k] * mom + d * damp_keep;
      d = options_.nesterov ? d + buf[k] * mom : buf[k];
      p[k] += -lr * d;
    }
  }
}

template class SGD<float>;
template class SGD<double>;

}  // namespace tapegrad::optim
