#include "tapegrad/autograd/softmax.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tapegrad/autograd/instantiate.hpp"
#include "tapegrad/autograd/parallel.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/autograd/vector_math.hpp"

namespace tapegrad {

namespace {

// The tensor seen as [outer, n, inner] around the softmax dim.
struct SliceLayout {
  std::size_t outer = 1, n = 1, inner = 1;
};

SliceLayout layout_for(const char* op, const Shape& shape, std::int64_t dim) {
  SliceLayout l;
  if (shape.empty()) {  // a 0-d tensor is one slice of one element; torch accepts dim 0 or -1
    normalize_dim(op, dim, 1);
    return l;
  }
  const std::size_t d = normalize_dim(op, dim, shape.size());
  for (std::size_t i = 0; i < d; ++i) l.outer *= shape[i];
  l.n = shape[d];
  for (std::size_t i = d + 1; i < shape.size(); ++i) l.inner *= shape[i];
  return l;
}

// Writes softmax (log_softmax when Log) of x into y. An all -inf slice has max -inf, so x - max is
// NaN there and the NaN propagates through the whole slice, as in torch. log_softmax is
// (x - max) - log(sum), never x - (max + log(sum)): for logits far from 0, max + log(sum) rounds to
// the precision of max, which would swamp the log-probabilities near 0.
template <bool Log, typename T>
void softmax_forward(const T* x, T* y, const SliceLayout& l) {
  const std::size_t n = l.n, inner = l.inner;
  if (n == 0 || inner == 0) return;
  if (inner == 1) {
    // Rows are independent: split them over the threads; each loop below vectorizes.
    detail::parallel_for(l.outer, std::max<std::size_t>(1, 4096 / n), [&](std::size_t begin, std::size_t end) {
      for (std::size_t o = begin; o < end; ++o) {
        const T* xr = x + o * n;
        T* yr = y + o * n;
        const T mx = detail::row_max(xr, n);
        if (Log) {
          const T lse = std::log(detail::lane_sum<T>(n, [&](std::size_t j) { return detail::fast_exp(xr[j] - mx); }));
          for (std::size_t j = 0; j < n; ++j) yr[j] = (xr[j] - mx) - lse;
        } else {
          for (std::size_t j = 0; j < n; ++j) yr[j] = detail::fast_exp(xr[j] - mx);
          const T scale = T(1) / detail::lane_sum<T>(n, [&](std::size_t j) { return yr[j]; });
          for (std::size_t j = 0; j < n; ++j) yr[j] *= scale;
        }
      }
    });
    return;
  }
  // Strided slices: accumulate per inner position so every pass walks memory contiguously.
  std::vector<T> mx(inner), sum(inner);
  for (std::size_t o = 0; o < l.outer; ++o) {
    const T* xb = x + o * n * inner;
    T* yb = y + o * n * inner;
    std::copy(xb, xb + inner, mx.begin());
    for (std::size_t j = 1; j < n; ++j)
      for (std::size_t i = 0; i < inner; ++i) mx[i] = std::max(mx[i], xb[j * inner + i]);
    std::fill(sum.begin(), sum.end(), T(0));
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t i = 0; i < inner; ++i) {
        const T e = detail::fast_exp(xb[j * inner + i] - mx[i]);
        sum[i] += e;
        if (!Log) yb[j * inner + i] = e;
      }
    if (Log) {
      for (std::size_t i = 0; i < inner; ++i) sum[i] = std::log(sum[i]);
      for (std::size_t j = 0; j < n; ++j)
        for (std::size_t i = 0; i < inner; ++i) yb[j * inner + i] = (xb[j * inner + i] - mx[i]) - sum[i];
    } else {
      for (std::size_t i = 0; i < inner; ++i) sum[i] = T(1) / sum[i];
      for (std::size_t j = 0; j < n; ++j)
        for (std::size_t i = 0; i < inner; ++i) yb[j * inner + i] *= sum[i];
    }
  }
}

// softmax: dx = y * (g - sum(g * y)); log_softmax: dx = g - exp(y) * sum(g). Both per slice.
template <bool Log, typename T>
void softmax_backward(const T* g, const T* y, T* dx, const SliceLayout& l) {
  const std::size_t n = l.n, inner = l.inner;
  if (n == 0 || inner == 0) return;
  if (inner == 1) {
    detail::parallel_for(l.outer, std::max<std::size_t>(1, 4096 / n), [&](std::size_t begin, std::size_t end) {
      for (std::size_t o = begin; o < end; ++o) {
        const T* gr = g + o * n;
        const T* yr = y + o * n;
        T* dr = dx + o * n;
        if (Log) {
          const T dot = detail::lane_sum<T>(n, [&](std::size_t j) { return gr[j]; });
          for (std::size_t j = 0; j < n; ++j) dr[j] = gr[j] - detail::fast_exp(yr[j]) * dot;
        } else {
          const T dot = detail::lane_sum<T>(n, [&](std::size_t j) { return gr[j] * yr[j]; });
          for (std::size_t j = 0; j < n; ++j) dr[j] = yr[j] * (gr[j] - dot);
        }
      }
    });
    return;
  }
  std::vector<T> dot(inner);
  for (std::size_t o = 0; o < l.outer; ++o) {
    const std::size_t base = o * n * inner;
    std::fill(dot.begin(), dot.end(), T(0));
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t i = 0; i < inner; ++i) {
        const std::size_t k = base + j * inner + i;
        dot[i] += Log ? g[k] : g[k] * y[k];
      }
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t i = 0; i < inner; ++i) {
        const std::size_t k = base + j * inner + i;
        dx[k] = Log ? g[k] - detail::fast_exp(y[k]) * dot[i] : y[k] * (g[k] - dot[i]);
      }
  }
}

template <bool Log, typename T>
Tensor<T> softmax_impl(const char* op, const Tensor<T>& x, std::int64_t dim) {
  const SliceLayout l = layout_for(op, x.shape(), dim);
  xt::xarray<T> y = xt::xarray<T>::from_shape(x.shape());
  softmax_forward<Log>(x.data().data(), y.data(), l);
  Tensor<T> out(std::move(y));
  if (should_record(x))
    record(out, op, {x}, [y_val = out.saved(), l](const xt::xarray<T>& g, GradInputs<T>& in) {
      xt::xarray<T> dx = xt::xarray<T>::from_shape(g.shape());
      softmax_backward<Log>(g.data(), y_val->data(), dx.data(), l);
      in.accumulate(0, std::move(dx));
    });
  return out;
}

}  // namespace

template <typename T>
Tensor<T> softmax(const Tensor<T>& x, std::int64_t dim) {
  return softmax_impl<false>("softmax", x, dim);
}

template <typename T>
Tensor<T> log_softmax(const Tensor<T>& x, std::int64_t dim) {
  return softmax_impl<true>("log_softmax", x, dim);
}

TAPEGRAD_INSTANTIATE(softmax);
TAPEGRAD_INSTANTIATE(log_softmax);

}  // namespace tapegrad
