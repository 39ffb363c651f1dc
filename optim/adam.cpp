#include "tapegrad/optim/adam.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "tapegrad/autograd/parallel.hpp"
#include "tapegrad/optim/adamw.hpp"

namespace tapegrad::optim {

namespace detail {

void check_adam_options(const char* op, double lr, std::pair<double, double> betas, double eps, double weight_decay) {
  check_nonnegative(op, {{"learning rate", lr}});
  // Stricter than torch, which accepts 0: without a positive floor, a parameter whose gradient has
  // been 0 from the start (an embedding row never looked up) has m = v = 0 and is updated by 0 / 0.
  if (!(eps > 0.0)) {
    throw std::invalid_argument(fmt::format(
        "{}: invalid epsilon value: {} (must be positive: a parameter whose gradient is 0 would be updated by 0/0)", op,
        eps));
  }
  if (!(betas.first >= 0.0 && betas.first < 1.0)) {
    throw std::invalid_argument(fmt::format("{}: invalid beta parameter at index 0: {}", op, betas.first));
  }
  if (!(betas.second >= 0.0 && betas.second < 1.0)) {
    throw std::invalid_argument(fmt::format("{}: invalid beta parameter at index 1: {}", op, betas.second));
  }
  check_nonnegative(op, {{"weight_decay value", weight_decay}});
}

template <typename T>
void adam_update(T* p, const T* g, T* m, T* v, T* vmax, std::size_t n, std::int64_t t, double lr,
                 std::pair<double, double> betas, double eps, T decay, T l2) {
  // The scalars are computed in double, as torch computes them in Python, then used at T's precision.
  const double step = static_cast<double>(t);
  const double bias_correction1 = 1.0 - std::pow(betas.first, step);
  const double bias_correction2 = 1.0 - std::pow(betas.second, step);
  const T neg_step_size = static_cast<T>(-(lr / bias_correction1));
  const T bc2_sqrt = static_cast<T>(std::sqrt(bias_correction2));
  const T b1 = static_cast<T>(betas.first), b2 = static_cast<T>(betas.second);
  const T one_minus_b1 = static_cast<T>(1.0 - betas.first), one_minus_b2 = static_cast<T>(1.0 - betas.second);
  const T e = static_cast<T>(eps);
  // One pass over p, g, m and v per element, in torch's order of operations: the decay of p (AdamW:
  // p * (1 - lr wd)) or the L2 term of the gradient (Adam: g + wd p), the moments, the step. Split over
  // the threads (the result does not depend on how); every operand is a local so that each variant's
  // loop vectorizes.
  const auto run = [&](auto amsgrad, auto decays, auto has_l2) {
    tapegrad::detail::parallel_for(n, 1 << 14, [&, p, g, m, v, vmax](std::size_t begin, std::size_t end) {
      T* __restrict pp = p;
      const T* __restrict gg = g;
      T* __restrict mm = m;
      T* __restrict vv = v;
      T* __restrict vm = vmax;
      const T s = neg_step_size, c2 = bc2_sqrt, beta1 = b1, beta2 = b2, c1 = one_minus_b1, c3 = one_minus_b2;
      const T ep = e, dec = decay, wd = l2;
      for (std::size_t k = begin; k < end; ++k) {
        T pk = pp[k];
        T gk = gg[k];
        if (decltype(decays)::value) pk = pk * dec;
        if (decltype(has_l2)::value) gk = gk + wd * pk;
        const T mk = mm[k] * beta1 + gk * c1;
        const T vk = vv[k] * beta2 + c3 * gk * gk;
        mm[k] = mk;
        vv[k] = vk;
        T denom;
        if (decltype(amsgrad)::value) {
          const T vmk = std::max(vm[k], vk);
          vm[k] = vmk;
          denom = std::sqrt(vmk) / c2 + ep;
        } else {
          denom = std::sqrt(vk) / c2 + ep;
        }
        pp[k] = pk + s * (mk / denom);
      }
    });
  };
  using Yes = std::true_type;
  using No = std::false_type;
  const bool decays = decay != T(1), has_l2 = l2 != T(0);
  if (vmax) {
    if (decays) return has_l2 ? run(Yes{}, Yes{}, Yes{}) : run(Yes{}, Yes{}, No{});
    return has_l2 ? run(Yes{}, No{}, Yes{}) : run(Yes{}, No{}, No{});
  }
  if (decays) return has_l2 ? run(No{}, Yes{}, Yes{}) : run(No{}, Yes{}, No{});
  return has_l2 ? run(No{}, No{}, Yes{}) : run(No{}, No{}, No{});
}

template void adam_update<float>(float*, const float*, float*, float*, float*, std::size_t, std::int64_t, double,
                                 std::pair<double, double>, double, float, float);
template void adam_update<double>(double*, const double*, double*, double*, double*, std::size_t, std::int64_t, double,
                                  std::pair<double, double>, double, double, double);

namespace {

// The options checked before the parameters are taken in, as torch does.
template <typename Options>
const Options& checked(const Options& o, const char* name) {
  check_adam_options(name, o.lr, o.betas, o.eps, o.weight_decay);
  return o;
}

}  // namespace

template <typename T, typename Options>
AdamFamily<T, Options>::AdamFamily(std::vector<Tensor<T>> params, const Options& options, const char* name)
    : Optimizer<T>(std::move(params), checked(options, name).lr), options_(options) {}

template <typename T, typename Options>
std::vector<std::string> AdamFamily<T, Options>::buffer_names() const {
  if (options_.amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"exp_avg", "exp_avg_sq"};
}

template <typename T, typename Options>
void AdamFamily<T, Options>::update_all(T decay, T l2) {
  for (std::size_t i = 0; i < this->params_.size(); ++i) {
    Tensor<T>& param = this->params_[i];
    if (!param.has_grad()) continue;
    auto& st = this->state_for(i);
    st.step += 1;
    adam_update(param.mutable_data().data(), param.grad().data(), st.buffers[0].data(), st.buffers[1].data(),
                options_.amsgrad ? st.buffers[2].data() : nullptr, param.numel(), st.step, this->lr_, options_.betas,
                options_.eps, decay, l2);
  }
}

template class AdamFamily<float, AdamOptions>;
template class AdamFamily<double, AdamOptions>;
template class AdamFamily<float, AdamWOptions>;
template class AdamFamily<double, AdamWOptions>;

}  // namespace detail

template <typename T>
Adam<T>::Adam(std::vector<Tensor<T>> params, AdamOptions options)
    : detail::AdamFamily<T, AdamOptions>(std::move(params), options, "Adam") {}

template <typename T>
void Adam<T>::step() {
  this->update_all(T(1), static_cast<T>(this->options_.weight_decay));
}

template class Adam<float>;
template class Adam<double>;

}  // namespace tapegrad::optim
