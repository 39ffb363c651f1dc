// Inverted dropout: in training each element is zeroed with probability p and the rest scaled by
// 1 / (1 - p); in eval, or with p = 0, it is the identity.
#pragma once

#include "autograd/generator.hpp"
#include "autograd/tensor.hpp"

namespace tapegrad {

// p must lie in [0, 1) (ShapeError, a std::invalid_argument, naming p otherwise). In eval or with
// p = 0 the result is x itself (as torch returns its input) and gen is not touched. Otherwise one
// gen.uniform() is drawn per element in row-major order and the element is kept when it is >= p, so
// a seeded generator reproduces the mask; the backward multiplies by the same scaled mask.
template <typename T>
Tensor<T> dropout(const Tensor<T>& x, double p, bool training, Generator& gen);

}  // namespace tapegrad
