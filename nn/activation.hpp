/// @file
/// Activation modules (torch.nn.ReLU, torch.nn.GELU): parameter-free wrappers of the elementwise ops,
/// so they can sit in a Sequential and show in the printed module tree.
#pragma once

#include <string>

#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

/// torch.nn.ReLU as a module, for Sequential.
template <typename T>
class ReLU : public Module<T, ReLU<T>> {
 public:
  Tensor<T> forward(const Tensor<T>& x) const { return relu(x); }
  std::string name() const override { return "ReLU"; }
};

/// torch.nn.GELU as a module, for Sequential.
template <typename T>
class GELU : public Module<T, GELU<T>> {
 public:
  explicit GELU(GeluApproximate approximate = GeluApproximate::None) : approximate(approximate) {}
  Tensor<T> forward(const Tensor<T>& x) const { return gelu(x, approximate); }
  std::string name() const override { return "GELU"; }
  std::string extra_repr() const override {
    return approximate == GeluApproximate::Tanh ? "approximate='tanh'" : "approximate='none'";
  }

  GeluApproximate approximate;
};

/// The activation of the transformer feed-forward blocks (torch's activation="relu" | "gelu"), the one
/// autograd's linear_activation takes.
using Activation = tapegrad::Activation;

/// relu(x) or gelu(x).
template <typename T>
Tensor<T> apply_activation(Activation activation, const Tensor<T>& x) {
  return activation == Activation::ReLU ? relu(x) : gelu(x);
}

}  // namespace tapegrad::nn
