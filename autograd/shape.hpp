/// @file
/// Shapes, dimension arithmetic and the exceptions that name the op and the shapes involved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

namespace tapegrad {

/// The sizes of a tensor's dims, outermost first ([] for a 0-d tensor).
using Shape = std::vector<std::size_t>;

/// Thrown for any bad shape, dim or argument; derives from std::invalid_argument so callers can catch
/// either. The message always names the op and the values involved.
class ShapeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// "[2, 3]" (and "[]" for a scalar).
std::string format_shape(const Shape& shape);
/// Prints a shape as format_shape writes it, `std::cout << x.shape()` giving "[2, 3]" (torch prints
/// torch.Size([2, 3]), LibTorch's x.sizes() [2, 3]). Shape is a std::vector, so the operator is
/// found by `using namespace tapegrad;` or as tapegrad::operator<<, not by argument-dependent lookup.
std::ostream& operator<<(std::ostream& os, const Shape& shape);
/// The shape as Python's repr() writes a tuple: "(8,)", "(4, 5)", "()"; for torch-style printing.
std::string python_tuple(const Shape& shape);

/// "[1, 2]": the multi-index of row-major position `flat` in `shape`, for error messages that say where
/// a bad value sits.
std::string format_position(std::size_t flat, const Shape& shape);

/// A shape seen as [outer, size, inner] around one dim, as the kernels that work along a dim walk it.
struct AroundDim {
  std::size_t outer = 1;  ///< the product of the dims before the dim
  std::size_t size = 1;   ///< the dim's size
  std::size_t inner = 1;  ///< the product of the dims after it
};
/// `shape` as [outer, size, inner] around dim d (d < shape.size()); a 0-d shape is one element, [1, 1, 1].
AroundDim around_dim(const Shape& shape, std::size_t d);

/// The number of elements of a shape (1 for []); throws ShapeError when it overflows std::size_t.
std::size_t numel(const Shape& shape);

/// The shape of anything with a shape() range (an xt::xarray of any element type, a Tensor).
template <typename A>
Shape shape_of(const A& a) {
  const auto& s = a.shape();
  return Shape(s.begin(), s.end());
}

/// Row-major strides in elements.
std::vector<std::size_t> contiguous_strides(const Shape& shape);

/// Maps a possibly negative dim into [0, rank); throws ShapeError naming op, dim and rank.
std::size_t normalize_dim(const char* op, std::int64_t dim, std::size_t rank);

/// The shape two operands broadcast to under NumPy/PyTorch rules; throws ShapeError naming op and shapes.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);

}  // namespace tapegrad
