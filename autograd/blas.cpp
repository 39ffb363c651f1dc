#include "tapegrad/autograd/blas.hpp"

#include <cblas.h>

#include <algorithm>

#include "tapegrad/autograd/parallel.hpp"

namespace tapegrad::blas {

namespace {
CBLAS_TRANSPOSE op(bool trans) { return trans ? CblasTrans : CblasNoTrans; }

// BLAS rejects k = 0 (leading dimensions of 0); the product is then empty and C = beta * C.
template <typename T>
bool empty_product(std::size_t m, std::size_t n, std::size_t k, T beta, T* c, std::size_t ldc) {
  if (m != 0 && n != 0 && k != 0) return false;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
  return true;
}

// OpenBLAS itself runs single-threaded: tapegrad splits a large product over its own worker threads
// (autograd/parallel.hpp) by blocks of C's rows or columns, never along k, and OpenBLAS's pool, which
// spins on sched_yield while it waits for work, never competes with tapegrad's threads for the cores.
void openblas_single_threaded() {
  static const bool done = (openblas_set_num_threads(1), true);
  (void)done;
}

// call(rows, cols, a, b, c) on blocks of C: its rows (op(A)'s rows) or columns (op(B)'s columns),
// whichever are more. The blocks depend on the product's shape only, never on the thread count, and the
// threads share them out: OpenBLAS's value for an element depends on the shape of the call that
// computes it (a [1200, 2000] product cut in two halves of columns differs from the whole in 3.5% of its
// elements), so cutting by the thread count would make results depend on it.
template <typename T, typename Call>
void split_gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, const T* a, std::size_t lda,
                const T* b, std::size_t ldb, T* c, std::size_t ldc, Call&& call) {
  openblas_single_threaded();
  constexpr std::size_t kMinWork = std::size_t{4} << 20;  // multiply-adds worth a block
  constexpr std::size_t kMinExtent = 32;                  // rows or columns of a block, at least
  constexpr std::size_t kMaxBlocks = 8;                   // threads that can share one product
  const bool by_rows = m >= n;
  const std::size_t extent = by_rows ? m : n;
  const std::size_t blocks =
      std::max<std::size_t>(1, std::min({kMaxBlocks, m * n * k / kMinWork, extent / kMinExtent}));
  detail::parallel_for(blocks, 1, [&](std::size_t first, std::size_t last) {
    for (std::size_t block = first; block < last; ++block) {
      const std::size_t lo = extent * block / blocks, hi = extent * (block + 1) / blocks;
      if (by_rows) {
        call(hi - lo, n, trans_a ? a + lo : a + lo * lda, b, c + lo * ldc);
      } else {
        call(m, hi - lo, a, trans_b ? b + lo * ldb : b + lo, c + lo);
      }
    }
  });
}

blasint bi(std::size_t v) { return static_cast<blasint>(v); }
}  // namespace

template <>
void gemm<float>(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
                 std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
  if (empty_product(m, n, k, beta, c, ldc)) return;
  split_gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc,
             [&](std::size_t rows, std::size_t cols, const float* pa, const float* pb, float* pc) {
               cblas_sgemm(CblasRowMajor, op(trans_a), op(trans_b), bi(rows), bi(cols), bi(k), alpha, pa, bi(lda), pb,
                           bi(ldb), beta, pc, bi(ldc));
             });
}

template <>
void gemm<double>(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, double alpha,
                  const double* a, std::size_t lda, const double* b, std::size_t ldb, double beta, double* c,
                  std::size_t ldc) {
  if (empty_product(m, n, k, beta, c, ldc)) return;
  split_gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc,
             [&](std::size_t rows, std::size_t cols, const double* pa, const double* pb, double* pc) {
               cblas_dgemm(CblasRowMajor, op(trans_a), op(trans_b), bi(rows), bi(cols), bi(k), alpha, pa, bi(lda), pb,
                           bi(ldb), beta, pc, bi(ldc));
             });
}

int set_num_threads(int threads) {
  openblas_single_threaded();
  const int previous = detail::parallel_threads();
  detail::set_parallel_threads(threads);
  return previous;
}

int get_num_threads() { return detail::parallel_threads(); }

}  // namespace tapegrad::blas
