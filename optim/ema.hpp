/// @file
/// Exponential moving average of parameters (Polyak averaging), with the API of the torch_ema package:
/// update() after each optimizer step, then evaluate or save with the averaged values swapped in.
#pragma once

#include <cstdint>
#include <vector>

#include "tapegrad/autograd/tensor.hpp"
#include "tapegrad/io/state_dict.hpp"

namespace tapegrad::optim {

/// After each update, average = decay_n * average + (1 - decay_n) * parameter, where decay_n =
/// min(decay, (1 + n) / (10 + n)) for the n-th update (torch_ema's use_num_updates): early averages
/// follow the fast-moving parameters instead of staying near the initialization. The averages start as
/// copies of the parameters. A model evaluated with the averages usually generalizes better than the
/// last iterate while the learning rate is still high (Polyak & Juditsky 1992).
template <typename T>
class ExponentialMovingAverage {
 public:
  /// params alias the module's parameters (as an optimizer's do). Throws std::invalid_argument for an
  /// empty list, an undefined tensor or a decay outside [0, 1].
  ExponentialMovingAverage(std::vector<Tensor<T>> params, double decay);

  void update();
  std::int64_t num_updates() const { return num_updates_; }
  double decay() const { return decay_; }

  /// Copies the averages into the parameters; store() first keeps the trained values for restore().
  void copy_to();
  void store();
  /// Puts back what store() kept. Throws std::logic_error if nothing is stored.
  void restore();

  /// While alive, the parameters hold the averages; the trained values come back on destruction
  /// (torch_ema's `with ema.average_parameters():`).
  class AveragedParameters {
   public:
    explicit AveragedParameters(ExponentialMovingAverage& ema) : ema_(ema) {
      ema_.store();
      ema_.copy_to();
    }
    ~AveragedParameters() { ema_.restore(); }
    AveragedParameters(const AveragedParameters&) = delete;
    AveragedParameters& operator=(const AveragedParameters&) = delete;

   private:
    ExponentialMovingAverage& ema_;
  };
  AveragedParameters average_parameters() { return AveragedParameters(*this); }

  /// "shadow.<i>" for parameter i's average and "num_updates" (a 0-d tensor): copies, for checkpoints.
  StateDict<T> state_dict() const;
  /// Checks every name and shape first; all problems go into one std::invalid_argument and nothing
  /// changes.
  void load_state_dict(const StateDict<T>& state);

 private:
  std::vector<Tensor<T>> params_;
  std::vector<xt::xarray<T>> shadow_, stored_;
  double decay_;
  std::int64_t num_updates_ = 0;
};

extern template class ExponentialMovingAverage<float>;
extern template class ExponentialMovingAverage<double>;

}  // namespace tapegrad::optim
