/// @file
/// Matrix products through BLAS (cblas_sgemm / cblas_dgemm) on contiguous buffers: matmul, linear, and
/// linear fused with its activation.
#pragma once

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// torch.matmul: 1-D x 1-D is a dot product, 1-D operands are promoted (and the added dim removed),
/// N-D operands are batches of matrices whose batch dims broadcast.
template <typename T>
Tensor<T> matmul(const Tensor<T>& a, const Tensor<T>& b);

/// torch.nn.functional.linear: x [..., in] times weight [out, in] transposed, plus bias [out] (which
/// may be undefined), in one GEMM over all leading dims.
template <typename T>
Tensor<T> linear(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias = {});

/// The activations of a Transformer's feed-forward block (torch's activation="relu" | "gelu"; GELU is
/// the exact, erf form; GELUTanh is gelu(x, approximate="tanh"), GPT-2's "gelu_new").
enum class Activation { ReLU, GELU, GELUTanh };

/// activation(linear(x, weight, bias)) in one op, the feed-forward block's first half, with the same
/// values as the composed ops, forward and backward. The product runs on fixed blocks of rows, each
/// followed at once by the bias and the activation while it is in cache (no second pass over the
/// output); the backward forms the pre-activation gradient and the bias gradient in one pass, then
/// the two products. ReLU keeps only its output for the backward, GELU and GELUTanh their input. bias may be
/// undefined. Throws ShapeError as linear does.
template <typename T>
Tensor<T> linear_activation(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias, Activation activation);

/// Number of threads matrix products (OpenBLAS on blocks, see autograd/blas.hpp) and tapegrad's own
/// parallel kernels (autograd/parallel.hpp) may use; returns the previous value.
///@{
int set_num_threads(int threads);
int get_num_threads();
///@}

}  // namespace tapegrad
