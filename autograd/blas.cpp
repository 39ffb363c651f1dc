#include "autograd/blas.hpp"

#include <cblas.h>

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
}  // namespace

template <>
void gemm<float>(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
                 std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
  if (empty_product(m, n, k, beta, c, ldc)) return;
  cblas_sgemm(CblasRowMajor, op(trans_a), op(trans_b), static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
              static_cast<blasint>(ldc));
}

template <>
void gemm<double>(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, double alpha,
                  const double* a, std::size_t lda, const double* b, std::size_t ldb, double beta, double* c,
                  std::size_t ldc) {
  if (empty_product(m, n, k, beta, c, ldc)) return;
  cblas_dgemm(CblasRowMajor, op(trans_a), op(trans_b), static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
              static_cast<blasint>(ldc));
}

int set_num_threads(int threads) {
  const int previous = openblas_get_num_threads();
  openblas_set_num_threads(threads);
  return previous;
}

int get_num_threads() { return openblas_get_num_threads(); }

}  // namespace tapegrad::blas
