/// @file
/// A result's elements as a strided window onto its input's contiguous buffer, and the op that copies
/// through one: permute, narrow, slice, select and index only build the window.
#pragma once

#include <cstddef>
#include <vector>

#include "tapegrad/autograd/shape.hpp"
#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// Where the elements of a result sit in its input's buffer: element i of `shape` is at
/// offset + sum_d i_d * strides[d]. A stride of 0 (with a size of 1) is a dim the input does not have.
struct StridedView {
  std::size_t offset = 0;
  Shape shape;
  std::vector<std::size_t> strides;
};

/// The whole of a contiguous buffer of `shape`, the window each op starts from.
inline StridedView whole(const Shape& shape) { return StridedView{0, shape, contiguous_strides(shape)}; }

/// The result of reading x through v, recorded as `op`, whose backward writes the gradient back
/// through v into zeros of x's shape. v must lie within x and touch no element twice.
template <typename T>
Tensor<T> take_view(const Tensor<T>& x, const char* op, const StridedView& v);

}  // namespace tapegrad
