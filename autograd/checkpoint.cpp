#include "tapegrad/autograd/checkpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad {

namespace {

// Sets grad mode, the autocast state and the generators for the second run of a checkpointed function,
// and puts back what the backward pass had when it ends, also when the function throws.
class RecomputeScope {
 public:
  RecomputeScope(bool autocast, const std::vector<std::shared_ptr<Generator>>& generators,
                 const std::vector<Generator::State>& states)
      : grad_(is_grad_enabled()), autocast_(is_autocast_enabled()), generators_(generators) {
    previous_.reserve(generators.size());
    for (const auto& g : generators) previous_.push_back(g->state());
    for (std::size_t i = 0; i < generators.size(); ++i) generators[i]->set_state(states[i]);
    set_grad_enabled(true);
    set_autocast_enabled(autocast);
  }
  ~RecomputeScope() {
    set_grad_enabled(grad_);
    set_autocast_enabled(autocast_);
    for (std::size_t i = 0; i < generators_.size(); ++i) generators_[i]->set_state(previous_[i]);
  }
  RecomputeScope(const RecomputeScope&) = delete;
  RecomputeScope& operator=(const RecomputeScope&) = delete;

 private:
  bool grad_, autocast_;
  const std::vector<std::shared_ptr<Generator>>& generators_;
  std::vector<Generator::State> previous_;
};

}  // namespace

template <typename T>
Tensor<T> checkpoint(const CheckpointFunction<T>& fn, const std::vector<Tensor<T>>& inputs,
                     const std::vector<std::shared_ptr<Generator>>& generators) {
  if (!fn) throw std::invalid_argument("checkpoint: the function is empty");
  for (std::size_t i = 0; i < generators.size(); ++i) {
    if (!generators[i]) throw std::invalid_argument(fmt::format("checkpoint: generator {} is null", i));
  }
  if (!is_grad_enabled()) return fn(inputs);

  std::vector<Generator::State> states;
  states.reserve(generators.size());
  for (const auto& g : generators) states.push_back(g->state());
  const bool autocast = is_autocast_enabled();
  Tensor<T> result;
  {
    NoGradGuard no_grad;
    result = fn(inputs);
  }
  if (!result.defined()) throw std::invalid_argument("checkpoint: the function returned an undefined tensor");
  // A handle of its own: fn may return one of its inputs, whose history must stay as it is.
  Tensor<T> out = result.detach();

  // What the second run reads: the inputs' values, shared rather than copied (detach(), as
  // torch.utils.checkpoint does), and saved, so that a later in-place write to an input copies first
  // instead of changing them; and whether each wants a gradient. The handles have no history of their
  // own, so holding them makes no reference cycle.
  std::vector<Tensor<T>> values;
  std::vector<std::shared_ptr<const xt::xarray<T>>> saved;
  std::vector<bool> wants;
  for (const auto& x : inputs) {
    values.push_back(x.defined() ? x.detach() : Tensor<T>());
    saved.push_back(x.defined() ? x.saved() : nullptr);
    wants.push_back(x.defined() && x.requires_grad());
  }
  record(out, "checkpoint", inputs,
         [fn, generators, states, autocast, values = std::move(values), saved = std::move(saved),
          wants = std::move(wants)](const xt::xarray<T>& g, GradInputs<T>& in) {
           std::vector<Tensor<T>> leaves(values.size());
           for (std::size_t i = 0; i < values.size(); ++i) {
             if (values[i].defined()) leaves[i] = values[i].detach().requires_grad_(wants[i]);
           }
           RecomputeScope scope(autocast, generators, states);
           Tensor<T> y = fn(leaves);
           if (!y.defined() || !std::equal(y.shape().begin(), y.shape().end(), g.shape().begin(), g.shape().end())) {
             throw std::logic_error(
                 fmt::format("checkpoint: the second run of the function returned shape {} where the first returned "
                             "{} (the function must be deterministic)",
                             y.defined() ? format_shape(y.shape()) : std::string("undefined"),
                             format_shape(Shape(g.shape().begin(), g.shape().end()))));
           }
           if (!y.requires_grad()) return;  // nothing in fn wants a gradient
           // The output's values are not read by its backward (an op that needs them saved them): dropped
           // here, so that a block's [tokens, d] output is not held while its backward runs.
           const std::shared_ptr<AutogradMeta<T>> history = y.meta();
           y = Tensor<T>();
           run_backward(history, g, /*retain_graph=*/false);
           for (std::size_t i = 0; i < leaves.size(); ++i) {
             if (in.needs(i) && leaves[i].has_grad()) in.accumulate(i, std::move(leaves[i].mutable_grad()));
           }
         });
  return out;
}

template Tensor<float> checkpoint<float>(const CheckpointFunction<float>&, const std::vector<Tensor<float>>&,
                                         const std::vector<std::shared_ptr<Generator>>&);
template Tensor<double> checkpoint<double>(const CheckpointFunction<double>&, const std::vector<Tensor<double>>&,
                                           const std::vector<std::shared_ptr<Generator>>&);

}  // namespace tapegrad
