#include "tapegrad/optim/adagrad.hpp"

#include <cmath>

#include "tapegrad/autograd/parallel.hpp"

namespace tapegrad::optim {

namespace {

// torch's checks, in torch's order.
AdagradOptions checked(const AdagradOptions& o) {
  detail::check_nonnegative("Adagrad", {{"learning rate", o.lr},
                                        {"lr_decay value", o.lr_decay},
                                        {"weight_decay value", o.weight_decay},
                                        {"initial_accumulator_value value", o.initial_accumulator_value},
                                        {"epsilon value", o.eps}});
  return o;
}

}  // namespace

template <typename T>
Adagrad<T>::Adagrad(std::vector<Tensor<T>> params, AdagradOptions options)
    : Optimizer<T>(std::move(params), checked(options).lr), options_(options) {
  // torch creates the state here, for every parameter, rather than at its first step.
  for (std::size_t i = 0; i < this->params_.size(); ++i)
    if (this->params_[i].requires_grad()) initial_state(i);
}

template <typename T>
typename Optimizer<T>::ParamState& Adagrad<T>::initial_state(std::size_t i) {
  const bool fresh = !this->state_[i].initialized;
  auto& st = this->state_for(i);
  if (fresh) st.buffers[0].fill(static_cast<T>(options_.initial_accumulator_value));
  return st;
}

template <typename T>
void Adagrad<T>::step() {
  const T eps = static_cast<T>(options_.eps);
  const T wd = static_cast<T>(options_.weight_decay);
  const bool use_wd = options_.weight_decay != 0.0;
  for (std::size_t i = 0; i < this->params_.size(); ++i) {
    Tensor<T>& param = this->params_[i];
    if (!param.has_grad()) continue;
    auto& st = initial_state(i);
    st.step += 1;
    // The step size is computed in double, as torch computes it in Python, then used at T's precision.
    const double clr = this->lr_ / (1.0 + (static_cast<double>(st.step) - 1.0) * options_.lr_decay);
    const T neg_clr = static_cast<T>(-clr);
    T* p = param.mutable_data().data();
    const T* g = param.grad().data();
    T* s = st.buffers[0].data();
    // One pass per element in torch's order of operations; split over the threads (the result does
    // not depend on how).
    tapegrad::detail::parallel_for(param.numel(), 1 << 14, [=](std::size_t begin, std::size_t end) {
      for (std::size_t k = begin; k < end; ++k) {
        const T pk = p[k];
        const T gk = use_wd ? g[k] + wd * pk : g[k];
        const T sk = s[k] + gk * gk;
        s[k] = sk;
        p[k] = pk + neg_clr * gk / (std::sqrt(sk) + eps);  // torch's addcdiv: (value * g) / std
      }
    });
  }
}

template class Adagrad<float>;
template class Adagrad<double>;

}  // namespace tapegrad::optim
