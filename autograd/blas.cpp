#include "tapegrad/autograd/blas.hpp"

#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "tapegrad/autograd/machine.hpp"
#include "tapegrad/autograd/parallel.hpp"

#ifdef TAPEGRAD_WITH_ONEDNN
#include <dlfcn.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#endif

namespace tapegrad {

namespace {

// The conversions as plain loops over unaliased rows, which the compiler vectorizes (written inline in
// a row loop with the element type chosen per call, they stayed scalar and cost 5x more).
void convert(const float* __restrict in, bfloat16* __restrict out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = to_bfloat16(in[i]);
}
void convert(const bfloat16* __restrict in, float* __restrict out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = to_float(in[i]);
}
void convert(const float* __restrict in, float* __restrict out, std::size_t n) {  // rounded to bfloat16
  for (std::size_t i = 0; i < n; ++i) out[i] = round_to_bfloat16(in[i]);
}

}  // namespace

void to_bfloat16(const float* in, bfloat16* out, std::size_t n) { convert(in, out, n); }

void to_float(const bfloat16* in, float* out, std::size_t n) { convert(in, out, n); }

}  // namespace tapegrad

namespace tapegrad::blas {

namespace {

// BLAS rejects k = 0 (leading dimensions of 0); the product is then empty and C = beta * C.
template <typename T>
bool empty_product(std::size_t m, std::size_t n, std::size_t k, T beta, T* c, std::size_t ldc) {
  if (m != 0 && n != 0 && k != 0) return false;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
  return true;
}

// ---------------------------------------------------------------------------------------------------
// OpenBLAS runs single-threaded: tapegrad splits a large product over its own worker threads by
// blocks of C, so OpenBLAS's pool, which spins on sched_yield while it waits for work, never competes
// with them for the cores. Setting one thread does not stop the workers OpenBLAS started when it was
// loaded: they spin for their first ~0.1 s (a quarter of the cores in short programs), so they are
// shut down; blas_thread_shutdown_ is OpenBLAS's own (its fork handler calls it), weak so that a BLAS
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
const bool openblas_quiet = (openblas_single_threaded(), true);  // at load time, before any product

CBLAS_TRANSPOSE op(bool trans) { return trans ? CblasTrans : CblasNoTrans; }
blasint bi(std::size_t v) { return static_cast<blasint>(v); }

// call(rows, cols, a, b, c) on blocks of C: its rows (op(A)'s rows) or columns (op(B)'s columns),
// whichever are more. The blocks follow from the product's shape only, never from the thread count
// (the threads share them out), and start at multiples of kGemmAlign: every element is computed by
// the same kernel call whatever the thread count, so results do not depend on it.
template <typename A, typename B, typename C, typename Call>
void split_gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, const A* a, std::size_t lda,
                const B* b, std::size_t ldb, C* c, std::size_t ldc, Call&& call) {
  constexpr std::size_t kMinWork = std::size_t{1} << 20;  // multiply-adds worth a block
  constexpr std::size_t kMaxBlocks = 8;                   // blocks of one product, at most
  const bool by_rows = m >= n;
  const std::size_t extent = by_rows ? m : n;
  const std::size_t units = (extent + kGemmAlign - 1) / kGemmAlign;
  const std::size_t blocks = std::max<std::size_t>(1, std::min({kMaxBlocks, m * n * k / kMinWork, units}));
  if (blocks == 1) return call(m, n, a, b, c);
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

// ---------------------------------------------------------------------------------------------------
#ifdef TAPEGRAD_WITH_ONEDNN
// oneDNN's matmul primitive, one per product shape, cached per thread with its memory objects (so a
// call only points them at the operands), each run single-threaded on its block of C.

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// Debian's oneDNN threads with OpenMP: without this, every call from any of tapegrad's threads would
// start an OpenMP team of all cores on top of tapegrad's own split. The number of OpenMP threads is
// per calling thread, so each thread sets it once; dlsym finds libgomp, which oneDNN loaded.
void one_openmp_thread_here() {
  thread_local const bool done = [] {
    using SetThreads = void (*)(int);
    if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"))) set(1);
    return true;
  }();
  (void)done;
}

struct PrimitiveKey {
  dnnl::memory::data_type type_a, type_b;
  bool trans_a, trans_b;
  std::size_t m, n, k, lda, ldb, ldc;
  std::uint32_t alpha_bits, beta_bits;
  bool operator==(const PrimitiveKey& o) const { return std::memcmp(this, &o, sizeof *this) == 0; }
};
struct PrimitiveKeyHash {
  std::size_t operator()(const PrimitiveKey& key) const {
    std::size_t h = 1469598103934665603ull;
    const auto* p = reinterpret_cast<const unsigned char*>(&key);
    for (std::size_t i = 0; i < sizeof key; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
  }
};

struct Primitive {
  bool supported = false;
  dnnl::matmul matmul;
  dnnl::memory a, b, c, scratchpad;
  std::vector<char> scratch;
  std::unordered_map<int, dnnl::memory> args;
  std::string impl;
};

dnnl::memory::desc matrix_desc(std::size_t rows, std::size_t cols, std::size_t ld, bool trans,
                               dnnl::memory::data_type type) {
  using dim = dnnl::memory::dim;
  const dnnl::memory::dims dims{static_cast<dim>(rows), static_cast<dim>(cols)};
  const dnnl::memory::dims strides =
      trans ? dnnl::memory::dims{1, static_cast<dim>(ld)} : dnnl::memory::dims{static_cast<dim>(ld), 1};
  return dnnl::memory::desc(dims, type, strides);
}

std::unique_ptr<Primitive> make_primitive(const PrimitiveKey& key) {
  auto p = std::make_unique<Primitive>();
  const auto a_md = matrix_desc(key.m, key.k, key.lda, key.trans_a, key.type_a);
  const auto b_md = matrix_desc(key.k, key.n, key.ldb, key.trans_b, key.type_b);
  const auto c_md = matrix_desc(key.m, key.n, key.ldc, false, dnnl::memory::data_type::f32);
  float alpha, beta;
  std::memcpy(&alpha, &key.alpha_bits, sizeof alpha);
  std::memcpy(&beta, &key.beta_bits, sizeof beta);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (alpha != 1.f) attr.set_output_scales(0, {alpha});
  if (beta != 0.f) {
    dnnl::post_ops ops;
    ops.append_sum(beta);
    attr.set_post_ops(ops);
  }
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, engine(), /*allow_empty=*/true);
  if (!pd) return p;
  p->supported = true;
  p->impl = pd.impl_info_str();
  p->matmul = dnnl::matmul(pd);
  p->a = dnnl::memory(a_md, engine(), DNNL_MEMORY_NONE);
  p->b = dnnl::memory(b_md, engine(), DNNL_MEMORY_NONE);
  p->c = dnnl::memory(c_md, engine(), DNNL_MEMORY_NONE);
  p->scratch.resize(pd.scratchpad_desc().get_size());
  p->scratchpad = dnnl::memory(pd.scratchpad_desc(), engine(), p->scratch.empty() ? nullptr : p->scratch.data());
  p->args = {
      {DNNL_ARG_SRC, p->a}, {DNNL_ARG_WEIGHTS, p->b}, {DNNL_ARG_DST, p->c}, {DNNL_ARG_SCRATCHPAD, p->scratchpad}};
  return p;
}

// The primitive for key in this thread (created on first use; nullptr where oneDNN has no kernel).
Primitive* primitive_for(const PrimitiveKey& key) {
  // Bounded: a program that keeps making new shapes (say, every sequence length) starts over rather
  // than growing without end; oneDNN's own primitive cache makes re-creating the common ones cheap.
  constexpr std::size_t kMaxPrimitives = 4096;
  thread_local std::unordered_map<PrimitiveKey, std::unique_ptr<Primitive>, PrimitiveKeyHash> cache;
  auto it = cache.find(key);
  if (it == cache.end()) {
    if (cache.size() >= kMaxPrimitives) cache.clear();
    it = cache.emplace(key, make_primitive(key)).first;
  }
  return it->second->supported ? it->second.get() : nullptr;
}

template <typename T>
dnnl::memory::data_type dnnl_type() {
  if constexpr (std::is_same_v<T, float>) {
    return dnnl::memory::data_type::f32;
  } else {
    return dnnl::memory::data_type::bf16;
  }
}

template <typename A, typename B>
PrimitiveKey key_of(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
                    std::size_t lda, std::size_t ldb, float beta, std::size_t ldc) {
  PrimitiveKey key;
  std::memset(&key, 0, sizeof key);  // padding too: the key is compared and hashed as bytes
  key.type_a = dnnl_type<A>();
  key.type_b = dnnl_type<B>();
  key.trans_a = trans_a;
  key.trans_b = trans_b;
  key.m = m, key.n = n, key.k = k, key.lda = lda, key.ldb = ldb, key.ldc = ldc;
  std::memcpy(&key.alpha_bits, &alpha, sizeof alpha);
  std::memcpy(&key.beta_bits, &beta, sizeof beta);
  return key;
}

// Runs one block on oneDNN; false where oneDNN has no kernel for it.
template <typename A, typename B>
bool onednn_gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const A* a,
                 std::size_t lda, const B* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
  one_openmp_thread_here();
  Primitive* p = primitive_for(key_of<A, B>(trans_a, trans_b, m, n, k, alpha, lda, ldb, beta, ldc));
  if (!p) return false;
  p->a.set_data_handle(const_cast<A*>(a));
  p->b.set_data_handle(const_cast<B*>(b));
  p->c.set_data_handle(c);
  thread_local dnnl::stream stream(engine());
  p->matmul.execute(stream, p->args);
  stream.wait();
  return true;
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("oneDNN {}.{}.{}", v->major, v->minor, v->patch);
}

// The kernel oneDNN picks for a typical square product of these types ("brg:avx2", ...).
template <typename A, typename B>
std::string onednn_kernel() {
  one_openmp_thread_here();
  Primitive* p = primitive_for(key_of<A, B>(false, false, 256, 256, 256, 1.f, 256, 256, 0.f, 256));
  return p ? p->impl : std::string();
}
#endif

// ---------------------------------------------------------------------------------------------------
// Which kernel runs float products, chosen once from the CPU's instruction sets as oneDNN sees them
// (after ONEDNN_MAX_CPU_ISA). From AVX-512 up, oneDNN's brgemm kernels. Below it, oneDNN 2.6 has only its
// generic sgemm (gemm:jit), which measured at 40-60% of OpenBLAS's AVX2 kernels on the products of a
// training step (docs/mixed_precision.md), so OpenBLAS runs them there, unless OpenBLAS chose kernels
// for weaker instruction sets than the CPU has (a CPU newer than it), where oneDNN's are the better.
// TAPEGRAD_FLOAT_GEMM=onednn or =openblas overrides the choice (for measuring one against the other).
bool float_on_onednn() {
#ifdef TAPEGRAD_WITH_ONEDNN
  static const bool onednn = [] {
    if (const char* forced = std::getenv("TAPEGRAD_FLOAT_GEMM")) {
      if (std::string(forced) == "onednn") return true;
      if (std::string(forced) == "openblas") return false;
      throw std::invalid_argument(
          fmt::format("TAPEGRAD_FLOAT_GEMM must be 'onednn' or 'openblas' (or unset), got '{}'", forced));
    }
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto avx512 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
    return (isa & avx512) == avx512 || !detail::openblas_core_warning(openblas_get_corename()).empty();
  }();
  return onednn;
#else
  return false;
#endif
}

// One block of a float product.
void float_kernel(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
                  std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
#ifdef TAPEGRAD_WITH_ONEDNN
  if (float_on_onednn() && onednn_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
#endif
  openblas_single_threaded();
  cblas_sgemm(CblasRowMajor, op(trans_a), op(trans_b), bi(m), bi(n), bi(k), alpha, a, bi(lda), b, bi(ldb), beta, c,
              bi(ldc));
}

bool native_bfloat16_kernels() {
#ifdef TAPEGRAD_WITH_ONEDNN
  // oneDNN's ISA values are bit masks, each containing the ones below it.
  static const bool native = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    return (isa & bf16) == bf16;
  }();
  return native;
#else
  return false;
#endif
}

// A dense copy of X (stored_rows x stored_cols as it lies in memory, ld apart) in `out`, its values
// converted to Out: to bfloat16, from bfloat16, or float rounded to bfloat16 (convert above).
template <typename Out, typename In>
void dense_copy(const In* x, std::size_t stored_rows, std::size_t stored_cols, std::size_t ld, std::vector<Out>& out) {
  out.resize(stored_rows * stored_cols);
  Out* o = out.data();
  const std::size_t grain = std::max<std::size_t>(1, (std::size_t{1} << 16) / std::max<std::size_t>(stored_cols, 1));
  detail::parallel_for(stored_rows, grain, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) convert(x + r * ld, o + r * stored_cols, stored_cols);
  });
}

