/// @file
/// The loops an elementwise op is made of, for writing ops of your own (see autograd/tape.hpp and
/// docs/design.md, "Writing an op"): map applies a function to every element, zip to the elements of
/// two arrays of one shape, each in one pass over contiguous memory.
///
/// For two operands that may broadcast use broadcast_apply, and to give a gradient back to a broadcast
/// operand unbroadcast (both in autograd/broadcast.hpp).
///
/// Large arrays are split over tapegrad's worker threads (autograd/parallel.hpp), so f must be a pure
/// function of its arguments that does not throw; each element is computed alone, so the result does
/// not depend on the thread count.
#pragma once

#include <algorithm>
#include <cstddef>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/parallel.hpp"
#include "tapegrad/autograd/shape.hpp"

namespace tapegrad {

namespace detail {
/// Elements per thread below which an elementwise loop stays on one thread: waking a worker costs
/// about as much as a pass over this many floats.
constexpr std::size_t kElementwiseGrain = std::size_t{1} << 15;
}  // namespace detail

/// out[i] = f(x[i]): a new array of x's shape (`map(x.data(), [](T v) { return std::exp(v); })`).
template <typename T, typename F>
xt::xarray<T> map(const xt::xarray<T>& x, F f) {
  xt::xarray<T> out = xt::xarray<T>::from_shape(x.shape());
  const T* px = x.data();
  T* po = out.data();
  detail::parallel_for(x.size(), detail::kElementwiseGrain, [&](std::size_t begin, std::size_t end) {
    const T* __restrict in = px;
    T* __restrict o = po;
    const F fn = f;
    for (std::size_t i = begin; i < end; ++i) o[i] = fn(in[i]);
  });
  return out;
}

/// out[i] = f(x[i], y[i]) for x and y of one shape (`zip(g, *y, [](T gv, T yv) { return gv * yv; })`);
/// throws ShapeError naming both shapes when they differ (use broadcast_apply to broadcast).
template <typename T, typename F>
xt::xarray<T> zip(const xt::xarray<T>& x, const xt::xarray<T>& y, F f) {
  if (x.dimension() != y.dimension() || !std::equal(x.shape().begin(), x.shape().end(), y.shape().begin()))
    throw ShapeError("zip: shapes " + format_shape(shape_of(x)) + " and " + format_shape(shape_of(y)) +
                     " differ (use broadcast_apply to broadcast)");
  xt::xarray<T> out = xt::xarray<T>::from_shape(x.shape());
  const T* px = x.data();
  const T* py = y.data();
  T* po = out.data();
  detail::parallel_for(x.size(), detail::kElementwiseGrain, [&](std::size_t begin, std::size_t end) {
    const T* __restrict a = px;
    const T* __restrict b = py;
    T* __restrict o = po;
    const F fn = f;
    for (std::size_t i = begin; i < end; ++i) o[i] = fn(a[i], b[i]);
  });
  return out;
}

}  // namespace tapegrad
