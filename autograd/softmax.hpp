/// @file
/// softmax and log_softmax over any dim, max-subtracted so large logits do not overflow.
///
/// dim may be negative; a 0-d tensor is one slice of one element (dim 0 or -1), as in torch.
///
/// A slice that is entirely -inf (a fully masked attention row) has no defined softmax. Like torch
/// (checked against 1.13), softmax and log_softmax return NaN for every element of such a slice, and
/// its gradient is NaN too; other slices are unaffected. MultiHeadAttention avoids such rows by
/// construction (see nn/attention.hpp).
#pragma once

#include <cstdint>

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// Backward is the Jacobian-vector product y * (g - sum(g * y)), never a materialized Jacobian.
template <typename T>
Tensor<T> softmax(const Tensor<T>& x, std::int64_t dim);
/// Backward: g - exp(y) * sum(g), with y the saved output.
template <typename T>
Tensor<T> log_softmax(const Tensor<T>& x, std::int64_t dim);

}  // namespace tapegrad
