#include "tapegrad/autograd/layer_norm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "tapegrad/autograd/instantiate.hpp"
#include "tapegrad/autograd/parallel.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/autograd/vector_math.hpp"

namespace tapegrad {

namespace {
template <typename T>
void check_affine(const char* op, const char* name, const Tensor<T>& p, const Shape& normalized_shape) {
  if (p.defined() && p.shape() != normalized_shape) {
    throw ShapeError(fmt::format("{}: {} of shape {} does not match normalized_shape {}", op, name,
                                 format_shape(p.shape()), format_shape(normalized_shape)));
  }
}

void check_input(const char* op, const Shape& xs, const Shape& normalized_shape) {
  if (normalized_shape.empty()) {
    throw ShapeError(
        fmt::format("{}: normalized_shape must have at least one dim, got [] for input {}", op, format_shape(xs)));
  }
  const std::size_t k = normalized_shape.size();
  if (xs.size() < k || !std::equal(normalized_shape.begin(), normalized_shape.end(), xs.end() - k)) {
    throw ShapeError(fmt::format("{}: input {} does not end in normalized_shape {}", op, format_shape(xs),
                                 format_shape(normalized_shape)));
  }
}

// Rows per thread block: enough elements that a block outweighs waking a worker.
std::size_t min_rows(std::size_t d) { return std::max<std::size_t>(1, (1 << 14) / std::max<std::size_t>(d, 1)); }

// y = x_hat * w + b for one row, one branch-free loop per affine combination so that each vectorizes.
template <typename T>
void affine_row(const T* __restrict xr, T* __restrict yr, std::size_t d, T m, T s, const T* __restrict pw,
                const T* __restrict pb) {
  if (pw && pb)
    for (std::size_t j = 0; j < d; ++j) yr[j] = (xr[j] - m) * s * pw[j] + pb[j];
  else if (pw)
    for (std::size_t j = 0; j < d; ++j) yr[j] = (xr[j] - m) * s * pw[j];
  else if (pb)
    for (std::size_t j = 0; j < d; ++j) yr[j] = (xr[j] - m) * s + pb[j];
  else
    for (std::size_t j = 0; j < d; ++j) yr[j] = (xr[j] - m) * s;
}

// The forward of rows [begin, end): the input row is x's, or x + residual's (written to sum when given,
// for the backward to read as its input); mean and 1/std go to st, the normalized and affine row to y.
template <typename T>
void forward_rows(std::size_t begin, std::size_t end, std::size_t d, const T* px, const T* pr, T* sum, const T* pw,
                  const T* pb, T eps, T* st, T* py) {
  const T inv_d = T(1) / static_cast<T>(d);
  std::vector<T> row(pr && !sum ? d : 0);
  for (std::size_t r = begin; r < end; ++r) {
    const T* xr = px + r * d;
    if (pr) {
      const T* __restrict a = xr;
      const T* __restrict b = pr + r * d;
      T* __restrict sr = sum ? sum + r * d : row.data();
      for (std::size_t j = 0; j < d; ++j) sr[j] = a[j] + b[j];
      xr = sr;
    }
    // Two passes (mean, then squared deviations) avoid the cancellation of E[x^2] - E[x]^2.
    const T m = detail::lane_sum<T>(d, [&](std::size_t j) { return xr[j]; }) * inv_d;
    const T v = detail::lane_sum<T>(d, [&](std::size_t j) { return (xr[j] - m) * (xr[j] - m); }) * inv_d;
    const T s = T(1) / std::sqrt(v + eps);
    st[2 * r] = m;
    st[2 * r + 1] = s;
    affine_row(xr, py + r * d, d, m, s, pw, pb);
  }
}

// The backward of rows [begin, end), in one pass over x and g per row for the sums and one for dx.
// With gh = g * w and x_hat = (x - mean) * rstd: dx = rstd * (gh - mean(gh) - x_hat * mean(gh * x_hat)),
// and the rows' contributions g * x_hat and g to dw and db are added into dw and db (when given).
// The sums run in detail::lane_sum's 16 lanes and order (detail::lane_total); HasW and NeedWB give each
// variant one branch-free loop.
template <typename T, bool HasW, bool NeedWB>
void backward_rows(std::size_t begin, std::size_t end, std::size_t d, const T* px, const T* pg, const T* pw,
                   const T* st, T* pdx, T* __restrict dw, T* __restrict db) {
  using detail::kLanes;
  const T inv_d = T(1) / static_cast<T>(d);
  for (std::size_t r = begin; r < end; ++r) {
    const T* __restrict xr = px + r * d;
    const T* __restrict gr = pg + r * d;
    const T m = st[2 * r], s = st[2 * r + 1];
    const auto gh = [&](std::size_t j) { return HasW ? gr[j] * pw[j] : gr[j]; };
    T acc_gh[kLanes] = {}, acc_ghx[kLanes] = {};
    const auto step = [&](std::size_t j, std::size_t lane) {
      if (NeedWB) {
        dw[j] += gr[j] * (xr[j] - m) * s;
        db[j] += gr[j];
      }
      acc_gh[lane] += gh(j);
      acc_ghx[lane] += gh(j) * ((xr[j] - m) * s);
    };
    std::size_t j = 0;
    for (; j + kLanes <= d; j += kLanes)
      for (std::size_t k = 0; k < kLanes; ++k) step(j + k, k);
    for (std::size_t k = 0; j + k < d; ++k) step(j + k, k);
    if (!pdx) continue;
    const T mean_gh = detail::lane_total(acc_gh) * inv_d, mean_gh_xhat = detail::lane_total(acc_ghx) * inv_d;
    T* __restrict dr = pdx + r * d;
    for (std::size_t i = 0; i < d; ++i) dr[i] = s * (gh(i) - mean_gh - (xr[i] - m) * s * mean_gh_xhat);
  }
}

// The weight and bias gradients are sums over rows: each fixed block of rows (the blocks depend on
// the row count only, never on the thread count) sums into its own partial row, and the partials are
// added in block order, so the result is the same for any number of threads.
constexpr std::size_t kMaxBlocks = 64;

// The backward of every row, in fixed blocks of `block` rows split over the threads: dx (when given) and
// each block's partial dw and db (2 * d values a block, when given).
template <typename T>
void backward_blocks(std::size_t rows, std::size_t d, std::size_t block, const T* px, const T* pg, const T* pw,
                     const T* st, T* pdx, T* partial) {
  const std::size_t blocks = (rows + block - 1) / block;
  detail::parallel_for(blocks, 1, [&](std::size_t b0, std::size_t b1) {
    for (std::size_t blk = b0; blk < b1; ++blk) {
      const std::size_t r0 = blk * block, r1 = std::min(rows, r0 + block);
      T* dw = partial ? partial + blk * 2 * d : nullptr;
      const auto run = [&](auto has_w, auto need) {
        backward_rows<T, decltype(has_w)::value, decltype(need)::value>(r0, r1, d, px, pg, pw, st, pdx, dw,
                                                                        dw ? dw + d : nullptr);
      };
      using Yes = std::true_type;
      using No = std::false_type;
      if (pw)
        partial ? run(Yes{}, Yes{}) : run(Yes{}, No{});
      else
        partial ? run(No{}, Yes{}) : run(No{}, No{});
    }
  });
}

// dw and db: the blocks' partials added in block order.
template <typename T>
void sum_partials(const std::vector<T>& partial, std::size_t blocks, std::size_t d, T* __restrict dw,
                  T* __restrict db) {
  for (std::size_t blk = 0; blk < blocks; ++blk) {
    const T* __restrict part = partial.data() + blk * 2 * d;
    for (std::size_t j = 0; j < d; ++j) {
      dw[j] += part[j];
      db[j] += part[d + j];
    }
  }
}

// layer_norm(x) or, with a residual, layer_norm(x + residual): the forward, and the backward on the tape
// (dx is given to x and to the residual alike).
template <typename T>
Tensor<T> layer_norm_impl(const char* op, const Tensor<T>& x, const Tensor<T>* residual, const Shape& normalized_shape,
                          const Tensor<T>& weight, const Tensor<T>& bias, double eps) {
  const Shape& xs = x.shape();
  if (residual && residual->shape() != xs) {
    throw ShapeError(fmt::format("{}: residual {} must have the input's shape {}", op, format_shape(residual->shape()),
                                 format_shape(xs)));
  }
  check_input(op, xs, normalized_shape);
  check_affine(op, "weight", weight, normalized_shape);
  check_affine(op, "bias", bias, normalized_shape);

  const std::size_t d = numel(normalized_shape);
  const std::size_t rows = d == 0 ? 0 : x.numel() / d;
  const bool grad = residual ? should_record(x, *residual, weight, bias) : should_record(x, weight, bias);
  // mean and 1/std per row, side by side; only kept when the backward needs them.
  auto stats = std::make_shared<std::vector<T>>(2 * rows);
  xt::xarray<T> y = xt::xarray<T>::from_shape(xs);
  // The normalized input x + residual, kept for the backward (formed row by row in a scratch row
  // otherwise).
  const bool keep_sum = residual && grad;
  auto sum = std::make_shared<xt::xarray<T>>(keep_sum ? xt::xarray<T>::from_shape(xs) : xt::xarray<T>());
  const T* px = x.data().data();
  const T* pr = residual ? residual->data().data() : nullptr;
  const T* pw = weight.defined() ? weight.data().data() : nullptr;
  const T* pb = bias.defined() ? bias.data().data() : nullptr;
  detail::parallel_for(rows, min_rows(d), [&](std::size_t begin, std::size_t end) {
    forward_rows(begin, end, d, px, pr, keep_sum ? sum->data() : nullptr, pw, pb, static_cast<T>(eps), stats->data(),
                 y.data());
  });

  Tensor<T> out(std::move(y));
  if (!grad) return out;
  // x_hat is recomputed from the input, mean and rstd, so the backward keeps two values per row besides
  // the input.
  std::shared_ptr<const xt::xarray<T>> input = residual ? std::shared_ptr<const xt::xarray<T>>(sum) : x.saved();
  const auto backward = [input, w_val = weight.defined() ? weight.saved() : nullptr, stats, rows, d, normalized_shape,
                         with_residual = residual != nullptr](const xt::xarray<T>& g, GradInputs<T>& in) {
    const std::size_t iw = with_residual ? 2 : 1, ib = iw + 1;  // input positions of weight and bias
    const bool need_x = in.needs(0) || (with_residual && in.needs(1)), need_w = in.needs(iw), need_b = in.needs(ib);
    const bool need_wb = need_w || need_b;
    xt::xarray<T> dx;
    if (need_x) dx = xt::xarray<T>::from_shape(input->shape());
    const std::size_t block = std::max<std::size_t>(min_rows(d), (rows + kMaxBlocks - 1) / kMaxBlocks);
    const std::size_t blocks = (rows + block - 1) / block;
    // Per block: the partial dw (first d) and db (next d).
    std::vector<T> partial(need_wb ? blocks * 2 * d : 0, T(0));
    backward_blocks(rows, d, block, input->data(), g.data(), w_val ? w_val->data() : nullptr, stats->data(),
                    need_x ? dx.data() : nullptr, need_wb ? partial.data() : nullptr);
    if (need_x) {
      if (with_residual && in.needs(0)) in.accumulate(1, static_cast<const xt::xarray<T>&>(dx));
      in.accumulate(with_residual && !in.needs(0) ? 1 : 0, std::move(dx));
    }
    if (!need_wb) return;
    xt::xarray<T> dw = xt::zeros<T>(normalized_shape), db = xt::zeros<T>(normalized_shape);
    sum_partials(partial, blocks, d, dw.data(), db.data());
    if (need_w) in.accumulate(iw, std::move(dw));
    if (need_b) in.accumulate(ib, std::move(db));
  };
  if (residual)
    record(out, op, {x, *residual, weight, bias}, backward);
  else
    record(out, op, {x, weight, bias}, backward);
  return out;
}
// rms_norm: the forward of rows [begin, end), y = (x * rstd) * w with rstd = 1 / sqrt(mean(x^2) + eps)
// (torch's order of the products); rstd of each row goes to st.
template <typename T>
void rms_forward_rows(std::size_t begin, std::size_t end, std::size_t d, const T* px, const T* pw, T eps, T* st,
                      T* py) {
  const T inv_d = T(1) / static_cast<T>(d);
  for (std::size_t r = begin; r < end; ++r) {
    const T* __restrict xr = px + r * d;
    T* __restrict yr = py + r * d;
    const T s = T(1) / std::sqrt(detail::lane_sum<T>(d, [&](std::size_t j) { return xr[j] * xr[j]; }) * inv_d + eps);
    st[r] = s;
    if (pw)
      for (std::size_t j = 0; j < d; ++j) yr[j] = xr[j] * s * pw[j];
    else
      for (std::size_t j = 0; j < d; ++j) yr[j] = xr[j] * s;
  }
}

// rms_norm: the backward of rows [begin, end). With gh = g * w and x_hat = x * rstd:
// dx = rstd * (gh - x_hat * mean(gh * x_hat)) (docs/gradients.md), and each row's g * x_hat is added
// into dw (when given). One pass per row for the sum (and dw), one to write dx.
template <typename T, bool HasW, bool NeedW>
void rms_backward_rows(std::size_t begin, std::size_t end, std::size_t d, const T* px, const T* pg, const T* pw,
                       const T* st, T* pdx, T* __restrict dw) {
  using detail::kLanes;
  const T inv_d = T(1) / static_cast<T>(d);
  for (std::size_t r = begin; r < end; ++r) {
    const T* __restrict xr = px + r * d;
    const T* __restrict gr = pg + r * d;
    const T s = st[r];
    const auto gh = [&](std::size_t j) { return HasW ? gr[j] * pw[j] : gr[j]; };
    T acc[kLanes] = {};
    const auto step = [&](std::size_t j, std::size_t lane) {
      if (NeedW) dw[j] += gr[j] * (xr[j] * s);
      acc[lane] += gh(j) * (xr[j] * s);
    };
    std::size_t j = 0;
    for (; j + kLanes <= d; j += kLanes)
      for (std::size_t k = 0; k < kLanes; ++k) step(j + k, k);
    for (std::size_t k = 0; j + k < d; ++k) step(j + k, k);
    if (!pdx) continue;
    const T mean_gh_xhat = detail::lane_total(acc) * inv_d;
    T* __restrict dr = pdx + r * d;
    for (std::size_t i = 0; i < d; ++i) dr[i] = s * (gh(i) - xr[i] * s * mean_gh_xhat);
  }
}

}  // namespace

template <typename T>
Tensor<T> rms_norm(const Tensor<T>& x, const Shape& normalized_shape, const Tensor<T>& weight,
                   std::optional<double> eps) {
  const char* op = "rms_norm";
  const Shape& xs = x.shape();
  check_input(op, xs, normalized_shape);
  check_affine(op, "weight", weight, normalized_shape);
  const T e = eps ? static_cast<T>(*eps) : std::numeric_limits<T>::epsilon();
  if (!(e >= T(0))) throw std::invalid_argument(fmt::format("{}: eps must be >= 0, got {}", op, *eps));

  const std::size_t d = numel(normalized_shape);
  const std::size_t rows = d == 0 ? 0 : x.numel() / d;
  const bool grad = should_record(x, weight);
  auto rstd = std::make_shared<std::vector<T>>(rows);  // one value per row, all the backward keeps besides x, w
  xt::xarray<T> y = xt::xarray<T>::from_shape(xs);
  const T* px = x.data().data();
  const T* pw = weight.defined() ? weight.data().data() : nullptr;
  detail::parallel_for(rows, min_rows(d), [&](std::size_t begin, std::size_t end) {
    rms_forward_rows(begin, end, d, px, pw, e, rstd->data(), y.data());
  });
  Tensor<T> out(std::move(y));
  if (!grad) return out;
  record(out, op, {x, weight},
         [input = x.saved(), w_val = weight.defined() ? weight.saved() : nullptr, rstd, rows, d, normalized_shape](
             const xt::xarray<T>& g, GradInputs<T>& in) {
           const bool need_x = in.needs(0), need_w = in.needs(1);
           xt::xarray<T> dx;
           if (need_x) dx = xt::xarray<T>::from_shape(input->shape());
           // dw in fixed blocks of rows summed in block order, as layer_norm's: the same for any thread count.
           const std::size_t block = std::max<std::size_t>(min_rows(d), (rows + kMaxBlocks - 1) / kMaxBlocks);
           const std::size_t blocks = (rows + block - 1) / block;
           std::vector<T> partial(need_w ? blocks * d : 0, T(0));
           const T* pw = w_val ? w_val->data() : nullptr;
           detail::parallel_for(blocks, 1, [&](std::size_t b0, std::size_t b1) {
             for (std::size_t blk = b0; blk < b1; ++blk) {
               const std::size_t r0 = blk * block, r1 = std::min(rows, r0 + block);
               T* dw = need_w ? partial.data() + blk * d : nullptr;
               const auto run = [&](auto has_w, auto need) {
                 rms_backward_rows<T, decltype(has_w)::value, decltype(need)::value>(
                     r0, r1, d, input->data(), g.data(), pw, rstd->data(), need_x ? dx.data() : nullptr, dw);
               };
               using Yes = std::true_type;
               using No = std::false_type;
               if (pw)
                 need_w ? run(Yes{}, Yes{}) : run(Yes{}, No{});
               else
                 run(No{}, No{});  // no weight: nothing to accumulate
             }
           });
           if (need_x) in.accumulate(0, std::move(dx));
           if (!need_w) return;
           xt::xarray<T> dw = xt::zeros<T>(normalized_shape);
           T* __restrict pdw = dw.data();
           for (std::size_t blk = 0; blk < blocks; ++blk) {
             const T* __restrict part = partial.data() + blk * d;
             for (std::size_t j = 0; j < d; ++j) pdw[j] += part[j];
           }
           in.accumulate(1, std::move(dw));
         });
  return out;
}

template <typename T>
Tensor<T> layer_norm(const Tensor<T>& x, const Shape& normalized_shape, const Tensor<T>& weight, const Tensor<T>& bias,
                     double eps) {
  return layer_norm_impl<T>("layer_norm", x, nullptr, normalized_shape, weight, bias, eps);
}

template <typename T>
Tensor<T> add_layer_norm(const Tensor<T>& x, const Tensor<T>& residual, const Shape& normalized_shape,
                         const Tensor<T>& weight, const Tensor<T>& bias, double eps) {
  return layer_norm_impl<T>("add_layer_norm", x, &residual, normalized_shape, weight, bias, eps);
}

TAPEGRAD_INSTANTIATE(layer_norm);
TAPEGRAD_INSTANTIATE(add_layer_norm);
TAPEGRAD_INSTANTIATE(rms_norm);

}  // namespace tapegrad