// Operand X of a bfloat16 product as the kernel wants it (Out): X itself where it already is bfloat16
// for a bfloat16 kernel, else a dense converted copy in buffer (ld becomes its row length).
template <typename Out, typename In>
const Out* as_operand(const In* x, std::size_t stored_rows, std::size_t stored_cols, std::size_t& ld,
                      std::vector<Out>& buffer) {
  if constexpr (std::is_same_v<Out, bfloat16> && std::is_same_v<In, bfloat16>) {
    return x;
  } else {
    dense_copy(x, stored_rows, stored_cols, ld, buffer);
    ld = stored_cols;
    return buffer.data();
  }
}

template <typename A, typename B>
void gemm_bf16(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const A* a,
               std::size_t lda, const B* b, std::size_t ldb, float beta, float* c, std::size_t ldc);

}  // namespace

template <>
void gemm<float>(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
                 std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc,
                 Precision precision) {
  if (precision == Precision::BFloat16)
    return gemm_bf16(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (empty_product(m, n, k, beta, c, ldc)) return;
  split_gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc,
             [&](std::size_t rows, std::size_t cols, const float* pa, const float* pb, float* pc) {
               float_kernel(trans_a, trans_b, rows, cols, k, alpha, pa, lda, pb, ldb, beta, pc, ldc);
             });
}

