#include "tapegrad/nn/layer_norm.hpp"

#include "tapegrad/autograd/layer_norm.hpp"

namespace tapegrad::nn {

template <typename T>
LayerNorm<T>::LayerNorm(Shape shape, double eps, bool affine)
    : normalized_shape(std::move(shape)), eps(eps), elementwise_affine(affine) {
  if (affine) {
    weight = this->register_parameter("weight", Tensor<T>::ones(normalized_shape));
    bias = this->register_parameter("bias", Tensor<T>::zeros(normalized_shape));
  }
}

template <typename T>
Tensor<T> LayerNorm<T>::forward(const Tensor<T>& x) const {
  return layer_norm(x, normalized_shape, weight, bias, eps);
}

template <typename T>
Tensor<T> LayerNorm<T>::forward(const Tensor<T>& x, const Tensor<T>& residual) const {
  return add_layer_norm(x, residual, normalized_shape, weight, bias, eps);
}

template <typename T>
std::string LayerNorm<T>::extra_repr() const {
  return python_tuple(normalized_shape) + ", eps=" + python_float(eps) +
         ", elementwise_affine=" + (elementwise_affine ? "True" : "False");
}

template class LayerNorm<float>;
template class LayerNorm<double>;

}  // namespace tapegrad::nn
