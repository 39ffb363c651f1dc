#include "tapegrad/optim/adamw.hpp"

namespace tapegrad::optim {

namespace {

AdamWOptions checked(const AdamWOptions& o) {
  detail::check_adam_options("AdamW", o.lr, o.betas, o.eps, o.weight_decay);
  return o;
}

}  // namespace

template <typename T>
AdamW<T>::AdamW(std::vector<Tensor<T>> params, AdamWOptions options)
    : Optimizer<T>(std::move(params), checked(options).lr), options_(options) {}

template <typename T>
std::vector<std::string> AdamW<T>::buffer_names() const {
  if (options_.amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"exp_avg", "exp_avg_sq"};
}

template <typename T>
void AdamW<T>::step() {
  // torch multiplies by (1 - lr * weight_decay) computed in double, used at T's precision.
  const T decay = static_cast<T>(1.0 - this->lr_ * options_.weight_decay);
  for (std::size_t i = 0; i < this->params_.size(); ++i) {
    Tensor<T>& param = this->params_[i];
    if (!param.has_grad()) continue;
    auto& st = this->state_for(i);
    st.step += 1;
    detail::adam_update(param.mutable_data().data(), param.grad().data(), st.buffers[0].data(), st.buffers[1].data(),
                        options_.amsgrad ? st.buffers[2].data() : nullptr, param.numel(), st.step, this->lr_,
                        options_.betas, options_.eps, decay, T(0));
  }
}

template class AdamW<float>;
template class AdamW<double>;

}  // namespace tapegrad::optim
