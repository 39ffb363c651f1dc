/// @file
/// Linear: y = x W^T + b, torch.nn.Linear with its parameter names and initialization.
#pragma once

#include <memory>
#include <string>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

template <typename T>
struct LoraAdapter;

/// torch.nn.Linear: weight [out_features, in_features], bias [out_features].
template <typename T>
class Linear : public Module<T, Linear<T>> {
 public:
  /// weight [out, in] and bias [out] both from U(-1/sqrt(in), 1/sqrt(in)): torch's
  /// kaiming_uniform_(a=sqrt(5)) for the weight and its fan-in bound for the bias.
  Linear(std::size_t in_features, std::size_t out_features, Generator& gen, bool bias = true);

  /// x [..., in] -> [..., out], plus the LoRA adapter's term when there is one (nn/lora.hpp).
  Tensor<T> forward(const Tensor<T>& x) const;
  /// activation(forward(x)) in one fused op (autograd's linear_activation), as a feed-forward block
  /// applies it: the same values, one pass less over the output.
  Tensor<T> forward(const Tensor<T>& x, Activation activation) const;

  std::string name() const override { return type_name_; }
  std::string extra_repr() const override;

  std::size_t in_features, out_features;
  Tensor<T> weight;
  Tensor<T> bias;  ///< undefined when bias = false
  /// The LoRA adapter nn::inject_lora added (its A and B are the submodules lora_A and lora_B); null
  /// without one, and then forward is the plain product.
  std::shared_ptr<LoraAdapter<T>> lora;

 private:
  template <typename>
  friend class MultiheadAttention;
  std::string type_name_ = "Linear";  ///< MultiheadAttention's out_proj prints as torch names it
};

extern template class Linear<float>;
extern template class Linear<double>;

}  // namespace tapegrad::nn
