#include "tapegrad/autograd/layer_norm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "tapegrad/autograd/parallel.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/autograd/vector_math.hpp"

namespace tapegrad {

namespace {
template <typename T>
void check_affine(const char* name, const Tensor<T>& p, const Shape& normalized_shape) {
  if (p.defined() && p.shape() != normalized_shape) {
    throw ShapeError(fmt::format("layer_norm: {} of shape {} does not match normalized_shape {}", name,
                                 format_shape(p.shape()), format_shape(normalized_shape)));
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

// The weight and bias gradients are sums over rows: each fixed block of rows (the blocks depend on
// the row count only, never on the thread count) sums into its own partial row, and the partials are
// added in block order, so the result is the same for any number of threads.
constexpr std::size_t kMaxBlocks = 64;
}  // namespace

template <typename T>
Tensor<T> layer_norm(const Tensor<T>& x, const Shape& normalized_shape, const Tensor<T>& weight, const Tensor<T>& bias,
                     double eps) {
  const Shape& xs = x.shape();
  if (normalized_shape.empty()) {
    throw ShapeError(
        fmt::format("layer_norm: normalized_shape must have at least one dim, got [] for input {}", format_shape(xs)));
  }
  const std::size_t k = normalized_shape.size();
  if (xs.size() < k || !std::equal(normalized_shape.begin(), normalized_shape.end(), xs.end() - k)) {
    throw ShapeError(fmt::format("layer_norm: input {} does not end in normalized_shape {}", format_shape(xs),
                                 format_shape(normalized_shape)));
  }
  check_affine("weight", weight, normalized_shape);
  check_affine("bias", bias, normalized_shape);

  const std::size_t d = numel(normalized_shape);
  const std::size_t rows = d == 0 ? 0 : x.numel() / d;
  const bool grad = should_record(x, weight, bias);
  // mean and 1/std per row, side by side; only kept when the backward needs them.
  auto stats = std::make_shared<std::vector<T>>(2 * rows);
  xt::xarray<T> y = xt::xarray<T>::from_shape(xs);
  const T* px = x.data().data();
  const T* pw = weight.defined() ? weight.data().data() : nullptr;
  const T* pb = bias.defined() ? bias.data().data() : nullptr;
  T* py = y.data();
  T* st = stats->data();
  const T inv_d = T(1) / static_cast<T>(d), e = static_cast<T>(eps);
  detail::parallel_for(rows, min_rows(d), [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      const T* xr = px + r * d;
      // Two passes (mean, then squared deviations) avoid the cancellation of E[x^2] - E[x]^2.
      const T m = detail::lane_sum<T>(d, [&](std::size_t j) { return xr[j]; }) * inv_d;
      const T v = detail::lane_sum<T>(d, [&](std::size_t j) { return (xr[j] - m) * (xr[j] - m); }) * inv_d;
      const T s = T(1) / std::sqrt(v + e);
      st[2 * r] = m;
      st[2 * r + 1] = s;
      affine_row(xr, py + r * d, d, m, s, pw, pb);
    }
  });

  Tensor<T> out(std::move(y));
  if (grad) {
    // x_hat is recomputed from x, mean and rstd, so the backward keeps two values per row besides x.
    record(out, "layer_norm", {x, weight, bias},
           [x_val = x.saved(), w_val = weight.defined() ? weight.saved() : nullptr, stats, rows, d, normalized_shape](
               const xt::xarray<T>& g, GradInputs<T>& in) {
             const T* px = x_val->data();
             const T* pg = g.data();
             const T* pw = w_val ? w_val->data() : nullptr;
             const T* st = stats->data();
             const bool need_x = in.needs(0), need_w = in.needs(1), need_b = in.needs(2);
             xt::xarray<T> dx;
             if (need_x) dx = xt::xarray<T>::from_shape(x_val->shape());
             T* pdx = need_x ? dx.data() : nullptr;
             const T inv_d = T(1) / static_cast<T>(d);
             const std::size_t block = std::max<std::size_t>(min_rows(d), (rows + kMaxBlocks - 1) / kMaxBlocks);
             const std::size_t blocks = (rows + block - 1) / block;
             const bool need_wb = need_w || need_b;
             // Per block: the partial dw (first d) and db (next d).
             std::vector<T> partial(need_wb ? blocks * 2 * d : 0, T(0));
             detail::parallel_for(blocks, 1, [&](std::size_t b0, std::size_t b1) {
               std::vector<T> gh_buf(pw ? d : 0);
               for (std::size_t blk = b0; blk < b1; ++blk) {
                 T* __restrict dw = need_wb ? partial.data() + blk * 2 * d : nullptr;
                 T* __restrict db = need_wb ? dw + d : nullptr;
                 const std::size_t r_end = std::min(rows, (blk + 1) * block);
                 for (std::size_t r = blk * block; r < r_end; ++r) {
                   const T* __restrict xr = px + r * d;
                   const T* __restrict gr = pg + r * d;
                   const T m = st[2 * r], s = st[2 * r + 1];
                   if (need_wb)
                     for (std::size_t j = 0; j < d; ++j) {
                       dw[j] += gr[j] * (xr[j] - m) * s;
                       db[j] += gr[j];
                     }
                   if (!need_x) continue;
                   // With gh = g * w: dx = rstd * (gh - mean(gh) - x_hat * mean(gh * x_hat)).
                   const T* gh = gr;
                   if (pw) {
                     T* __restrict buf = gh_buf.data();
                     for (std::size_t j = 0; j < d; ++j) buf[j] = gr[j] * pw[j];
                     gh = buf;
                   }
                   const T mean_gh = detail::lane_sum<T>(d, [&](std::size_t j) { return gh[j]; }) * inv_d;
                   const T mean_gh_xhat =
                       detail::lane_sum<T>(d, [&](std::size_t j) { return gh[j] * ((xr[j] - m) * s); }) * inv_d;
                   T* __restrict dr = pdx + r * d;
                   for (std::size_t j = 0; j < d; ++j) dr[j] = s * (gh[j] - mean_gh - (xr[j] - m) * s * mean_gh_xhat);
                 }
               }
             });
             if (need_x) in.accumulate(0, std::move(dx));
             if (!need_wb) return;
             xt::xarray<T> dw = xt::zeros<T>(normalized_shape), db = xt::zeros<T>(normalized_shape);
             T* __restrict pdw = dw.data();
             T* __restrict pdb = db.data();
             for (std::size_t blk = 0; blk < blocks; ++blk) {
               const T* __restrict pw_part = partial.data() + blk * 2 * d;
               for (std::size_t j = 0; j < d; ++j) {
                 pdw[j] += pw_part[j];
                 pdb[j] += pw_part[d + j];
               }
             }
             if (need_w) in.accumulate(1, std::move(dw));
             if (need_b) in.accumulate(2, std::move(db));
           });
  }
  return out;
}

template Tensor<float> layer_norm<float>(const Tensor<float>&, const Shape&, const Tensor<float>&, const Tensor<float>&,
                                         double);
template Tensor<double> layer_norm<double>(const Tensor<double>&, const Shape&, const Tensor<double>&,
                                           const Tensor<double>&, double);

}  // namespace tapegrad
