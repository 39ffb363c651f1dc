/// @file
/// Picking elements by integer positions: gather and index_select, whose backward scatter-adds, so a
/// position picked several times receives the sum of its gradients.
///
/// The positions are an IndexArray. As in torch, a position must lie in [0, size) of the dim it
/// indexes: a negative or too large one throws ShapeError naming the value, where it sits in index,
/// the dim and its size.
#pragma once

#include <cstdint>

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// torch.gather: out[i][j][k] = x[index[i][j][k]][j][k] for dim 0, and likewise for any dim; the
/// result has index's shape. index has x's number of dims (a 0-d tensor counts as one dim, as in
/// torch) and, unless it is empty, is nowhere larger than x except along dim.
template <typename T>
Tensor<T> gather(const Tensor<T>& x, std::int64_t dim, const IndexArray& index);

/// torch.index_select: the slices of x at the positions of index along dim, in index's order; index
/// is 1-D (or 0-d, one position), and the result is x's shape with dim's size replaced by the number of
/// positions. A 0-d x takes exactly one position and gives a 0-d result.
template <typename T>
Tensor<T> index_select(const Tensor<T>& x, std::int64_t dim, const IndexArray& index);

}  // namespace tapegrad
