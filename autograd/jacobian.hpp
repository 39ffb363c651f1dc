/// @file
/// jacobian: the full Jacobian of a function at a point, row by row through reverse mode
/// (torch.autograd.functional.jacobian).
#pragma once

#include <functional>
#include <vector>

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

namespace detail {
/// The function types behind a nested name, so that T is deduced from the inputs alone and a lambda
/// can be passed as f: jacobian(f, x) rather than jacobian<double>(f, x).
template <typename T>
struct JacobianFunctions {
  using Many = std::function<Tensor<T>(const std::vector<Tensor<T>>& inputs)>;
  using One = std::function<Tensor<T>(const Tensor<T>& input)>;
};
}  // namespace detail

/// A function of several tensors returning one tensor, as jacobian() differentiates it.
template <typename T>
using JacobianFunction = typename detail::JacobianFunctions<T>::Many;
/// A function of one tensor returning one tensor.
template <typename T>
using UnaryJacobianFunction = typename detail::JacobianFunctions<T>::One;

/// The Jacobian of y = f(inputs) with respect to each input, at the inputs' values: element i of the
/// result has shape [y.shape()..., inputs[i].shape()...] and holds dy[o...] / dinputs[i][j...], as
/// torch.autograd.functional.jacobian(f, inputs) with its defaults (create_graph=False, strict=False).
/// f runs once, on detached copies of the inputs that require grad (the inputs themselves, their
/// gradients and the tape outside are left alone, and grad mode is on even under a NoGradGuard);
/// then one backward pass per element of y, each with a one-hot gradient and retain_graph, gives one
/// row of every Jacobian. An input y does not depend on gets zeros. The results do not require grad.
/// Throws std::invalid_argument for no inputs, an undefined input, or f returning an undefined tensor.
template <typename T>
std::vector<Tensor<T>> jacobian(const JacobianFunction<T>& f, const std::vector<Tensor<T>>& inputs);

/// The same for a function of one tensor: the Jacobian of shape [y.shape()..., input.shape()...].
template <typename T>
Tensor<T> jacobian(const UnaryJacobianFunction<T>& f, const Tensor<T>& input);

}  // namespace tapegrad
