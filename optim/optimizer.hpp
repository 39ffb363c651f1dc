/// @file
/// Optimizer: the base of SGD, Adam, AdamW, RMSprop and Adagrad, holding the parameters it updates in
/// place and their per-parameter state, with torch.optim's zero_grad / step / state_dict /
/// load_state_dict.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/autograd/tensor.hpp"
#include "tapegrad/io/state_dict.hpp"

namespace tapegrad::optim {

/// The base of every optimizer (torch.optim.Optimizer).
template <typename T>
class Optimizer {
 public:
  /// params alias the module's parameters (Tensor handles share their values), so step() updates the
  /// module. Throws std::invalid_argument for an empty list, an undefined or non-leaf tensor, or a
  /// tensor listed twice.
  Optimizer(std::vector<Tensor<T>> params, double lr);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// One update of every parameter that has a gradient; parameters without one are skipped and keep
  /// their state untouched, as in torch.
  virtual void step() = 0;
  /// Drops every parameter's gradient (torch's zero_grad(set_to_none=True)).
  void zero_grad();

  double lr() const { return lr_; }
  /// Learning-rate schedules call this before each step. Throws std::invalid_argument if lr < 0.
  void set_lr(double lr);

  const std::vector<Tensor<T>>& params() const { return params_; }
  /// An optimizer that updates through another (distributed::ZeroRedundancyOptimizer) returns that one,
  /// whose options are the update's; nullptr for an optimizer that updates itself.
  virtual const Optimizer* wrapped() const { return nullptr; }

  /// A snapshot (copies) of the state, flattened like torch's optimizer.state_dict():
  ///   "state.<i>.<buffer>"  a buffer of parameter i, with the parameter's shape
  ///   "state.<i>.step"      its step count, a 0-d tensor (float32 counts are exact up to 2^24, as in torch)
  ///   "param_groups.0.lr"   the current learning rate, a 0-d tensor
  /// Parameters that have never been stepped have no "state.<i>" entries, except in an optimizer
  /// that creates every parameter's state in its constructor (Adagrad, as torch's does).
  /// Virtual so that a wrapper keeping the state elsewhere (distributed::ZeroRedundancyOptimizer) gives
  /// the same layout.
  virtual StateDict<T> state_dict() const;
  /// Replaces the whole state. Every name and shape is checked first; all problems (unexpected or
  /// missing names, wrong shapes, non-integer step counts) are reported together in one
  /// std::invalid_argument and nothing is changed. An optimizer that creates every parameter's
  /// state in its constructor requires the state of every parameter that requires grad.
  virtual void load_state_dict(const StateDict<T>& state);

 protected:
  /// One parameter's optimizer state: its named buffers and step count.
  struct ParamState {
    bool initialized = false;
    std::int64_t step = 0;
    std::vector<xt::xarray<T>> buffers;  ///< in the order of buffer_names()
  };

  /// The names of the per-parameter buffers this optimizer keeps ("exp_avg", ...), and whether it
  /// counts steps; state_dict() and load_state_dict() are built on them.
  virtual std::vector<std::string> buffer_names() const = 0;
  virtual bool counts_steps() const = 0;
  virtual const char* name() const = 0;
  /// True when the constructor creates every parameter's state (torch's Adagrad), so that a state
  /// always has the entries of every parameter that requires grad; false for torch's lazy init at a
  /// parameter's first step.
  virtual bool eager_state() const { return false; }

  /// Parameter i's state, with zero-filled buffers the first time (torch's lazy state init).
  ParamState& state_for(std::size_t i);

  std::vector<Tensor<T>> params_;
  std::vector<ParamState> state_;
  double lr_;
};

extern template class Optimizer<float>;
extern template class Optimizer<double>;

/// Splits a state_dict key "state.<i>.<field>" into i and field; false for any other key (the lr, a
/// malformed index). For wrappers that move the state between parameter lists.
bool parse_state_key(const std::string& key, std::size_t& index, std::string& field);

namespace detail {

/// The optimizers' argument check, in torch's words: throws std::invalid_argument
/// "<optimizer>: invalid <what>: <value>" for the first (what, value) in order whose value is not >= 0
/// (NaN fails). `what` is torch's name for it ("learning rate", "epsilon value", "momentum value", ...).
void check_nonnegative(const char* optimizer, std::initializer_list<std::pair<const char*, double>> values);

}  // namespace detail

}  // namespace tapegrad::optim
