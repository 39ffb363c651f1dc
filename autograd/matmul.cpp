#include "tapegrad/autograd/matmul.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "tapegrad/autograd/activation_kernels.hpp"
#include "tapegrad/autograd/blas.hpp"
#include "tapegrad/autograd/broadcast.hpp"
#include "tapegrad/autograd/elementwise_kernels.hpp"
#include "tapegrad/autograd/instantiate.hpp"
#include "tapegrad/autograd/parallel.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad {

namespace {

// How a batched product lays out over memory: matrices of M x K and K x N, batch dims broadcast.
struct BatchPlan {
  std::size_t m = 0, k = 0, n = 0;
  Shape batch;                         // broadcast batch shape of the output
  std::vector<std::size_t> a_strides;  // per batch dim, in elements; 0 where a is broadcast
  std::vector<std::size_t> b_strides;
  std::vector<std::size_t> out_strides;
};

// Calls f(a_offset, b_offset, out_offset) for every batch index.
template <typename F>
void for_each_batch(const BatchPlan& plan, F f) {
  const std::size_t count = numel(plan.batch);
  std::vector<std::size_t> index(plan.batch.size(), 0);
  std::size_t a = 0, b = 0, o = 0;
  for (std::size_t step = 0; step < count; ++step) {
    f(a, b, o);
    for (std::size_t d = plan.batch.size(); d-- > 0;) {
      ++index[d];
      a += plan.a_strides[d];
      b += plan.b_strides[d];
      o += plan.out_strides[d];
      if (index[d] < plan.batch[d]) break;
      a -= plan.a_strides[d] * index[d];
      b -= plan.b_strides[d] * index[d];
      o -= plan.out_strides[d] * index[d];
      index[d] = 0;
    }
  }
}

// for_each_batch split over the threads when `disjoint` (each batch writes its own output block, so
// the blocks may run in any order); serial otherwise (broadcast operands accumulate into one block).
template <typename F>
void for_each_batch_parallel(const BatchPlan& plan, bool disjoint, F f) {
  if (!disjoint) return for_each_batch(plan, f);
  std::vector<std::array<std::size_t, 3>> offsets;
  offsets.reserve(numel(plan.batch));
  for_each_batch(plan, [&](std::size_t a, std::size_t b, std::size_t o) { offsets.push_back({a, b, o}); });
  detail::parallel_for(offsets.size(), 1, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) f(offsets[i][0], offsets[i][1], offsets[i][2]);
  });
}

// Batch-dim strides of a [batch..., rows, cols] operand against the broadcast batch shape.
std::vector<std::size_t> batch_strides(const Shape& shape, const Shape& batch) {
  const Shape own_batch(shape.begin(), shape.end() - 2);
  const std::size_t matrix = shape[shape.size() - 2] * shape[shape.size() - 1];
  auto strides = broadcast_strides(own_batch, batch.size());
  for (auto& s : strides) s *= matrix;
  return strides;
}

bool all_zero(const std::vector<std::size_t>& v) {
  for (auto x : v)
    if (x != 0) return false;
  return true;
}

