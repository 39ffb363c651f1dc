#include "tapegrad/autograd/tape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "tapegrad/autograd/elementwise_kernels.hpp"
#include "tapegrad/autograd/parallel.hpp"

namespace tapegrad {

namespace {
thread_local bool grad_enabled = true;
std::atomic<bool> anomaly_enabled{false};
std::atomic<std::uint64_t> next_sequence{0};

// The first element of values that is NaN (or, with infinities, not finite); n if none.
template <typename T>
std::size_t first_bad(const T* values, std::size_t n, bool infinities) {
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(values[i]) || (infinities && std::isinf(values[i]))) return i;
  }
  return n;
}

template <typename T>
[[noreturn]] void throw_anomaly(const char* phase, const char* op, std::uint64_t sequence, const std::string& where,
                                const T* values, std::size_t index, const Shape& shape) {
  throw AnomalyError(fmt::format(
      "detect_anomaly: the {} of '{}' (recorded at tape position {}) produced {} in {} of shape {} (first at flat "
      "index {})",
      phase, op, sequence,
      std::isnan(values[index]) ? "NaN"
      : values[index] > 0       ? "inf"
                                : "-inf",
      where, format_shape(shape), index));
}

// Elementwise passes over gradients split over the worker threads, as every elementwise kernel.
template <typename T>
void accumulate(T* dst, const T* src, std::size_t n) {
  detail::parallel_for(n, detail::kElementwiseGrain, [&](std::size_t begin, std::size_t end) {
    T* __restrict out = dst;
    const T* __restrict in = src;
    for (std::size_t i = begin; i < end; ++i) out[i] += in[i];
  });
}

template <typename T>
void add_into(xt::xarray<T>& dst, bool& has, xt::xarray<T>&& g) {
  if (!has) {
    dst = std::move(g);
    has = true;
    return;
  }
  accumulate(dst.data(), g.data(), dst.size());
}

template <typename T>
void add_into(xt::xarray<T>& dst, bool& has, const xt::xarray<T>& g) {
  if (has) {
    accumulate(dst.data(), g.data(), dst.size());
    return;
  }
  dst = xt::xarray<T>::from_shape(g.shape());
  T* d = dst.data();
  const T* s = g.data();
  detail::parallel_for(dst.size(), detail::kElementwiseGrain,
                       [&](std::size_t begin, std::size_t end) { std::copy(s + begin, s + end, d + begin); });
  has = true;
}

// Runs a leaf's post-accumulate-grad hooks; a copy, so that a hook may remove itself.
template <typename T>
void run_post_accumulate_grad_hooks(AutogradMeta<T>& leaf) {
  const auto hooks = leaf.post_accumulate_grad_hooks;
  for (const auto& hook : hooks) hook.second();
}
}  // namespace

bool is_grad_enabled() { return grad_enabled; }
void set_grad_enabled(bool enabled) { grad_enabled = enabled; }
bool is_anomaly_enabled() { return anomaly_enabled.load(std::memory_order_relaxed); }
void set_detect_anomaly(bool enabled) { anomaly_enabled.store(enabled, std::memory_order_relaxed); }

template <typename T>
template <typename G>
void GradInputs<T>::deliver(std::size_t i, G&& g) {
  if (!needs(i)) return;
  AutogradMeta<T>& meta = *inputs_[i];
  if (!std::equal(g.shape().begin(), g.shape().end(), meta.shape.begin(), meta.shape.end())) {
    Shape gs(g.shape().begin(), g.shape().end());
    throw std::logic_error(fmt::format("backward of {}: gradient for input {} has shape {}, expected {}", op_, i,
                                       format_shape(gs), format_shape(meta.shape)));
  }
  if (is_anomaly_enabled()) {
    const std::size_t bad = first_bad(g.data(), g.size(), /*infinities=*/true);
    if (bad < g.size()) {
      throw_anomaly("backward", op_, sequence_, fmt::format("the gradient for input {}", i), g.data(), bad, meta.shape);
    }
  }
  if (meta.grad_fn) {
    // A retained gradient is a copy; the pending one takes g itself when it may.
    if (meta.retains_grad) add_into(meta.grad, meta.has_grad, static_cast<const xt::xarray<T>&>(g));
    add_into(meta.grad_fn->pending_grad, meta.grad_fn->has_pending_grad, std::forward<G>(g));
  } else {
    add_into(meta.grad, meta.has_grad, std::forward<G>(g));
  }
}

template <typename T>
void GradInputs<T>::accumulate(std::size_t i, xt::xarray<T>&& g) {
  deliver(i, std::move(g));
}

