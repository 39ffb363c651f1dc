/// @file
/// Broadcasting kernels for op implementations: apply a binary function over two broadcast operands,
/// and unbroadcast, the one helper that reduces a gradient back to an operand's shape.
#pragma once

#include <algorithm>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/elementwise_kernels.hpp"
#include "tapegrad/autograd/shape.hpp"

namespace tapegrad {

/// Strides of `shape` (right-aligned against a tensor of rank `rank`) with 0 on broadcast dims.
std::vector<std::size_t> broadcast_strides(const Shape& shape, std::size_t rank);

/// Calls body(out_offset, a_offset, b_offset, count, a_step, b_step) for each run of `count` elements
/// along the last dim of out_shape; a_step and b_step are 0 (broadcast) or 1. With first_run and
/// last_run, only runs [first_run, last_run) (of numel(out_shape) / out_shape.back()), in order.
template <typename Body>
void for_each_broadcast_run(const Shape& out_shape, const std::vector<std::size_t>& a_strides,
                            const std::vector<std::size_t>& b_strides, Body body, std::size_t first_run = 0,
                            std::size_t last_run = static_cast<std::size_t>(-1)) {
  const std::size_t rank = out_shape.size();
  if (rank == 0) {
    if (first_run == 0 && last_run > 0) body(0, 0, 0, 1, 0, 0);
    return;
  }
  const std::size_t inner = out_shape[rank - 1];
  if (inner == 0 || numel(out_shape) == 0) return;
  const std::size_t outer = numel(out_shape) / inner;
  last_run = std::min(last_run, outer);
  // The odometer over the outer dims, started at first_run.
  std::vector<std::size_t> index(rank, 0);
  std::size_t a_off = 0, b_off = 0;
  for (std::size_t d = rank - 1, rest = first_run; d-- > 0;) {
    index[d] = rest % out_shape[d];
    rest /= out_shape[d];
    a_off += index[d] * a_strides[d];
    b_off += index[d] * b_strides[d];
  }
  for (std::size_t run = first_run; run < last_run; ++run) {
    body(run * inner, a_off, b_off, inner, a_strides[rank - 1], b_strides[rank - 1]);
    for (std::size_t d = rank - 1; d-- > 0;) {
      ++index[d];
      a_off += a_strides[d];
      b_off += b_strides[d];
      if (index[d] < out_shape[d]) break;
      a_off -= a_strides[d] * index[d];
      b_off -= b_strides[d] * index[d];
      index[d] = 0;
    }
  }
}

/// out[i] = f(a[i'], b[i'']) over the broadcast of a and b; throws ShapeError naming op and shapes.
/// Large outputs are split over the worker threads (f must be pure and must not throw, as for map).
template <typename T, typename F>
xt::xarray<T> broadcast_apply(const char* op, const xt::xarray<T>& a, const xt::xarray<T>& b, F f) {
  const Shape sa = shape_of(a), sb = shape_of(b);
  const T* pa = a.data();
  const T* pb = b.data();
  if (sa == sb) return zip(a, b, f);
  const Shape so = broadcast_shapes(op, sa, sb);
  xt::xarray<T> out = xt::xarray<T>::from_shape(so);
  T* po = out.data();
  const auto a_strides = broadcast_strides(sa, so.size()), b_strides = broadcast_strides(sb, so.size());
  const std::size_t inner = so.back();  // so has rank >= 1: equal shapes (scalars too) took the path above
  const std::size_t runs = inner == 0 ? 0 : out.size() / inner;
  detail::parallel_for(
      runs, std::max<std::size_t>(1, detail::kElementwiseGrain / std::max<std::size_t>(inner, 1)),
      [&](std::size_t first, std::size_t last) {
        const F fn = f;
        for_each_broadcast_run(
            so, a_strides, b_strides,
            [&](std::size_t o, std::size_t ia, std::size_t ib, std::size_t n, std::size_t da, std::size_t db) {
              const T* __restrict x = pa + ia;
              const T* __restrict y = pb + ib;
              T* __restrict r = po + o;
              // One loop per stride pattern, so that each vectorizes.
              if (da && db)
                for (std::size_t i = 0; i < n; ++i) r[i] = fn(x[i], y[i]);
              else if (da)
                for (std::size_t i = 0; i < n; ++i) r[i] = fn(x[i], y[0]);
              else if (db)
                for (std::size_t i = 0; i < n; ++i) r[i] = fn(x[0], y[i]);
              else
                for (std::size_t i = 0; i < n; ++i) r[i] = fn(x[0], y[0]);
            },
            first, last);
      });
  return out;
}

/// Sums g over the dims that broadcasting added or stretched, giving a tensor of `shape`.
template <typename T>
xt::xarray<T> unbroadcast(xt::xarray<T> g, const Shape& shape);

/// @cond
extern template xt::xarray<float> unbroadcast<float>(xt::xarray<float>, const Shape&);
extern template xt::xarray<double> unbroadcast<double>(xt::xarray<double>, const Shape&);
/// @endcond

}  // namespace tapegrad
