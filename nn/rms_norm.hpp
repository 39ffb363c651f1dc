/// @file
/// RMSNorm (torch.nn.RMSNorm, torch 2.4): the root-mean-square normalization of LLaMA-style models.
#pragma once

#include <optional>
#include <string>

#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

/// torch.nn.RMSNorm: x * rsqrt(mean(x²) + eps) * weight over the trailing normalized_shape dims, with
/// weight (ones at first) of normalized_shape when elementwise_affine.
template <typename T>
class RMSNorm : public Module<T, RMSNorm<T>> {
 public:
  /// eps unset is torch's None: the epsilon of T (torch.finfo(dtype).eps), chosen at each forward.
  explicit RMSNorm(Shape normalized_shape, std::optional<double> eps = std::nullopt, bool elementwise_affine = true);
  explicit RMSNorm(std::size_t normalized_size, std::optional<double> eps = std::nullopt,
                   bool elementwise_affine = true)
      : RMSNorm(Shape{normalized_size}, eps, elementwise_affine) {}

  Tensor<T> forward(const Tensor<T>& x) const;

  std::string name() const override { return "RMSNorm"; }
  /// As torch 2.4 prints it: "(64,), eps=None, elementwise_affine=True".
  std::string extra_repr() const override;

  Shape normalized_shape;
  std::optional<double> eps;
  bool elementwise_affine;
  Tensor<T> weight;  ///< undefined without elementwise_affine
};

extern template class RMSNorm<float>;
extern template class RMSNorm<double>;

}  // namespace tapegrad::nn