template <typename T>
void GradInputs<T>::accumulate(std::size_t i, const xt::xarray<T>& g) {
  deliver(i, g);
}

template <typename T>
void attach_node(Tensor<T>& output, const char* name, const std::vector<Tensor<T>>& inputs, BackwardFn<T> backward) {
  auto node = std::make_shared<Node<T>>();
  node->name = name;
  node->sequence = next_sequence.fetch_add(1, std::memory_order_relaxed);
  node->inputs.reserve(inputs.size());
  for (const auto& input : inputs) {
    node->inputs.push_back(input.defined() && input.requires_grad() ? input.meta() : nullptr);
  }
  node->backward = std::move(backward);
  if (is_anomaly_enabled()) {
    const auto& values = output.data();
    const std::size_t bad = first_bad(values.data(), values.size(), /*infinities=*/false);
    if (bad < values.size())
      throw_anomaly("forward", name, node->sequence, "its output", values.data(), bad, output.shape());
  }
  auto& meta = *output.meta();
  meta.grad_fn = std::move(node);
  meta.requires_grad = true;
}

template <typename T>
void run_backward(const std::shared_ptr<AutogradMeta<T>>& root_meta, const xt::xarray<T>& seed, bool retain_graph) {
  if (!root_meta->requires_grad) {
    throw std::logic_error(
        "backward: the tensor does not require grad and has no grad_fn (did an input set requires_grad, "
        "and was grad mode on?)");
  }
  if (!root_meta->grad_fn) {  // a leaf: its gradient is the seed itself
    const std::vector<std::shared_ptr<AutogradMeta<T>>> self{root_meta};
    GradInputs<T>("backward", self).accumulate(0, seed);
    run_post_accumulate_grad_hooks(*root_meta);
    return;
  }

  // The part of the tape that leads to the root, replayed newest first. For every leaf with a
  // post-accumulate-grad hook, the number of its uses in that part: its gradient is complete when the
  // last of them has run.
  std::vector<Node<T>*> order;
  std::unordered_map<AutogradMeta<T>*, std::size_t> pending_uses;
  std::unordered_set<Node<T>*> seen;
  std::vector<Node<T>*> stack{root_meta->grad_fn.get()};
  while (!stack.empty()) {
    Node<T>* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) continue;
    if (node->released) {
      throw std::logic_error(
          fmt::format("backward: trying to go through the graph a second time, but the saved values of '{}' were freed "
                      "by the first backward(); pass retain_graph = true to the first call if you need a second",
                      node->name));
    }
    order.push_back(node);
    for (const auto& input : node->inputs) {
      if (!input) continue;
      if (input->grad_fn) {
        stack.push_back(input->grad_fn.get());
      } else if (!input->post_accumulate_grad_hooks.empty()) {
        ++pending_uses[input.get()];
      }
    }
  }
  std::sort(order.begin(), order.end(), [](const Node<T>* a, const Node<T>* b) { return a->sequence > b->sequence; });

  if (root_meta->retains_grad) add_into(root_meta->grad, root_meta->has_grad, seed);
  // The root is the newest node reached, so nothing else feeds it: its closure reads the seed in place.
  Node<T>* first = root_meta->grad_fn.get();
  for (Node<T>* node : order) {
    if (node == first || node->has_pending_grad) {  // else nothing flowed into it
      xt::xarray<T> grad = std::move(node->pending_grad);
      node->pending_grad = xt::xarray<T>();
      node->has_pending_grad = false;
      GradInputs<T> grad_inputs(node->name, node->inputs, node->sequence, node == first ? nullptr : &grad,
                                retain_graph);
      node->backward(node == first ? seed : grad, grad_inputs);
      if (!retain_graph) {
        node->backward = nullptr;
        node->released = true;
      }
    }
    if (pending_uses.empty()) continue;
    for (const auto& input : node->inputs) {
      if (!input || input->grad_fn) continue;
      const auto it = pending_uses.find(input.get());
      if (it != pending_uses.end() && --it->second == 0) run_post_accumulate_grad_hooks(*input);
    }
  }
}

template class GradInputs<float>;
template class GradInputs<double>;
template void attach_node<float>(Tensor<float>&, const char*, const std::vector<Tensor<float>>&, BackwardFn<float>);
template void attach_node<double>(Tensor<double>&, const char*, const std::vector<Tensor<double>>&, BackwardFn<double>);
template void run_backward<float>(const std::shared_ptr<AutogradMeta<float>>&, const xt::xarray<float>&, bool);
template void run_backward<double>(const std::shared_ptr<AutogradMeta<double>>&, const xt::xarray<double>&, bool);

}  // namespace tapegrad