// The plan of matmul(a, b) on the operands' shapes as given, 1-D operands promoted to matrices as torch
// does (a vector a as [1, k], a vector b as [k, 1]); throws naming both shapes when they do not fit.
BatchPlan matmul_plan(const Shape& sa, const Shape& sb) {
  if (sa.empty() || sb.empty()) {
    throw ShapeError(
        fmt::format("matmul: both operands need at least one dim, got {} and {}", format_shape(sa), format_shape(sb)));
  }
  const Shape pa = sa.size() == 1 ? Shape{1, sa[0]} : sa;
  const Shape pb = sb.size() == 1 ? Shape{sb[0], 1} : sb;
  const std::size_t ka = pa[pa.size() - 1], kb = pb[pb.size() - 2];
  if (ka != kb) {
    throw ShapeError(
        fmt::format("matmul: cannot multiply {} by {} ({} != {})", format_shape(sa), format_shape(sb), ka, kb));
  }
  BatchPlan plan;
  plan.m = pa[pa.size() - 2];
  plan.k = ka;
  plan.n = pb[pb.size() - 1];
  const Shape batch_a(pa.begin(), pa.end() - 2), batch_b(pb.begin(), pb.end() - 2);
  try {
    plan.batch = broadcast_shapes("matmul", batch_a, batch_b);
  } catch (const ShapeError&) {  // name the operands the user passed, not just their batch dims
    throw ShapeError(fmt::format("matmul: batch dims {} of {} and {} of {} cannot be broadcast", format_shape(batch_a),
                                 format_shape(sa), format_shape(batch_b), format_shape(sb)));
  }
  plan.a_strides = batch_strides(pa, plan.batch);
  plan.b_strides = batch_strides(pb, plan.batch);
  plan.out_strides = contiguous_strides(plan.batch);
  for (auto& s : plan.out_strides) s *= plan.m * plan.n;
  return plan;
}

// dA = g B^T, summed over the batch dims a was broadcast along (folded: one GEMM over all the rows).
template <typename T>
xt::xarray<T> matmul_grad_a(const BatchPlan& plan, bool folded, const Shape& sa, const blas::Operand<T>& g, const T* b,
                            blas::Precision precision) {
  const std::size_t m = plan.m, k = plan.k, n = plan.n;
  xt::xarray<T> da = xt::zeros<T>(sa);
  if (folded) {
    blas::gemm<T>(false, true, numel(plan.batch) * m, k, n, T(1), g, n, b, n, T(0), da.data(), k, precision);
    return da;
  }
  const bool own_blocks = numel(sa) == numel(plan.batch) * m * k;  // a not broadcast
  for_each_batch_parallel(plan, own_blocks, [&](std::size_t ia, std::size_t ib, std::size_t io) {
    blas::gemm<T>(false, true, m, k, n, T(1), g + io, n, b + ib, n, T(1), da.data() + ia, k, precision);
  });
  return da;
}

// dB = A^T g, summed likewise.
template <typename T>
xt::xarray<T> matmul_grad_b(const BatchPlan& plan, bool folded, const Shape& sb, const blas::Operand<T>& g, const T* a,
                            blas::Precision precision) {
  const std::size_t m = plan.m, k = plan.k, n = plan.n;
  xt::xarray<T> db = xt::zeros<T>(sb);
  if (folded) {
    blas::gemm<T>(true, false, k, n, numel(plan.batch) * m, T(1), a, k, g, n, T(0), db.data(), n, precision);
    return db;
  }
  const bool own_blocks = numel(sb) == numel(plan.batch) * k * n;  // b not broadcast
  for_each_batch_parallel(plan, own_blocks, [&](std::size_t ia, std::size_t ib, std::size_t io) {
    blas::gemm<T>(true, false, k, n, m, T(1), a + ia, k, g + io, n, T(1), db.data() + ib, n, precision);
  });
  return db;
}

}  // namespace

