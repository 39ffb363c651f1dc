/// @file
/// Thin wrappers over OpenBLAS's GEMM. Only blas.cpp includes OpenBLAS's <cblas.h>: xtensor-blas ships
/// its own cblas.h, and the two cannot meet in one translation unit.
#pragma once

#include <cstddef>

namespace tapegrad::blas {

/// Where a product may be cut into blocks of rows (or columns) of C without changing any element: at
/// multiples of this many (see blas.cpp). gemm's own split over the threads keeps to it, and so must
/// a caller that runs gemm on blocks of rows and wants the result of one call.
constexpr std::size_t kGemmAlign = 16;

/// C = alpha * op(A) * op(B) + beta * C, all row-major; op(X) is X or its transpose; C is m x n.
template <typename T>
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a, std::size_t lda,
          const T* b, std::size_t ldb, T beta, T* c, std::size_t ldc);

/// Threads a product may use: tapegrad's workers (autograd/parallel.hpp), each running OpenBLAS on a
/// block of C; OpenBLAS's own threading stays off. set_num_threads returns the previous value.
///@{
int set_num_threads(int threads);
int get_num_threads();
///@}

}  // namespace tapegrad::blas
