// Inverted dropout: in training each element is zeroed with probability p and the rest scaled by
// 1 / (1 - p); in eval, or with p = 0, it is the identity.
#pragma once

#include "autograd/generator.hpp"
#include "autograd/tensor.hpp"

namespace tapegrad {

// p must lie in [0, 1) (std::invalid_argument otherwise); the mask is drawn from gen.
template <typename T>
Tensor<T> dropout(const Tensor<T>& x, double p, bool training, Generator& gen);

}  // namespace tapegrad
