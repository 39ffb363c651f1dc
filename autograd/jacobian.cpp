#include "tapegrad/autograd/jacobian.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "tapegrad/autograd/tape.hpp"

namespace tapegrad {

namespace {

Shape concat(const Shape& a, const Shape& b) {
  Shape out(a);
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

}  // namespace

template <typename T>
std::vector<Tensor<T>> jacobian(const JacobianFunction<T>& f, const std::vector<Tensor<T>>& inputs) {
  if (inputs.empty()) throw std::invalid_argument("jacobian: no inputs to differentiate with respect to");
  EnableGradGuard enable_grad;  // jacobian records f even under a NoGradGuard
  std::vector<Tensor<T>> points;
  points.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) throw std::invalid_argument("jacobian: input " + std::to_string(i) + " is undefined");
    points.emplace_back(xt::xarray<T>(inputs[i].data()), /*requires_grad=*/true);
  }
  const Tensor<T> y = f(points);
  if (!y.defined()) throw std::invalid_argument("jacobian: the function returned an undefined tensor");

  // J_i as a [y.numel(), inputs[i].numel()] matrix, filled one row (one output element) at a time.
  const std::size_t rows = y.numel();
  std::vector<xt::xarray<T>> jac;
  jac.reserve(points.size());
  for (const auto& x : points) jac.push_back(xt::zeros<T>({rows, x.numel()}));

  if (y.requires_grad()) {
    xt::xarray<T> one_hot = xt::zeros<T>(y.shape());
    for (std::size_t r = 0; r < rows; ++r) {
      for (auto& x : points) x.zero_grad();
      one_hot.data()[r] = T(1);
      y.backward(one_hot, /*retain_graph=*/r + 1 < rows);
      one_hot.data()[r] = T(0);
      for (std::size_t i = 0; i < points.size(); ++i) {
        if (!points[i].has_grad()) continue;
        const T* g = points[i].grad().data();
        std::copy(g, g + points[i].numel(), jac[i].data() + r * points[i].numel());
      }
    }
  }

  std::vector<Tensor<T>> out;
  out.reserve(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    jac[i].reshape(concat(y.shape(), points[i].shape()));
    out.emplace_back(std::move(jac[i]));
  }
  return out;
}

template <typename T>
Tensor<T> jacobian(const UnaryJacobianFunction<T>& f, const Tensor<T>& input) {
  return jacobian<T>(JacobianFunction<T>([&f](const std::vector<Tensor<T>>& in) { return f(in[0]); }),
                     std::vector<Tensor<T>>{input})[0];
}

template std::vector<Tensor<float>> jacobian(const JacobianFunction<float>&, const std::vector<Tensor<float>>&);
template std::vector<Tensor<double>> jacobian(const JacobianFunction<double>&, const std::vector<Tensor<double>>&);
template Tensor<float> jacobian(const UnaryJacobianFunction<float>&, const Tensor<float>&);
template Tensor<double> jacobian(const UnaryJacobianFunction<double>&, const Tensor<double>&);

}  // namespace tapegrad
