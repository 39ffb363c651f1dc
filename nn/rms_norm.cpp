#include "tapegrad/nn/rms_norm.hpp"

#include "tapegrad/autograd/layer_norm.hpp"

namespace tapegrad::nn {

template <typename T>
RMSNorm<T>::RMSNorm(Shape shape, std::optional<double> eps, bool affine)
    : normalized_shape(std::move(shape)), eps(eps), elementwise_affine(affine) {
  if (affine) weight = this->register_parameter("weight", Tensor<T>::ones(normalized_shape));
}

template <typename T>
Tensor<T> RMSNorm<T>::forward(const Tensor<T>& x) const {
  return rms_norm(x, normalized_shape, weight, eps);
}

template <typename T>
std::string RMSNorm<T>::extra_repr() const {
  return python_tuple(normalized_shape) + ", eps=" + (eps ? python_float(*eps) : std::string("None")) +
         ", elementwise_affine=" + (elementwise_affine ? "True" : "False");
}

template class RMSNorm<float>;
template class RMSNorm<double>;

}  // namespace tapegrad::nn
