/// @file
/// Ops that move or regroup elements without arithmetic: clone, transpose, permute, reshape, squeeze,
/// narrow, cat, split, stack, pad, repeat. Every result is a contiguous copy (values are always
/// row-major) made by one node on the tape: unlike torch's views (x.narrow, x.select, x[0],
/// x.transpose), writing into a result never changes its input (write into a part of a tensor with
/// Tensor::index_put_). Dims may be negative; as in torch, a 0-d tensor accepts dim 0 or -1 where an
/// op keeps the rank (transpose, flatten, squeeze).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// A copy of x that stays on the tape (torch.clone): the gradient passes through unchanged.
template <typename T>
Tensor<T> clone(const Tensor<T>& x);
/// Swaps two dims (torch.transpose).
template <typename T>
Tensor<T> transpose(const Tensor<T>& x, std::int64_t dim0, std::int64_t dim1);
/// Reorders the dims: out dim i is x's dim dims[i] (torch.permute).
template <typename T>
Tensor<T> permute(const Tensor<T>& x, const std::vector<std::int64_t>& dims);
/// One entry of `shape` may be -1 (inferred), as in torch.reshape.
template <typename T>
Tensor<T> reshape(const Tensor<T>& x, const std::vector<std::int64_t>& shape);
/// Merges dims start_dim..end_dim into one (torch.flatten).
template <typename T>
Tensor<T> flatten(const Tensor<T>& x, std::int64_t start_dim = 0, std::int64_t end_dim = -1);
/// Removes every size-1 dim, or only `dim` (a no-op when that dim is not 1, as in torch).
///@{
template <typename T>
Tensor<T> squeeze(const Tensor<T>& x);
template <typename T>
Tensor<T> squeeze(const Tensor<T>& x, std::int64_t dim);
///@}
/// dim in [-rank-1, rank], like stack's.
template <typename T>
Tensor<T> unsqueeze(const Tensor<T>& x, std::int64_t dim);
/// Elements start .. start+length-1 along dim (a negative start counts from the end).
template <typename T>
Tensor<T> narrow(const Tensor<T>& x, std::int64_t dim, std::int64_t start, std::int64_t length);
/// x[..., start:end:step, ...] along dim, with Python's clamping of start/end and negative indices.
template <typename T>
Tensor<T> slice(const Tensor<T>& x, std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step = 1);
/// x[..., index, ...]: removes dim (a negative index counts from the end).
template <typename T>
Tensor<T> select(const Tensor<T>& x, std::int64_t dim, std::int64_t index);
/// All tensors need one rank and equal sizes except along dim (torch.cat).
template <typename T>
Tensor<T> cat(const std::vector<Tensor<T>>& tensors, std::int64_t dim = 0);
/// Joins equal-shaped tensors along a new dim (torch.stack).
template <typename T>
Tensor<T> stack(const std::vector<Tensor<T>>& tensors, std::int64_t dim = 0);
/// cat and stack of a braced list, `cat({a, b}, 1)`, whose element type a std::vector parameter
/// cannot deduce.
///@{
template <typename T>
Tensor<T> cat(std::initializer_list<Tensor<T>> tensors, std::int64_t dim = 0) {
  return cat(std::vector<Tensor<T>>(tensors), dim);
}
template <typename T>
Tensor<T> stack(std::initializer_list<Tensor<T>> tensors, std::int64_t dim = 0) {
  return stack(std::vector<Tensor<T>>(tensors), dim);
}
///@}
/// Pieces of split_size along dim (the last may be smaller), as torch.split with an int. Each piece
/// is a narrow, so its gradient flows back on its own.
template <typename T>
std::vector<Tensor<T>> split(const Tensor<T>& x, std::int64_t split_size, std::int64_t dim = 0);
/// Pieces of the given sizes, which must sum to the size of dim.
template <typename T>
std::vector<Tensor<T>> split(const Tensor<T>& x, const std::vector<std::int64_t>& sizes, std::int64_t dim = 0);
/// torch.chunk: ceil(size / chunks) per piece, so fewer than `chunks` pieces may come back.
template <typename T>
std::vector<Tensor<T>> chunk(const Tensor<T>& x, std::int64_t chunks, std::int64_t dim = 0);
/// torch.broadcast_to / expand to a shape the tensor broadcasts to (a copy here); the gradient is
/// summed back over the broadcast dims. (The method x.expand also takes torch's -1 for "keep this size".)
template <typename T>
Tensor<T> expand(const Tensor<T>& x, const Shape& shape);

/// torch.nn.functional.pad in constant mode: pads = {left, right} for the last dim, then
/// {top, bottom} for the one before, and so on backwards (at most two entries per dim); new elements
/// are `value`. A negative pad crops instead, as in torch; a dim may end with size 0 but not below.
/// The gradient is g's part where x landed (0 for cropped elements). Throws ShapeError for an odd
/// number of pads, more than two per dim, or a dim cropped below 0.
template <typename T>
Tensor<T> pad(const Tensor<T>& x, const std::vector<std::int64_t>& pads, detail::scalar_t<T> value = 0);

/// Tensor.repeat: x tiled repeats[d] times along each dim; repeats may be longer than x's rank (x
/// gains leading dims of size 1 first), not shorter. The gradient sums the tiles. Throws ShapeError
/// for too few or negative repeats.
template <typename T>
Tensor<T> repeat(const Tensor<T>& x, const std::vector<std::int64_t>& repeats);

}  // namespace tapegrad
