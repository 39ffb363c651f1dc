/// @file
/// Picking elements by integer positions: gather and index_select, whose backward scatter-adds, so a
/// position picked several times receives the sum of its gradients; topk and sort, which also return
/// the positions they picked; one_hot, which turns positions into rows of 0 and 1; and Python's
/// x[0, 1:3] as LibTorch writes it, index and index_put.
///
/// The positions are an IndexArray. As in torch, a position must lie in [0, size) of the dim it
/// indexes: a negative or too large one throws ShapeError naming the value, where it sits in index,
/// the dim and its size.
#pragma once

#include <cstdint>
#include <vector>

#include "tapegrad/autograd/strided_view.hpp"
#include "tapegrad/autograd/tensor.hpp"
#include "tapegrad/autograd/tensor_index.hpp"

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

/// torch.topk: the k largest (smallest when !largest) elements along dim, in order, with their
/// positions; k in [0, size of dim]. NaN counts as larger than every number, as in torch. Ties are
/// ordered by position (the lower first), i.e. as a stable sort: torch 1.13 leaves the order of ties
/// unspecified (it gives [6, 0, 2] for the 3 smallest of [1, 3, 1, 3, 2, nan, 1], this gives
/// [0, 2, 6]), so a tie split by k may pick another of the tied positions than torch. `sorted` is
/// accepted for torch's signature; the result is always sorted (torch leaves the order unspecified
/// when it is false). A 0-d x takes k = 1 only (torch 1.13 also returns the element for k = 0).
template <typename T>
ValuesIndices<T> topk(const Tensor<T>& x, std::int64_t k, std::int64_t dim = -1, bool largest = true,
                      bool sorted = true);

/// torch.sort: the elements along dim in ascending (descending) order with their former positions.
/// The sort is stable (tied elements keep their order), as torch's stable=True; torch 1.13's default
/// stable=False gives the same order on CPU in every case we checked, but does not promise it. NaN
/// sorts as the largest value (last ascending, first descending), as in torch.
template <typename T>
ValuesIndices<T> sort(const Tensor<T>& x, std::int64_t dim = -1, bool descending = false);

/// torch.nn.functional.one_hot: indices' shape plus a last dim of num_classes, 1 at each index and 0
/// elsewhere; num_classes = -1 means max(indices) + 1 (an empty indices then throws, as in torch). No
/// gradient. Unlike torch's int64 result it is a Tensor<T> (float unless asked: one_hot<double>(...)),
/// because every consumer here (a loss target, a mask to multiply, a matmul) takes Tensor<T>; an
/// IndexArray would have to be converted first. Throws ShapeError for a negative index or one >=
/// num_classes (naming it and its position), or num_classes < -1.
template <typename T = float>
Tensor<T> one_hot(const IndexArray& indices, std::int64_t num_classes = -1);

/// Python's x[i, a:b, ..., None] as LibTorch's x.index({i, Slice(a, b), Ellipsis, None}) (names in
/// tapegrad::indexing): an integer selects one position and removes its dim (negative counts from the
/// end), a Slice keeps the dim, None inserts a dim of size 1 and one Ellipsis stands for the dims the
/// others leave; dims after the last entry are taken whole. The result is a copy (torch's is a view of
/// x); the gradient goes back to the positions read. Throws ShapeError for more entries than dims, an
/// integer out of range (naming it, the dim and its size), a step below 1 or a second Ellipsis.
template <typename T>
Tensor<T> index(const Tensor<T>& x, const std::vector<indexing::TensorIndex>& indices);

/// torch.index_put with LibTorch's index list: x with the part that index(x, indices) reads replaced
/// by values, which broadcast to that part's shape without enlarging it, after dropping leading dims
/// of size 1 beyond its rank as Python's `x[...] = values` does (ShapeError otherwise, naming both
/// shapes). The gradient goes to x except where the part was replaced, and to values summed over
/// the broadcast. Tensor::index_put_ is the in-place form.
///@{
template <typename T>
Tensor<T> index_put(const Tensor<T>& x, const std::vector<indexing::TensorIndex>& indices, const Tensor<T>& values);
template <typename T>
Tensor<T> index_put(const Tensor<T>& x, const std::vector<indexing::TensorIndex>& indices, detail::scalar_t<T> value);
///@}

namespace detail {
/// Where index(x, indices) reads in a contiguous buffer of `shape`: the window it copies (None dims
/// have stride 0). Throws ShapeError as index() does, naming `op`.
StridedView index_view(const char* op, const Shape& shape, const std::vector<indexing::TensorIndex>& indices);
/// Writes values, broadcast to v's shape as index_put's are, into dst through v (index_put's forward).
/// Throws ShapeError naming `op` and both shapes when values does not fit.
template <typename T>
void put_view(const char* op, xt::xarray<T>& dst, const StridedView& v, const xt::xarray<T>& values);

/// The backward of picking `picks` positions along a dim (topk, sort, max and min along a dim): g, laid
/// out [outer, picks, inner], written into zeros of in_shape ([outer, split.size, inner]) at the
/// positions, laid out like g. The positions of one slice are distinct, so each lands on its own element.
template <typename T>
xt::xarray<T> scatter_picked(const xt::xarray<T>& g, const std::int64_t* positions, const Shape& in_shape,
                             AroundDim split, std::size_t picks);
}  // namespace detail

}  // namespace tapegrad
