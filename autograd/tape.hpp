/// @file
/// The tape: every differentiable op appends a Node holding its backward closure; backward() replays
/// the nodes reachable from the loss in reverse order of creation (a Wengert list read backwards).
///
/// Writing an op (forward and backward stand together in one function):
///
/// @code
///   template <typename T>
///   Tensor<T> exp(const Tensor<T>& x) {
///     Tensor<T> y(xt::eval(xt::exp(x.data())));
///     if (should_record(x))
///       record(y, "exp", {x}, [y_val = y.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
///         in.accumulate(0, g * *y_val);
///       });
///     return y;
///   }
/// @endcode
///
/// A closure captures only the values its backward reads (saved() shares them without a copy), never
/// a Tensor: capturing the output would make a reference cycle.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// Whether ops record onto the tape in this thread (torch.is_grad_enabled()).
///@{
bool is_grad_enabled();
void set_grad_enabled(bool enabled);
///@}

/// RAII: records nothing while alive (torch.no_grad()).
class NoGradGuard {
 public:
  NoGradGuard() : previous_(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

/// Handed to a backward closure: which inputs want a gradient, and where to put it.
template <typename T>
class GradInputs {
 public:
  GradInputs(const char* op, const std::vector<std::shared_ptr<AutogradMeta<T>>>& inputs) : op_(op), inputs_(inputs) {}
  bool needs(std::size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  /// Adds g to input i's gradient; g must have input i's shape (checked: a wrong shape is a bug in
  /// the op and is reported with the op's name).
  void accumulate(std::size_t i, xt::xarray<T>&& g);
  void accumulate(std::size_t i, const xt::xarray<T>& g) { accumulate(i, xt::xarray<T>(g)); }

 private:
  const char* op_;
  const std::vector<std::shared_ptr<AutogradMeta<T>>>& inputs_;
};

/// A node's backward closure: the gradient of its output in, its inputs' gradients out through
/// GradInputs::accumulate.
template <typename T>
using BackwardFn = std::function<void(const xt::xarray<T>& grad_output, GradInputs<T>& grad_inputs)>;

/// One recorded op on the tape: its inputs' autograd state and its backward closure.
template <typename T>
struct Node {
  const char* name = "";
  std::uint64_t sequence = 0;  ///< creation order: the position on the tape
  /// One entry per op input; null where that input needs no gradient.
  std::vector<std::shared_ptr<AutogradMeta<T>>> inputs;
  BackwardFn<T> backward;  ///< reset after a pass without retain_graph, freeing the saved values
  bool released = false;
  /// The gradient flowing into this node's output, summed over its uses during a pass.
  xt::xarray<T> pending_grad;
  bool has_pending_grad = false;
};

/// True when grad mode is on and any input requires grad: only then does an op build its closure.
///@{
template <typename T, typename... Rest>
bool should_record(const Tensor<T>& first, const Rest&... rest) {
  if (!is_grad_enabled()) return false;
  return (first.defined() && first.requires_grad()) || ((rest.defined() && rest.requires_grad()) || ...);
}
template <typename T>
bool should_record(const std::vector<Tensor<T>>& inputs) {
  if (!is_grad_enabled()) return false;
  for (const auto& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}
///@}

/// Makes `output` a non-leaf produced by op `name` from `inputs`, with the given backward closure.
template <typename T>
void attach_node(Tensor<T>& output, const char* name, const std::vector<Tensor<T>>& inputs, BackwardFn<T> backward);

/// Attaches backward (a callable taking the output's gradient and GradInputs<T>&) to output as
/// op `name` of `inputs`: the closure idiom every op uses, forward and backward in one function.
///@{
template <typename T, typename F>
void record(Tensor<T>& output, const char* name, std::initializer_list<Tensor<T>> inputs, F&& backward) {
  attach_node<T>(output, name, std::vector<Tensor<T>>(inputs), BackwardFn<T>(std::forward<F>(backward)));
}
template <typename T, typename F>
void record(Tensor<T>& output, const char* name, const std::vector<Tensor<T>>& inputs, F&& backward) {
  attach_node<T>(output, name, inputs, BackwardFn<T>(std::forward<F>(backward)));
}
///@}

}  // namespace tapegrad
