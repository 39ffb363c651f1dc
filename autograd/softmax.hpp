// softmax and log_softmax over any dim, max-subtracted so large logits do not overflow.
//
// A slice that is entirely -inf (a fully masked attention row) has no defined softmax. Like torch,
// softmax returns NaN for every element of such a row and log_softmax returns NaN; the gradient of
// that row is NaN too. MultiHeadAttention avoids such rows by construction (see nn/attention.hpp).
#pragma once

#include <cstdint>

#include "autograd/tensor.hpp"

namespace tapegrad {

// Backward is the Jacobian-vector product y * (g - sum(g * y)), never a materialized Jacobian.
template <typename T>
Tensor<T> softmax(const Tensor<T>& x, std::int64_t dim);
// Backward: g - softmax(x) * sum(g).
template <typename T>
Tensor<T> log_softmax(const Tensor<T>& x, std::int64_t dim);

}  // namespace tapegrad
