/// @file
/// Broadcasting kernels for op implementations: apply a binary function over two broadcast operands,
/// and unbroadcast, the one helper that reduces a gradient back to an operand's shape.
#pragma once

#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/shape.hpp"

namespace tapegrad {

/// Strides of `shape` (right-aligned against a tensor of rank `rank`) with 0 on broadcast dims.
std::vector<std::size_t> broadcast_strides(const Shape& shape, std::size_t rank);

/// Calls body(out_offset, a_offset, b_offset, count, a_step, b_step) for each run of `count` elements
/// along the last dim of out_shape; a_step and b_step are 0 (broadcast) or 1.
template <typename Body>
void for_each_broadcast_run(const Shape& out_shape, const std::vector<std::size_t>& a_strides,
                            const std::vector<std::size_t>& b_strides, Body body) {
  const std::size_t rank = out_shape.size();
  if (rank == 0) {
    body(0, 0, 0, 1, 0, 0);
    return;
  }
  const std::size_t inner = out_shape[rank - 1];
  const std::size_t outer = numel(out_shape) / (inner == 0 ? 1 : inner);
  if (inner == 0 || numel(out_shape) == 0) return;
  std::vector<std::size_t> index(rank, 0);
  std::size_t a_off = 0, b_off = 0;
  for (std::size_t run = 0; run < outer; ++run) {
    body(run * inner, a_off, b_off, inner, a_strides[rank - 1], b_strides[rank - 1]);
    for (std::size_t d = rank - 1; d-- > 0;) {  // odometer over the outer dims
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
template <typename T, typename F>
xt::xarray<T> broadcast_apply(const char* op, const xt::xarray<T>& a, const xt::xarray<T>& b, F f) {
  const Shape sa = shape_of(a), sb = shape_of(b);
  if (sa == sb) {
    xt::xarray<T> out = xt::xarray<T>::from_shape(sa);
    const T* pa = a.data();
    const T* pb = b.data();
    T* po = out.data();
    const std::size_t n = out.size();
    for (std::size_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    return out;
  }
  const Shape so = broadcast_shapes(op, sa, sb);
  xt::xarray<T> out = xt::xarray<T>::from_shape(so);
  const T* pa = a.data();
  const T* pb = b.data();
  T* po = out.data();
  for_each_broadcast_run(
      so, broadcast_strides(sa, so.size()), broadcast_strides(sb, so.size()),
      [&](std::size_t o, std::size_t ia, std::size_t ib, std::size_t n, std::size_t da, std::size_t db) {
        for (std::size_t i = 0; i < n; ++i) po[o + i] = f(pa[ia + i * da], pb[ib + i * db]);
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
