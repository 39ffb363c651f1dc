/// @file
/// The tape: every differentiable op appends a Node holding its backward closure; backward() replays
/// the nodes reachable from the loss in reverse order of creation (a Wengert list read backwards).
///
/// Writing an op (forward and backward stand together in one function; docs/design.md has the full
/// recipe, compiled by tests/autograd/test_custom_op.cpp):
///
/// @code{.cpp}
///   template <typename T>
///   Tensor<T> my_exp(const Tensor<T>& x) {
///     Tensor<T> out(map(x.data(), [](T v) { return std::exp(v); }));        // the forward
///     if (should_record(x))                                                   // only if a gradient is wanted
///       record(out, "my_exp", {x}, [y = out.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
///         in.accumulate(0, zip(g, *y, [](T gv, T yv) { return gv * yv; }));  // d loss / d x
///       });
///     return out;
///   }
/// @endcode
///
/// map and zip are in autograd/elementwise_kernels.hpp; for operands that broadcast, broadcast_apply
/// computes the forward and unbroadcast sums each gradient back to its operand's shape
/// (autograd/broadcast.hpp). A closure captures only the values its backward reads (saved() shares
/// them without a copy), never a Tensor: capturing the output would make a reference cycle.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "tapegrad/autograd/scoped_flag.hpp"
#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// Whether ops record onto the tape in this thread (torch.is_grad_enabled()).
///@{
bool is_grad_enabled();
void set_grad_enabled(bool enabled);
///@}

/// RAII: records nothing while alive (torch.no_grad()).
class NoGradGuard : detail::ScopedFlag<is_grad_enabled, set_grad_enabled> {
 public:
  NoGradGuard() : ScopedFlag(false) {}
};

/// RAII: records while alive, even inside a NoGradGuard (torch.enable_grad()).
class EnableGradGuard : detail::ScopedFlag<is_grad_enabled, set_grad_enabled> {
 public:
  EnableGradGuard() : ScopedFlag(true) {}
};

/// Whether anomaly detection is on (torch.is_anomaly_enabled()). It is global, as in torch.
bool is_anomaly_enabled();
/// Anomaly detection (torch.autograd.set_detect_anomaly): while on, every op recorded on the tape
/// checks its output for NaN, and every backward closure checks each gradient it produces for NaN
/// and infinity; the first one found throws AnomalyError naming the op, the shape and the op's
/// sequence number on the tape. Forward infinities are allowed: -inf is how masks are written
/// (masked_fill before softmax or max), and one that does harm turns into a NaN or a non-finite
/// gradient, which are caught. Costs one pass over every op's output and gradients.
void set_detect_anomaly(bool enabled);

/// RAII: anomaly detection on while alive (torch.autograd.detect_anomaly()).
class DetectAnomalyGuard : detail::ScopedFlag<is_anomaly_enabled, set_detect_anomaly> {
 public:
  DetectAnomalyGuard() : ScopedFlag(true) {}
};

/// Thrown by anomaly detection: "detect_anomaly: the forward of 'log' (recorded at tape position 12)
/// produced NaN in its output of shape [2, 3] (first at flat index 4)", or "the backward of ..." and
/// "in the gradient for input 0".
class AnomalyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Handed to a backward closure: which inputs want a gradient (needs(i), in the order of record()'s
/// inputs), and where to put it (accumulate(i, gradient)). Accumulating adds to what other uses of the
/// input contributed, so a closure never reads or overwrites another's gradient.
template <typename T>
class GradInputs {
 public:
  /// sequence: the op's position on the tape, named by anomaly detection. grad_output: the engine's own
  /// buffer of the gradient handed to the closure, which nothing reads after it (null for a gradient
  /// the caller keeps, such as backward()'s seed). retain_graph: whether the closure runs again.
  GradInputs(const char* op, const std::vector<std::shared_ptr<AutogradMeta<T>>>& inputs, std::uint64_t sequence = 0,
             xt::xarray<T>* grad_output = nullptr, bool retain_graph = true)
      : op_(op), inputs_(inputs), sequence_(sequence), grad_output_(grad_output), retain_graph_(retain_graph) {}
  bool needs(std::size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  /// The gradient g the closure was handed, as a buffer it may overwrite: g's own storage when the engine
  /// owns it, else a copy. An elementwise backward then writes its input's gradient in place, so a large
  /// gradient is not held twice. g must not be read after this call.
  xt::xarray<T> take_grad_output(const xt::xarray<T>& g) {
    if (grad_output_ != &g) return g;
    xt::xarray<T> own = std::move(*grad_output_);
    grad_output_ = nullptr;
    return own;
  }
  /// Whether the graph is kept for another backward (retain_graph): only when it is not may a closure
  /// release its saved values as soon as it has read them, before its other products allocate.
  bool retain_graph() const { return retain_graph_; }
  /// Adds g to input i's gradient; g must have input i's shape (checked: a wrong shape is a bug in
  /// the op and is reported with the op's name).
  void accumulate(std::size_t i, xt::xarray<T>&& g);
  /// The same for a gradient the closure keeps (one gradient for several inputs): copied only when
  /// the input has no gradient yet, added in place otherwise.
  void accumulate(std::size_t i, const xt::xarray<T>& g);

 private:
  // Both accumulate overloads: checks g, then adds it (moved or copied as G says) where it belongs.
  template <typename G>
  void deliver(std::size_t i, G&& g);

  const char* op_;
  const std::vector<std::shared_ptr<AutogradMeta<T>>>& inputs_;
  std::uint64_t sequence_;
  xt::xarray<T>* grad_output_;
  bool retain_graph_;
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

/// True when grad mode is on and any input requires grad: only then does an op build its closure
/// (undefined tensors, such as an absent bias, count as not requiring grad).
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

/// Puts `output` on the tape as the result of op `name` (a string literal; it is shown as grad_fn, see
/// Tensor's operator<<) applied to `inputs`. backward(g, in) runs once per backward pass with g, the
/// gradient of the loss with respect to output (output's shape), and gives input i its gradient with
/// in.accumulate(i, ...) where in.needs(i). Call it only when should_record(inputs...) is true.
///@{
template <typename T, typename F>
void record(Tensor<T>& output, const char* name, std::initializer_list<Tensor<T>> inputs, F&& backward) {
  attach_node<T>(output, name, std::vector<Tensor<T>>(inputs), BackwardFn<T>(std::forward<F>(backward)));
}
/// record() for a number of inputs known only at run time (cat, stack).
template <typename T, typename F>
void record(Tensor<T>& output, const char* name, const std::vector<Tensor<T>>& inputs, F&& backward) {
  attach_node<T>(output, name, inputs, BackwardFn<T>(std::forward<F>(backward)));
}
///@}

/// The reverse pass from an output known by its autograd state alone (Tensor::backward calls it with
/// the tensor's): a caller that needs the history but not the output's values, such as checkpoint's
/// recomputation, drops the values first. seed must have the output's shape (Tensor::backward checks).
template <typename T>
void run_backward(const std::shared_ptr<AutogradMeta<T>>& root, const xt::xarray<T>& seed, bool retain_graph);

}  // namespace tapegrad
