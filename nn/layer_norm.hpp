/// @file
/// LayerNorm (torch.nn.LayerNorm): normalizes over the trailing normalized_shape dims.
#pragma once

#include <string>

#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

/// torch.nn.LayerNorm: weight and bias of normalized_shape.
template <typename T>
class LayerNorm : public Module<T, LayerNorm<T>> {
 public:
  /// weight ones and bias zeros of normalized_shape when elementwise_affine, as torch.
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  explicit LayerNorm(std::size_t normalized_size, double eps = 1e-5, bool elementwise_affine = true)
      : LayerNorm(Shape{normalized_size}, eps, elementwise_affine) {}

  Tensor<T> forward(const Tensor<T>& x) const;
  /// forward(x + residual) in one fused op (autograd's add_layer_norm), the post-LN residual block's
  /// norm: the same values, one pass less over memory each way.
  Tensor<T> forward(const Tensor<T>& x, const Tensor<T>& residual) const;

  std::string name() const override { return "LayerNorm"; }
  std::string extra_repr() const override;

  Shape normalized_shape;
  double eps;
  bool elementwise_affine;
  Tensor<T> weight, bias;  ///< undefined without elementwise_affine
};

extern template class LayerNorm<float>;
extern template class LayerNorm<double>;

}  // namespace tapegrad::nn
