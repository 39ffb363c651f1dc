#include "tapegrad/nn/linear.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/nn/activation.hpp"
#include "tapegrad/nn/lora.hpp"

namespace tapegrad::nn {

template <typename T>
Linear<T>::Linear(std::size_t in, std::size_t out, Generator& gen, bool with_bias)
    : in_features(in), out_features(out) {
  // kaiming_uniform_(a=sqrt(5)): gain sqrt(2 / (1 + 5)), bound gain * sqrt(3 / fan_in) = 1 / sqrt(fan_in).
  const T bound = in > 0 ? T(1 / std::sqrt(static_cast<double>(in))) : T(0);
  weight = this->register_parameter("weight", Tensor<T>::uniform({out, in}, -bound, bound, gen));
  if (with_bias) bias = this->register_parameter("bias", Tensor<T>::uniform({out}, -bound, bound, gen));
}

template <typename T>
Tensor<T> Linear<T>::forward(const Tensor<T>& x) const {
  if (!lora || lora->merged) return linear(x, weight, bias);
  return linear(x, weight, bias) + lora->forward(x);
}

template <typename T>
Tensor<T> Linear<T>::forward(const Tensor<T>& x, Activation activation) const {
  if (!lora || lora->merged) return linear_activation(x, weight, bias, activation);
  // The fused op has no room for the adapter's term: it joins before the activation.
  return apply_activation(activation, linear(x, weight, bias) + lora->forward(x));
}

template <typename T>
std::string Linear<T>::extra_repr() const {
  return fmt::format("in_features={}, out_features={}, bias={}", in_features, out_features,
                     bias.defined() ? "True" : "False");
}

template class Linear<float>;
template class Linear<double>;

}  // namespace tapegrad::nn
