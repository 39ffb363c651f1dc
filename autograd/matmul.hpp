/// @file
/// Matrix products through BLAS (cblas_sgemm / cblas_dgemm) on contiguous buffers.
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

/// Number of threads matrix products (OpenBLAS on blocks, see autograd/blas.hpp) and tapegrad's own
/// parallel kernels (autograd/parallel.hpp) may use; returns the previous value.
///@{
int set_num_threads(int threads);
int get_num_threads();
///@}

}  // namespace tapegrad
