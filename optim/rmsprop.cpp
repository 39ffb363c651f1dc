#include "tapegrad/optim/rmsprop.hpp"

#include <cmath>

#include "tapegrad/autograd/parallel.hpp"

namespace tapegrad::optim {

namespace {

// torch's checks, in torch's order.
RMSpropOptions checked(const RMSpropOptions& o) {
  detail::check_nonnegative("RMSprop", {{"learning rate", o.lr},
                                        {"epsilon value", o.eps},
                                        {"momentum value", o.momentum},
                                        {"weight_decay value", o.weight_decay},
                                        {"alpha value", o.alpha}});
  return o;
}

}  // namespace

template <typename T>
RMSprop<T>::RMSprop(std::vector<Tensor<T>> params, RMSpropOptions options)
    : Optimizer<T>(std::move(params), checked(options).lr), options_(options) {}

template <typename T>
std::vector<std::string> RMSprop<T>::buffer_names() const {
  std::vector<std::string> names{"square_avg"};
  if (options_.momentum > 0.0) names.push_back("momentum_buffer");
  if (options_.centered) names.push_back("grad_avg");
  return names;
}

template <typename T>
void RMSprop<T>::step() {
  // The scalars are computed in double, as torch computes them in Python, then used at T's precision.
  const T neg_lr = static_cast<T>(-this->lr_);
  const T alpha = static_cast<T>(options_.alpha);
  const T one_minus_alpha = static_cast<T>(1.0 - options_.alpha);
  const T eps = static_cast<T>(options_.eps);
  const T wd = static_cast<T>(options_.weight_decay);
  const T mom = static_cast<T>(options_.momentum);
  const bool use_wd = options_.weight_decay != 0.0;
  const bool use_mom = options_.momentum > 0.0;
  const bool centered = options_.centered;
  for (std::size_t i = 0; i < this->params_.size(); ++i) {
    Tensor<T>& param = this->params_[i];
    if (!param.has_grad()) continue;
    auto& st = this->state_for(i);
    st.step += 1;
    T* p = param.mutable_data().data();
    const T* g = param.grad().data();
    T* v = st.buffers[0].data();
    T* buf = use_mom ? st.buffers[1].data() : nullptr;
    T* a = centered ? st.buffers.back().data() : nullptr;
    // One pass per element in torch's order of operations; split over the threads (the result does
    // not depend on how).
    tapegrad::detail::parallel_for(param.numel(), 1 << 14, [=](std::size_t begin, std::size_t end) {
      for (std::size_t k = begin; k < end; ++k) {
        const T pk = p[k];
        const T gk = use_wd ? g[k] + wd * pk : g[k];
        const T vk = v[k] * alpha + one_minus_alpha * gk * gk;
        v[k] = vk;
        T d;
        if (centered) {
          const T ak = a[k] * alpha + gk * one_minus_alpha;
          a[k] = ak;
          d = std::sqrt(vk - ak * ak) + eps;
        } else {
          d = std::sqrt(vk) + eps;
        }
        if (use_mom) {
          const T bk = buf[k] * mom + gk / d;
          buf[k] = bk;
          p[k] = pk + neg_lr * bk;
        } else {
          p[k] = pk + neg_lr * gk / d;  // torch's addcdiv: (value * g) / d
        }
      }
    });
  }
}

template class RMSprop<float>;
template class RMSprop<double>;

}  // namespace tapegrad::optim