template <typename T>
Tensor<T> matmul(const Tensor<T>& a, const Tensor<T>& b) {
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  const BatchPlan plan = matmul_plan(sa, sb);
  Shape out_shape = plan.batch;  // the promoted dims dropped again
  if (sa.size() > 1) out_shape.push_back(plan.m);
  if (sb.size() > 1) out_shape.push_back(plan.n);
  xt::xarray<T> out = xt::xarray<T>::from_shape(out_shape);

  const std::size_t m = plan.m, k = plan.k, n = plan.n;
  const blas::Precision precision = blas::autocast_precision<T>();
  // A batch of a against one shared b folds into a single GEMM of (batch * m) rows.
  const std::size_t batch_count = numel(plan.batch);
  const bool folded = all_zero(plan.b_strides) && batch_count > 0 && a.numel() == batch_count * m * k;
  if (folded) {
    blas::gemm<T>(false, false, batch_count * m, n, k, T(1), a.data().data(), k, b.data().data(), n, T(0), out.data(),
                  n, precision);
  } else {
    for_each_batch_parallel(plan, true, [&](std::size_t ia, std::size_t ib, std::size_t io) {
      blas::gemm<T>(false, false, m, n, k, T(1), a.data().data() + ia, k, b.data().data() + ib, n, T(0),
                    out.data() + io, n, precision);
    });
  }

  Tensor<T> result(std::move(out));
  if (should_record(a, b)) {
    record(result, "matmul", {a, b},
           [a_val = a.saved(), b_val = b.saved(), plan, folded, sa, sb, precision](const xt::xarray<T>& g,
                                                                                   GradInputs<T>& in) {
             // Under autocast both products read g: one bfloat16 copy serves the two.
             const std::vector<bfloat16> g_half =
                 in.needs(0) && in.needs(1)
                     ? blas::bfloat16_copy(precision, g.data(), numel(plan.batch) * plan.m, plan.n)
                     : std::vector<bfloat16>();
             const blas::Operand<T> g_op = blas::operand(g.data(), g_half);
             if (in.needs(0)) in.accumulate(0, matmul_grad_a(plan, folded, sa, g_op, b_val->data(), precision));
             if (in.needs(1)) in.accumulate(1, matmul_grad_b(plan, folded, sb, g_op, a_val->data(), precision));
           });
  }
  return result;
}