template <>
void gemm<double>(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, double alpha,
                  const double* a, std::size_t lda, const double* b, std::size_t ldb, double beta, double* c,
                  std::size_t ldc, Precision) {
  if (empty_product(m, n, k, beta, c, ldc)) return;
  openblas_single_threaded();
  split_gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc,
             [&](std::size_t rows, std::size_t cols, const double* pa, const double* pb, double* pc) {
               cblas_dgemm(CblasRowMajor, op(trans_a), op(trans_b), bi(rows), bi(cols), bi(k), alpha, pa, bi(lda), pb,
                           bi(ldb), beta, pc, bi(ldc));
             });
}

namespace {

// A product on bfloat16 operands (or float ones, rounded), accumulated in float.
template <typename A, typename B>
void gemm_bf16(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const A* a,
               std::size_t lda, const B* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
  if (empty_product(m, n, k, beta, c, ldc)) return;
  // How the operands lie in memory: op(A) is m x k, op(B) is k x n.
  const std::size_t a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
  const std::size_t b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
#ifdef TAPEGRAD_WITH_ONEDNN
  if (native_bfloat16_kernels()) {
    thread_local std::vector<bfloat16> a_buffer, b_buffer;
    const bfloat16* pa = as_operand<bfloat16>(a, a_rows, a_cols, lda, a_buffer);
    const bfloat16* pb = as_operand<bfloat16>(b, b_rows, b_cols, ldb, b_buffer);
    bool all_native = true;
    split_gemm(trans_a, trans_b, m, n, k, pa, lda, pb, ldb, c, ldc,
               [&](std::size_t rows, std::size_t cols, const bfloat16* ba, const bfloat16* bb, float* bc) {
                 all_native &= onednn_gemm(trans_a, trans_b, rows, cols, k, alpha, ba, lda, bb, ldb, beta, bc, ldc);
               });
    if (all_native) return;
    throw std::logic_error(fmt::format("gemm_bf16: oneDNN has no bfloat16 kernel for {} x {} x {} on this CPU", m, k,
                                       n));  // never seen where native_bfloat16_kernels() holds
  }
#endif
  // No bfloat16 instructions: the float kernels on the operands rounded to bfloat16, which is exact
  // bfloat16 arithmetic (a product of two bfloat16 values fits in a float) with float sums.
  thread_local std::vector<float> a_buffer, b_buffer;
  const float* pa = as_operand<float>(a, a_rows, a_cols, lda, a_buffer);
  const float* pb = as_operand<float>(b, b_rows, b_cols, ldb, b_buffer);
  split_gemm(trans_a, trans_b, m, n, k, pa, lda, pb, ldb, c, ldc,
             [&](std::size_t rows, std::size_t cols, const float* ba, const float* bb, float* bc) {
               float_kernel(trans_a, trans_b, rows, cols, k, alpha, ba, lda, bb, ldb, beta, bc, ldc);
             });
}

}  // namespace

