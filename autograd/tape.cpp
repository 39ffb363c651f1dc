#include "tapegrad/autograd/tape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <unordered_set>

namespace tapegrad {

namespace {
thread_local bool grad_enabled = true;
std::atomic<std::uint64_t> next_sequence{0};

template <typename T>
void add_into(xt::xarray<T>& dst, bool& has, xt::xarray<T>&& g) {
  if (!has) {
    dst = std::move(g);
    has = true;
    return;
  }
  T* d = dst.data();
  const T* s = g.data();
  const std::size_t n = dst.size();
  for (std::size_t i = 0; i < n; ++i) d[i] += s[i];
}
}  // namespace

bool is_grad_enabled() { return grad_enabled; }
void set_grad_enabled(bool enabled) { grad_enabled = enabled; }

template <typename T>
void GradInputs<T>::accumulate(std::size_t i, xt::xarray<T>&& g) {
  if (!needs(i)) return;
  AutogradMeta<T>& meta = *inputs_[i];
  if (!std::equal(g.shape().begin(), g.shape().end(), meta.shape.begin(), meta.shape.end())) {
    Shape gs(g.shape().begin(), g.shape().end());
    throw std::logic_error(fmt::format("backward of {}: gradient for input {} has shape {}, expected {}", op_, i,
                                       format_shape(gs), format_shape(meta.shape)));
  }
  if (meta.grad_fn) {
    if (meta.retains_grad) add_into(meta.grad, meta.has_grad, xt::xarray<T>(g));
    add_into(meta.grad_fn->pending_grad, meta.grad_fn->has_pending_grad, std::move(g));
  } else {
    add_into(meta.grad, meta.has_grad, std::move(g));
  }
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
  auto& meta = *output.meta();
  meta.grad_fn = std::move(node);
  meta.requires_grad = true;
}

template <typename T>
void run_backward(const Tensor<T>& root, xt::xarray<T> seed, bool retain_graph) {
  const auto& root_meta = root.meta();
  if (!root_meta->requires_grad) {
    throw std::logic_error(
        "backward: the tensor does not require grad and has no grad_fn (did an input set requires_grad, "
        "and was grad mode on?)");
  }
  if (!root_meta->grad_fn) {  // a leaf: its gradient is the seed itself
    const std::vector<std::shared_ptr<AutogradMeta<T>>> self{root_meta};
    GradInputs<T>("backward", self).accumulate(0, std::move(seed));
    return;
  }

  // The part of the tape that leads to the root, replayed newest first.
  std::vector<Node<T>*> order;
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
    for (const auto& input : node->inputs)
      if (input && input->grad_fn) stack.push_back(input->grad_fn.get());
  }
  std::sort(order.begin(), order.end(), [](const Node<T>* a, const Node<T>* b) { return a->sequence > b->sequence; });

  if (root_meta->retains_grad) {
    bool& has = root_meta->has_grad;
    add_into(root_meta->grad, has, xt::xarray<T>(seed));
  }
  Node<T>* first = root_meta->grad_fn.get();
  first->pending_grad = std::move(seed);
  first->has_pending_grad = true;

  for (Node<T>* node : order) {
    if (!node->has_pending_grad) continue;  // nothing flowed into it
    xt::xarray<T> grad = std::move(node->pending_grad);
    node->pending_grad = xt::xarray<T>();
    node->has_pending_grad = false;
    GradInputs<T> grad_inputs(node->name, node->inputs);
    node->backward(grad, grad_inputs);
    if (!retain_graph) {
      node->backward = nullptr;
      node->released = true;
    }
  }
}

template class GradInputs<float>;
template class GradInputs<double>;
template void attach_node<float>(Tensor<float>&, const char*, const std::vector<Tensor<float>>&, BackwardFn<float>);
template void attach_node<double>(Tensor<double>&, const char*, const std::vector<Tensor<double>>&, BackwardFn<double>);
template void run_backward<float>(const Tensor<float>&, xt::xarray<float>, bool);
template void run_backward<double>(const Tensor<double>&, xt::xarray<double>, bool);

}  // namespace tapegrad
