/// @file
/// The one kernel behind permute, narrow/slice/select, expand and their backwards: copy the elements of
/// an index space from one strided layout into another, in plain loops over coalesced dims.
#pragma once

#include <cstddef>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/shape.hpp"

namespace tapegrad {

/// For every index i of `shape`: dst[sum_d i_d * dst_strides[d]] = src[sum_d i_d * src_strides[d]].
/// Strides are in elements; a src stride of 0 repeats (broadcasts) an element. Adjacent dims that are
/// contiguous in both layouts are merged first, so the innermost loop is as long as possible; the last
/// two dims are walked in tiles when neither layout reads them row by row (a transpose).
template <typename T>
void strided_copy(const Shape& shape, const T* src, const std::vector<std::size_t>& src_strides, T* dst,
                  const std::vector<std::size_t>& dst_strides);

/// A new contiguous array of `shape` read from src through src_strides.
template <typename T>
xt::xarray<T> gather_strided(const Shape& shape, const T* src, const std::vector<std::size_t>& src_strides);

/// a copied to the shape it broadcasts to (NumPy rules; the caller has checked that it does).
template <typename T>
xt::xarray<T> broadcast_copy(const xt::xarray<T>& a, const Shape& shape);

}  // namespace tapegrad