std::vector<bfloat16> to_bfloat16_matrix(const float* x, std::size_t rows, std::size_t cols, std::size_t ld) {
  std::vector<bfloat16> out;
  dense_copy(x, rows, cols, ld, out);
  return out;
}

template <typename T>
std::vector<bfloat16> bfloat16_copy(Precision precision, const T* x, std::size_t rows, std::size_t cols) {
  if constexpr (std::is_same_v<T, float>) {
    if (precision == Precision::BFloat16) return to_bfloat16_matrix(x, rows, cols, cols);
  }
  return {};
}

template std::vector<bfloat16> bfloat16_copy<float>(Precision, const float*, std::size_t, std::size_t);
template std::vector<bfloat16> bfloat16_copy<double>(Precision, const double*, std::size_t, std::size_t);

template <typename T>
void gemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, T alpha, Operand<T> a,
          std::size_t lda, Operand<T> b, std::size_t ldb, T beta, T* c, std::size_t ldc, Precision precision) {
  if constexpr (std::is_same_v<T, float>) {
    if (precision == Precision::BFloat16) {
      if (a.bf16 && b.bf16) return gemm_bf16(trans_a, trans_b, m, n, k, alpha, a.bf16, lda, b.bf16, ldb, beta, c, ldc);
      if (a.bf16) return gemm_bf16(trans_a, trans_b, m, n, k, alpha, a.bf16, lda, b.values, ldb, beta, c, ldc);
      if (b.bf16) return gemm_bf16(trans_a, trans_b, m, n, k, alpha, a.values, lda, b.bf16, ldb, beta, c, ldc);
      return gemm_bf16(trans_a, trans_b, m, n, k, alpha, a.values, lda, b.values, ldb, beta, c, ldc);
    }
  }
  if (a.bf16 || b.bf16) throw std::logic_error("blas::gemm: a bfloat16 operand needs Precision::BFloat16");
  gemm<T>(trans_a, trans_b, m, n, k, alpha, a.values, lda, b.values, ldb, beta, c, ldc, precision);
}

