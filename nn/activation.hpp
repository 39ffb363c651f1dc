/// @file
/// Activation modules (torch.nn.ReLU, GELU, SiLU, LeakyReLU, Tanh, Sigmoid, Softmax, LogSoftmax,
/// Identity): parameter-free wrappers of the ops, so they can sit in a Sequential and show in the
/// printed module tree.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/autograd/softmax.hpp"
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

/// torch.nn.SiLU (x * sigmoid(x), "swish") as a module.
template <typename T>
class SiLU : public Module<T, SiLU<T>> {
 public:
  Tensor<T> forward(const Tensor<T>& x) const { return silu(x); }
  std::string name() const override { return "SiLU"; }
};

/// torch.nn.LeakyReLU: x where x > 0, negative_slope * x elsewhere.
template <typename T>
class LeakyReLU : public Module<T, LeakyReLU<T>> {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope(negative_slope) {}
  Tensor<T> forward(const Tensor<T>& x) const { return leaky_relu(x, negative_slope); }
  std::string name() const override { return "LeakyReLU"; }
  std::string extra_repr() const override { return fmt::format("negative_slope={}", negative_slope); }

  double negative_slope;
};

/// torch.nn.Tanh as a module.
template <typename T>
class Tanh : public Module<T, Tanh<T>> {
 public:
  Tensor<T> forward(const Tensor<T>& x) const { return tanh(x); }
  std::string name() const override { return "Tanh"; }
};

/// torch.nn.Sigmoid as a module.
template <typename T>
class Sigmoid : public Module<T, Sigmoid<T>> {
 public:
  Tensor<T> forward(const Tensor<T>& x) const { return sigmoid(x); }
  std::string name() const override { return "Sigmoid"; }
};

/// torch.nn.Softmax over `dim` (required: torch's implicit choice of dim is deprecated).
template <typename T>
class Softmax : public Module<T, Softmax<T>> {
 public:
  explicit Softmax(std::int64_t dim) : dim(dim) {}
  Tensor<T> forward(const Tensor<T>& x) const { return softmax(x, dim); }
  std::string name() const override { return "Softmax"; }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim); }

  std::int64_t dim;
};

/// torch.nn.LogSoftmax over `dim`.
template <typename T>
class LogSoftmax : public Module<T, LogSoftmax<T>> {
 public:
  explicit LogSoftmax(std::int64_t dim) : dim(dim) {}
  Tensor<T> forward(const Tensor<T>& x) const { return log_softmax(x, dim); }
  std::string name() const override { return "LogSoftmax"; }
  std::string extra_repr() const override { return "dim=" + std::to_string(dim); }

  std::int64_t dim;
};

/// torch.nn.Identity: returns its input (the same tensor, so gradients flow through unchanged); a
/// placeholder where a configuration leaves a layer out.
template <typename T>
class Identity : public Module<T, Identity<T>> {
 public:
  Tensor<T> forward(const Tensor<T>& x) const { return x; }
  std::string name() const override { return "Identity"; }
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
