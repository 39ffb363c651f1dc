/// @file
/// The one matrix-product path: every product of the library (matmul, linear, attention, and their
/// backward) calls gemm here. Built with oneDNN (TAPEGRAD_ONEDNN=ON, the default), the kernel follows
/// the CPU's instruction sets at run time: oneDNN's matmul primitive for float products from AVX-512 up
/// and for every native bfloat16 product, OpenBLAS for float products below AVX-512 (faster there) and
/// for double ones; built without it, OpenBLAS for all (docs/mixed_precision.md). Only blas.cpp
/// includes OpenBLAS's <cblas.h>: xtensor-blas ships its own cblas.h, and the two cannot meet.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/bfloat16.hpp"

namespace tapegrad::blas {

/// Where a product may be cut into blocks of rows (or columns) of C: at multiples of this many. gemm's
/// own split over the threads keeps to it and follows from the product's shape only, so a product's
/// values never depend on the thread count.
constexpr std::size_t kGemmAlign = 16;

/// What a float product multiplies: its operands as they are, or rounded to bfloat16 (the products of
/// two bfloat16 values are exact in float, and the sums are float's).
enum class Precision { Float32, BFloat16 };

/// The precision of a product an op on T runs now: bfloat16 for float inside an autocast scope.
template <typename T>
Precision autocast_precision() {
  return std::is_same_v<T, float> && is_autocast_enabled() ? Precision::BFloat16 : Precision::Float32;
}

/// C = alpha * op(A) * op(B) + beta * C, all row-major; op(X) is X or its transpose; C is m x n. With
/// Precision::BFloat16 (float only), A and B are rounded to bfloat16 first.
template <typename T>
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, T alpha, const T* a, std::size_t lda,
          const T* b, std::size_t ldb, T beta, T* c, std::size_t ldc, Precision precision = Precision::Float32);

/// An operand of gemm: its values, or a bfloat16 copy of them that an op made under autocast (and may
/// keep for its backward instead of the float values, half the memory).
template <typename T>
struct Operand {
  Operand(const T* values) : values(values) {}   // NOLINT: a plain pointer is the common case
  Operand(const bfloat16* bf16) : bf16(bf16) {}  // NOLINT
  /// The operand `offset` elements further on, whichever kind it is.
  Operand operator+(std::size_t offset) const { return bf16 ? Operand(bf16 + offset) : Operand(values + offset); }
  const T* values = nullptr;
  const bfloat16* bf16 = nullptr;
};

/// gemm on operands of either kind. A bfloat16 operand needs Precision::BFloat16 (float only), under
/// which a float operand is rounded.
template <typename T>
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, T alpha, Operand<T> a,
          std::size_t lda, Operand<T> b, std::size_t ldb, T beta, T* c, std::size_t ldc, Precision precision);

/// A rows x cols matrix (row stride ld) as a dense bfloat16 copy, for an op to hand to gemm and keep.
std::vector<bfloat16> to_bfloat16_matrix(const float* x, std::size_t rows, std::size_t cols, std::size_t ld);

/// Under Precision::BFloat16 (float only), the dense rows x cols matrix x as a bfloat16 copy, converted
/// once for the products that share it or for an op to keep; else empty, and the products read x.
template <typename T>
std::vector<bfloat16> bfloat16_copy(Precision precision, const T* x, std::size_t rows, std::size_t cols);

/// What a product reads of x: its bfloat16 copy where bfloat16_copy made one, else x itself.
template <typename T>
Operand<T> operand(const T* x, const std::vector<bfloat16>& copy) {
  return copy.empty() ? Operand<T>(x) : Operand<T>(copy.data());
}

/// Threads a product may use: tapegrad's workers (autograd/parallel.hpp), each running the backend
/// single-threaded on a block of C. set_num_threads returns the previous value.
///@{
int set_num_threads(int threads);
int get_num_threads();
///@}

/// What runs the products on this machine, for the machine line programs and benchmarks print.
struct BackendInfo {
  std::string float_kernel;      ///< e.g. "oneDNN 2.6.3 brg:avx512_core" or "OpenBLAS 0.3.21 SkylakeX"
  std::string bfloat16_kernel;   ///< e.g. "oneDNN 2.6.3 brg:avx512_core_amx_bf16", or how it falls back
  std::string double_kernel;     ///< e.g. "OpenBLAS 0.3.21 Zen"
  bool native_bfloat16 = false;  ///< bfloat16 products run on bfloat16 instructions (AMX, AVX512-BF16)
  /// Empty, or what is wrong and how to fix it, e.g. OpenBLAS's choice of a core weaker than the
  /// CPU's instruction sets ("set OPENBLAS_CORETYPE=SkylakeX").
  std::string warning;
};
/// The kernels of this process, found once on first use.
const BackendInfo& backend_info();

}  // namespace tapegrad::blas
