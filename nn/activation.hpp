/// @file
/// Activation modules (torch.nn.ReLU, GELU, SiLU, LeakyReLU, Softplus, ELU, Tanh, Sigmoid, Softmax,
/// LogSoftmax, Identity) and the other parameter-free ones (Flatten, CosineSimilarity): wrappers of
/// the ops, so they can sit in a Sequential and show in the printed module tree.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/autograd/normalize.hpp"
#include "tapegrad/autograd/shape_ops.hpp"
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

/// torch.nn.Softplus: log(1 + exp(beta x)) / beta, linear past threshold. Printed as torch prints
/// its defaults, `Softplus(beta=1, threshold=20)` (a whole number without ".0", as torch shows the
/// ints it is usually given).
template <typename T>
class Softplus : public Module<T, Softplus<T>> {
 public:
  explicit Softplus(double beta = 1, double threshold = 20) : beta(beta), threshold(threshold) {}
  Tensor<T> forward(const Tensor<T>& x) const { return softplus(x, beta, threshold); }
  std::string name() const override { return "Softplus"; }
  std::string extra_repr() const override { return fmt::format("beta={}, threshold={}", beta, threshold); }

  double beta;
  double threshold;
};

/// torch.nn.ELU: x where x > 0, alpha (exp(x) - 1) elsewhere; printed `ELU(alpha=1.0)` (a Python float,
/// as torch's default).
template <typename T>
class ELU : public Module<T, ELU<T>> {
 public:
  explicit ELU(double alpha = 1.0) : alpha(alpha) {}
  Tensor<T> forward(const Tensor<T>& x) const { return elu(x, alpha); }
  std::string name() const override { return "ELU"; }
  std::string extra_repr() const override { return "alpha=" + python_float(alpha); }

  double alpha;
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

/// torch.nn.Flatten: flatten(x, start_dim, end_dim), by default every dim but the batch's.
template <typename T>
class Flatten : public Module<T, Flatten<T>> {
 public:
  explicit Flatten(std::int64_t start_dim = 1, std::int64_t end_dim = -1) : start_dim(start_dim), end_dim(end_dim) {}
  Tensor<T> forward(const Tensor<T>& x) const { return flatten(x, start_dim, end_dim); }
  std::string name() const override { return "Flatten"; }
  std::string extra_repr() const override { return fmt::format("start_dim={}, end_dim={}", start_dim, end_dim); }

  std::int64_t start_dim;
  std::int64_t end_dim;
};

/// torch.nn.CosineSimilarity: cosine_similarity(x1, x2, dim, eps); printed `CosineSimilarity()`, as
/// torch (which shows no arguments).
template <typename T>
class CosineSimilarity : public Module<T, CosineSimilarity<T>> {
 public:
  explicit CosineSimilarity(std::int64_t dim = 1, double eps = 1e-8) : dim(dim), eps(eps) {}
  Tensor<T> forward(const Tensor<T>& x1, const Tensor<T>& x2) const { return cosine_similarity(x1, x2, dim, eps); }
  std::string name() const override { return "CosineSimilarity"; }

  std::int64_t dim;
  double eps;
};

/// torch.nn.Identity: returns its input (the same tensor, so gradients flow through unchanged); a
/// placeholder where a configuration leaves a layer out.
template <typename T>
class Identity : public Module<T, Identity<T>> {
 public:
  Tensor<T> forward(const Tensor<T>& x) const { return x; }
  std::string name() const override { return "Identity"; }
};

/// The activation of the transformer feed-forward blocks (torch's activation="relu" | "gelu", and GELU's
/// tanh approximation), the one autograd's linear_activation takes.
using Activation = tapegrad::Activation;

/// relu(x), gelu(x) or gelu(x, approximate="tanh").
template <typename T>
Tensor<T> apply_activation(Activation activation, const Tensor<T>& x) {
  if (activation == Activation::ReLU) return relu(x);
  return gelu(x, activation == Activation::GELUTanh ? GeluApproximate::Tanh : GeluApproximate::None);
}

}  // namespace tapegrad::nn