template void gemm<float>(bool, bool, std::size_t, std::size_t, std::size_t, float, Operand<float>, std::size_t,
                          Operand<float>, std::size_t, float, float*, std::size_t, Precision);
template void gemm<double>(bool, bool, std::size_t, std::size_t, std::size_t, double, Operand<double>, std::size_t,
                           Operand<double>, std::size_t, double, double*, std::size_t, Precision);

int set_num_threads(int threads) {
  openblas_single_threaded();
  const int previous = detail::parallel_threads();
  detail::set_parallel_threads(threads);
  return previous;
}

int get_num_threads() { return detail::parallel_threads(); }

const BackendInfo& backend_info() {
  static const BackendInfo info = [] {
    BackendInfo i;
    const std::string openblas = detail::openblas_name(openblas_get_config(), openblas_get_corename());
    i.double_kernel = openblas;
    i.native_bfloat16 = native_bfloat16_kernels();
#ifdef TAPEGRAD_WITH_ONEDNN
    i.float_kernel = float_on_onednn()                    ? onednn_version() + " " + onednn_kernel<float, float>()
                     : std::getenv("TAPEGRAD_FLOAT_GEMM") ? openblas + " (TAPEGRAD_FLOAT_GEMM=openblas)"
                                                          : openblas + " (oneDNN has no AVX-512 here)";
    i.bfloat16_kernel = i.native_bfloat16 ? onednn_version() + " " + onednn_kernel<bfloat16, bfloat16>()
                                          : "none native: float kernel on bf16-rounded inputs";
#else
    i.float_kernel = openblas;
    i.bfloat16_kernel = "none native: float kernel on bf16-rounded inputs";
#endif
    i.warning = detail::openblas_core_warning(openblas_get_corename());
    return i;
  }();
  return info;
}

}  // namespace tapegrad::blas