namespace {

// Column sums of g [rows, cols] into db, each column summed over the rows in order (the same order for
// any thread count), the columns split over the threads. With a slope, g is first multiplied by it in
// place (an activation's backward) and summed from there; db may be null then.
template <typename T, typename Slope>
void bias_gradient(T* g, std::size_t rows, std::size_t cols, T* db, Slope slope) {
  const std::size_t min_cols = std::max<std::size_t>(16, detail::kElementwiseGrain / std::max<std::size_t>(rows, 1));
  detail::parallel_for(cols, min_cols, [&](std::size_t c0, std::size_t c1) {
    for (std::size_t r = 0; r < rows; ++r) {
      T* __restrict gr = g + r * cols;
      T* __restrict d = db;
      for (std::size_t j = c0; j < c1; ++j) gr[j] = slope(gr[j], r * cols + j);
      if (d)
        for (std::size_t j = c0; j < c1; ++j) d[j] += gr[j];
    }
  });
}
template <typename T>
void bias_gradient(const T* g, std::size_t rows, std::size_t cols, T* db) {
  const std::size_t min_cols = std::max<std::size_t>(16, detail::kElementwiseGrain / std::max<std::size_t>(rows, 1));
  detail::parallel_for(cols, min_cols, [&](std::size_t c0, std::size_t c1) {
    for (std::size_t r = 0; r < rows; ++r) {
      const T* __restrict gr = g + r * cols;
      T* __restrict d = db;
      for (std::size_t j = c0; j < c1; ++j) d[j] += gr[j];
    }
  });
}

// Rows [r0, r1) of z ([rows, cols]) start as the bias: one row copied, then the filled rows doubled (a
// few large copies instead of one small copy call per row).
template <typename T>
void fill_bias(const T* bias, std::size_t cols, std::size_t r0, std::size_t r1, T* z) {
  if (!bias || r1 == r0) return;
  T* first = z + r0 * cols;
  std::copy(bias, bias + cols, first);
  for (std::size_t done = 1; done < r1 - r0; done *= 2)
    std::copy(first, first + std::min(done, r1 - r0 - done) * cols, first + done * cols);
}

// The forward of linear: out [rows, out_features] = x W^T + bias, then the activation when there is
// one (GELU's input, the product plus bias, goes to pre for the backward).
template <typename T>
void linear_forward(const blas::Operand<T>& x, const blas::Operand<T>& w, const T* bias, std::size_t rows,
                    std::size_t in_features, std::size_t out_features, std::optional<Activation> activation,
                    blas::Precision precision, T* out, T* pre) {
  // C = x W^T on rows [r0, r1) of z, added onto the bias (beta = 1) when there is one.
  const auto product = [&](std::size_t r0, std::size_t r1, T* z) {
    blas::gemm<T>(false, true, r1 - r0, out_features, in_features, T(1), x + r0 * in_features, in_features, w,
                  in_features, bias ? T(1) : T(0), z + r0 * out_features, out_features, precision);
  };
  if (!activation) {
    detail::parallel_for(rows,
                         std::max<std::size_t>(1, detail::kElementwiseGrain / std::max<std::size_t>(out_features, 1)),
                         [&](std::size_t r0, std::size_t r1) { fill_bias(bias, out_features, r0, r1, out); });
    product(0, rows, out);
    return;
  }
  // Fixed blocks of rows (by the shape only), each a product then its activation while in cache; the
  // blocks are split over the threads, and each GEMM runs on its thread alone.
  const bool tanh = activation == Activation::GELUTanh;
  const bool gelu = activation == Activation::GELU || tanh;
  const std::size_t block =
      std::max<std::size_t>(1, detail::kElementwiseGrain / std::max<std::size_t>(out_features, 1) / blas::kGemmAlign) *
      blas::kGemmAlign;
  const std::size_t blocks = (rows + block - 1) / block;
  T* pz = gelu ? pre : out;
  detail::parallel_for(blocks, 1, [&](std::size_t b0, std::size_t b1) {
    for (std::size_t blk = b0; blk < b1; ++blk) {
      const std::size_t r0 = blk * block, r1 = std::min(rows, r0 + block);
      fill_bias(bias, out_features, r0, r1, pz);
      product(r0, r1, pz);
      const std::size_t n = (r1 - r0) * out_features;
      T* __restrict y = out + r0 * out_features;
      if (gelu) {
        const T* __restrict z = pz + r0 * out_features;
        if (tanh)
          for (std::size_t i = 0; i < n; ++i) y[i] = detail::gelu_tanh_value(z[i]);
        else
          for (std::size_t i = 0; i < n; ++i) y[i] = detail::gelu_value(z[i]);
      } else {
        for (std::size_t i = 0; i < n; ++i) y[i] = detail::relu_value(y[i]);
      }
    }
  });
}

// Bit i of the result (word i / 64, bit i % 64) is set where y[i] > 0 (or NaN, which ReLU passes on):
// ReLU's slope, 1 bit per element instead of the 32 or 64 of its output.
template <typename T>
std::vector<std::uint64_t> positive_bits(const T* y, std::size_t n) {
  std::vector<std::uint64_t> bits((n + 63) / 64);
  detail::parallel_for(bits.size(), detail::kElementwiseGrain / 64, [&](std::size_t w0, std::size_t w1) {
    for (std::size_t w = w0; w < w1; ++w) {
      const std::size_t first = w * 64, count = std::min<std::size_t>(64, n - first);
      std::uint64_t word = 0;
      for (std::size_t b = 0; b < count; ++b) word |= std::uint64_t{!(y[first + b] <= T(0))} << b;
      bits[w] = word;
    }
  });
  return bits;
}

// The gradient before the activation, g * slope (the slope reads act, the GELUs' input, or for ReLU
// positive, the bits of positive_bits), written to dz over g's own buffer when the engine gives it up (a
// feed-forward block's [rows, F] gradient is then not held twice); the bias gradient summed into db when
// given. Returns what the products read: dz, or g itself when there is no activation.
template <typename T>
const T* activation_backward(const xt::xarray<T>& g, GradInputs<T>& in, const T* act, const std::uint64_t* positive,
                             Activation activation, std::size_t rows, std::size_t cols, T* db, xt::xarray<T>& dz) {
  if (!act && !positive) {
    if (db) bias_gradient(g.data(), rows, cols, db);
    return g.data();
  }
  dz = in.take_grad_output(g);
  T* d = dz.data();
  if (positive) {
    bias_gradient(d, rows, cols, db,
                  [positive](T gv, std::size_t i) { return (positive[i / 64] >> (i % 64)) & 1 ? gv : T(0); });
  } else if (activation == Activation::GELUTanh) {
    bias_gradient(d, rows, cols, db, [act](T gv, std::size_t i) { return gv * detail::gelu_tanh_slope(act[i]); });
  } else if (activation == Activation::GELU) {
    bias_gradient(d, rows, cols, db, [act](T gv, std::size_t i) { return gv * detail::gelu_slope(act[i]); });
  } else {
    bias_gradient(d, rows, cols, db, [act](T gv, std::size_t i) { return detail::relu_grad_from_output(gv, act[i]); });
  }
  return d;
}

// Throws ShapeError unless weight is [out_features, in_features] with in_features x's last dim, and the
// bias (when given) [out_features].
inline void check_linear_shapes(const char* op, const Shape& sx, const Shape& sw, const Shape* bias) {
  if (sw.size() != 2 || sx.empty() || sx.back() != sw[1]) {
    throw ShapeError(fmt::format("{}: input {} does not fit weight {} (expected weight [out_features, {}])", op,
                                 format_shape(sx), format_shape(sw), sx.empty() ? 0 : sx.back()));
  }
  if (bias && *bias != Shape{sw[0]}) {
    throw ShapeError(fmt::format("{}: bias {} does not fit weight {} (expected [{}])", op, format_shape(*bias),
                                 format_shape(sw), sw[0]));
  }
}

// linear, and linear followed by an activation: the forward and the backward on the tape.
template <typename T>
Tensor<T> linear_impl(const char* op, const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias,
                      std::optional<Activation> activation) {
  check_linear_shapes(op, x.shape(), weight.shape(), bias.defined() ? &bias.shape() : nullptr);
  const Shape& sx = x.shape();
  const std::size_t in_features = weight.shape()[1], out_features = weight.shape()[0];
  // The product of the leading dims (not numel / in_features, which is 0 / 0 when in_features is 0).
  const std::size_t rows = numel(Shape(sx.begin(), sx.end() - 1));
  Shape out_shape = sx;
  out_shape.back() = out_features;
  const bool gelu = activation == Activation::GELU || activation == Activation::GELUTanh;
  xt::xarray<T> out = xt::xarray<T>::from_shape(out_shape);
  // The GELUs' backward reads their input, the product plus bias: kept beside the output.
  auto pre = std::make_shared<xt::xarray<T>>(gelu ? xt::xarray<T>::from_shape(out_shape) : xt::xarray<T>());
  // Under autocast the product reads bfloat16 copies of x and the weight, made once here and kept for
  // the backward in place of the float values (half the memory of the saved input).
  const blas::Precision precision = blas::autocast_precision<T>();
  std::shared_ptr<const std::vector<bfloat16>> x_half, w_half;  // null outside autocast
  if (precision == blas::Precision::BFloat16) {
    x_half = std::make_shared<const std::vector<bfloat16>>(
        blas::bfloat16_copy(precision, x.data().data(), rows, in_features));
    w_half = std::make_shared<const std::vector<bfloat16>>(
        blas::bfloat16_copy(precision, weight.data().data(), out_features, in_features));
  }
  const blas::Operand<T> x_op = x_half ? blas::Operand<T>(x_half->data()) : blas::Operand<T>(x.data().data());
  const blas::Operand<T> w_op = w_half ? blas::Operand<T>(w_half->data()) : blas::Operand<T>(weight.data().data());
  linear_forward(x_op, w_op, bias.defined() ? bias.data().data() : nullptr, rows, in_features, out_features, activation,
                 precision, out.data(), pre->data());

  Tensor<T> result(std::move(out));
  if (!should_record(x, weight, bias)) return result;
  // What the activation's backward reads: the GELUs their input; ReLU only where its output is positive,
  // kept as bits, so that the output is freed as soon as its last user is done (a dropout after it, which
  // keeps nothing, leaves the [rows, out_features] output of a feed-forward block unheld).
  std::shared_ptr<const xt::xarray<T>> act_val = gelu ? pre : nullptr;
  std::shared_ptr<const std::vector<std::uint64_t>> positive;
  if (activation == Activation::ReLU)
    positive = std::make_shared<const std::vector<std::uint64_t>>(positive_bits(result.data().data(), result.numel()));
  // The values the backward's products read: the bfloat16 copies under autocast, else x and the weight.
  std::shared_ptr<const xt::xarray<T>> x_val, w_val;
  if (!x_half) x_val = x.saved(), w_val = weight.saved();
  record(result, op, {x, weight, bias},
         [x_val, w_val, x_half, w_half, precision, act_val, positive, activation, sx, rows, in_features, out_features](
             const xt::xarray<T>& g, GradInputs<T>& in) mutable {
           xt::xarray<T> db;
           if (in.needs(2)) db = xt::zeros<T>({out_features});
           xt::xarray<T> dz;  // the gradient before the activation
           const T* pg = activation_backward(
               g, in, act_val ? act_val->data() : nullptr, positive ? positive->data() : nullptr,
               activation.value_or(Activation::ReLU), rows, out_features, in.needs(2) ? db.data() : nullptr, dz);
           // Under autocast both products read dz: one bfloat16 copy serves the two.
           const std::vector<bfloat16> dz_half = in.needs(0) && in.needs(1)
                                                     ? blas::bfloat16_copy(precision, pg, rows, out_features)
                                                     : std::vector<bfloat16>();
           const blas::Operand<T> dz_op = blas::operand(pg, dz_half);
           if (in.needs(1)) {  // dW = dz^T x
             xt::xarray<T> dw = xt::xarray<T>::from_shape({out_features, in_features});
             const blas::Operand<T> xs = x_half ? blas::Operand<T>(x_half->data()) : blas::Operand<T>(x_val->data());
             blas::gemm<T>(true, false, out_features, in_features, rows, T(1), dz_op, out_features, xs, in_features,
                           T(0), dw.data(), in_features, precision);
             in.accumulate(1, std::move(dw));
           }
           // dW read x last: released before dx allocates (a feed-forward block's [rows, F] input and its gradient).
           if (!in.retain_graph()) x_val.reset(), x_half.reset(), act_val.reset(), positive.reset();
           if (in.needs(0)) {  // dx = dz W
             xt::xarray<T> dx = xt::xarray<T>::from_shape(sx);
             const blas::Operand<T> w = w_half ? blas::Operand<T>(w_half->data()) : blas::Operand<T>(w_val->data());
             blas::gemm<T>(false, false, rows, in_features, out_features, T(1), dz_op, out_features, w, in_features,
                           T(0), dx.data(), in_features, precision);
             in.accumulate(0, std::move(dx));
           }
           if (in.needs(2)) in.accumulate(2, std::move(db));
         });
  return result;
}

}  // namespace

template <typename T>
Tensor<T> linear(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias) {
  return linear_impl<T>("linear", x, weight, bias, std::nullopt);
}

template <typename T>
Tensor<T> linear_activation(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias, Activation activation) {
  return linear_impl<T>("linear_activation", x, weight, bias, activation);
}

int set_num_threads(int threads) { return blas::set_num_threads(threads); }
int get_num_threads() { return blas::get_num_threads(); }

TAPEGRAD_INSTANTIATE(matmul);
TAPEGRAD_INSTANTIATE(linear);
TAPEGRAD_INSTANTIATE(linear_activation);

}  // namespace tapegrad
