/// @file
/// Dropout (torch.nn.Dropout): zeroes elements with probability p in training, identity in eval.
///
/// The mask comes from a Generator held by shared pointer: one per module, or one shared by every
/// dropout of a model. A training checkpoint saves generator()->state() and restores it with
/// set_state(), so a resumed run draws the same masks as an uninterrupted one; the generator is also
/// listed by named_generators() as "generator".
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

/// torch.nn.Dropout, drawing its masks from a shared Generator.
template <typename T>
class Dropout : public Module<T, Dropout<T>> {
 public:
  /// Its own generator, seeded with `seed`.
  explicit Dropout(double p = 0.5, std::uint64_t seed = 0);
  /// A generator shared with other modules (must not be null).
  Dropout(double p, std::shared_ptr<Generator> gen);

  Tensor<T> forward(const Tensor<T>& x) const;

  const std::shared_ptr<Generator>& generator() const { return gen_; }
  std::string name() const override { return "Dropout"; }
  std::string extra_repr() const override;

  double p;

 private:
  std::shared_ptr<Generator> gen_;
};

extern template class Dropout<float>;
extern template class Dropout<double>;

}  // namespace tapegrad::nn
