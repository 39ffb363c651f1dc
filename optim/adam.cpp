#include "tapegrad/optim/adam.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "tapegrad/autograd/parallel.hpp"

namespace tapegrad::optim {

namespace detail {

void check_adam_options(const char* op, double lr, std::pair<double, double> betas, double eps, double weight_decay) {
  if (!(lr >= 0.0)) throw std::invalid_argument(fmt::format("{}: invalid learning rate: {}", op, lr));
  if (!(eps >= 0.0)) throw std::invalid_argument(fmt::format("{}: invalid epsilon value: {}", op, eps));
  if (!(betas.first >= 0.0 && betas.first < 1.0)) {
    throw std::invalid_argument(fmt::format("{}: invalid beta parameter at index 0: {}", op, betas.first));
  }
  if (!(betas.second >= 0.0 && betas.second < 1.0)) {
    throw std::invalid_argument(fmt::format("{}: invalid beta parameter at index 1: {}", op, betas.second));
  }
  if (!(weight_decay >= 0.0)) {
    throw std::invalid_argument(fmt::format("{}: invalid weight_decay value: {}", op, weight_decay));
  }
}

template <typename T>
void adam_update(T* p, const T* g, T* m, T* v, T* vmax, std::size_t n, std::int64_t t, double lr,
                 std::pair<double, double> betas, double eps) {
  // The scalars are computed in double, as torch computes them in Python, then used at T's precision.
  const double step = static_cast<double>(t);
  const double bias_correction1 = 1.0 - std::pow(betas.first, step);
  const double bias_correction2 = 1.0 - std::pow(betas.second, step);
  const T neg_step_size = static_cast<T>(-(lr / bias_correction1));
  const T bc2_sqrt = static_cast<T>(std::sqrt(bias_correction2));
  const T b1 = static_cast<T>(betas.first), b2 = static_cast<T>(betas.second);
  const T one_minus_b1 = static_cast<T>(1.0 - betas.first), one_minus_b2 = static_cast<T>(1.0 - betas.second);
  const T e = static_cast<T>(eps);
  // Elementwise: split over the threads (the result does not depend on how), one loop per variant so
  // that each vectorizes.
  tapegrad::detail::parallel_for(n, 1 << 15, [&](std::size_t begin, std::size_t end) {
    if (vmax) {
      for (std::size_t k = begin; k < end; ++k) {
        m[k] = m[k] * b1 + g[k] * one_minus_b1;
        v[k] = v[k] * b2 + one_minus_b2 * g[k] * g[k];
        vmax[k] = std::max(vmax[k], v[k]);
        const T denom = std::sqrt(vmax[k]) / bc2_sqrt + e;
        p[k] = p[k] + neg_step_size * (m[k] / denom);
      }
      return;
    }
    for (std::size_t k = begin; k < end; ++k) {
      m[k] = m[k] * b1 + g[k] * one_minus_b1;
      v[k] = v[k] * b2 + one_minus_b2 * g[k] * g[k];
      const T denom = std::sqrt(v[k]) / bc2_sqrt + e;
      p[k] = p[k] + neg_step_size * (m[k] / denom);
    }
  });
}

template void adam_update<float>(float*, const float*, float*, float*, float*, std::size_t, std::int64_t, double,
                                 std::pair<double, double>, double);
template void adam_update<double>(double*, const double*, double*, double*, double*, std::size_t, std::int64_t, double,
                                  std::pair<double, double>, double);

}  // namespace detail

namespace {

AdamOptions checked(const AdamOptions& o) {
  detail::check_adam_options("Adam", o.lr, o.betas, o.eps, o.weight_decay);
  return o;
}

}  // namespace

template <typename T>
Adam<T>::Adam(std::vector<Tensor<T>> params, AdamOptions options)
    : Optimizer<T>(std::move(params), checked(options).lr), options_(options) {}

template <typename T>
std::vector<std::string> Adam<T>::buffer_names() const {
  if (options_.amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"exp_avg", "exp_avg_sq"};
}

template <typename T>
void Adam<T>::step() {
  const T wd = static_cast<T>(options_.weight_decay);
  std::vector<T> decayed;
  for (std::size_t i = 0; i < this->params_.size(); ++i) {
    Tensor<T>& param = this->params_[i];
    if (!param.has_grad()) continue;
    auto& st = this->state_for(i);
    st.step += 1;
    T* p = param.mutable_data().data();
    const T* g = param.grad().data();
    const std::size_t n = param.numel();
    if (options_.weight_decay != 0.0) {
      decayed.resize(n);
      for (std::size_t k = 0; k < n; ++k) decayed[k] = g[k] + wd * p[k];
      g = decayed.data();
    }
    detail::adam_update(p, g, st.buffers[0].data(), st.buffers[1].data(),
                        options_.amsgrad ? st.buffers[2].data() : nullptr, n, st.step, this->lr_, options_.betas,
                        options_.eps);
  }
}

template class Adam<float>;
template class Adam<double>;

}  // namespace tapegrad::optim
