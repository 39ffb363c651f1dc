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
// (autograd/parallel.hpp) by blocks of C's rows or columns, never along k, so each element comes
// from one call in one order (deterministic), and OpenBLAS's pool, which spins on sched_yield while
// it waits for work, never competes with tapegrad's threads for the cores. Setting one thread does not
// stop the workers OpenBLAS started when it was loaded (OPENBLAS_NUM_THREADS of them): they spin on
// sched_yield for their first ~0.1 s, which cost a quarter of the cores in short programs and
// benchmarks (system time), so they are shut down; OpenBLAS would start them again if it ever needed
// them. blas_thread_shutdown_ is OpenBLAS's own (its fork handler calls it), weak so that a BLAS
// without it links too.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

void openblas_single_threaded() {
  static const bool done = [] {
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_) blas_thread_shutdown_();
    return true;
  }();
  (void)done;
}
// At load time, before the first product.
const bool openblas_quiet = (openblas_single_threaded(), true);

// call(rows, cols, a, b, c) on blocks of C: its rows (op(A)'s rows) or columns (op(B)'s columns),
// whichever are more. The blocks follow from the product's shape only, never from the thread count
// (the threads share them out), and start at multiples of kGemmAlign rows or columns: OpenBLAS's value
// for an element depends on the kind of tile that computes it (its kernels take C in tiles of up to 16
// along either dim and compute the leftover edge with others, whose sums may round differently), so
// with both rules every element comes out the same for any thread count and the same as one call over
// all of C (a [1200, 2000] product cut in two halves of 1000 columns differed in 3.5% of its elements).
template <typename T, typename Call>
void split_gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, const T* a, std::size_t lda,
                const T* b, std::size_t ldb, T* c, std::size_t ldc, Call&& call) {
  openblas_single_threaded();
  constexpr std::size_t kMinWork = std::size_t{1} << 20;  // multiply-adds worth a block
  constexpr std::size_t kMaxBlocks = 8;                   // blocks of one product, at most
  const bool by_rows = m >= n;
  const std::size_t extent = by_rows ? m : n;
  const std::size_t units = (extent + kGemmAlign - 1) / kGemmAlign;
  const std::size_t blocks = std::max<std::size_t>(1, std::min({kMaxBlocks, m * n * k / kMinWork, units}));
  detail::parallel_for(blocks, 1, [&](std::size_t first, std::size_t last) {
    for (std::size_t block = first; block < last; ++block) {
      const std::size_t lo = units * block / blocks * kGemmAlign;
      const std::size_t hi = std::min(extent, units * (block + 1) / blocks * kGemmAlign);
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
