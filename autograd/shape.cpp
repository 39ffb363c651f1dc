#include "tapegrad/autograd/shape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>

namespace tapegrad {

std::string format_shape(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::ostream& operator<<(std::ostream& os, const Shape& shape) { return os << format_shape(shape); }

std::string python_tuple(const Shape& shape) {
  return fmt::format("({}{})", fmt::join(shape, ", "), shape.size() == 1 ? "," : "");
}

AroundDim around_dim(const Shape& shape, std::size_t d) {
  AroundDim a;
  if (shape.empty()) return a;
  for (std::size_t k = 0; k < d; ++k) a.outer *= shape[k];
  a.size = shape[d];
  for (std::size_t k = d + 1; k < shape.size(); ++k) a.inner *= shape[k];
  return a;
}

std::string format_position(std::size_t flat, const Shape& shape) {
  Shape index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return format_shape(index);
}

std::size_t numel(const Shape& shape) {
  std::size_t n = 1;
  for (std::size_t s : shape) {
    if (__builtin_mul_overflow(n, s, &n)) {
      throw ShapeError(fmt::format("the shape {} has more elements than a std::size_t counts", format_shape(shape)));
    }
  }
  return n;
}

std::vector<std::size_t> contiguous_strides(const Shape& shape) {
  std::vector<std::size_t> strides(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

std::size_t normalize_dim(const char* op, std::int64_t dim, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (dim < -r || dim >= r || rank == 0) {
    throw ShapeError(fmt::format("{}: dim {} is out of range for a tensor of rank {} (expected {} to {})", op, dim,
                                 rank, rank == 0 ? 0 : -r, rank == 0 ? 0 : r - 1));
  }
  return static_cast<std::size_t>(dim < 0 ? dim + r : dim);
}

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::size_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::size_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw ShapeError(fmt::format("{}: shapes {} and {} cannot be broadcast (dim {}: {} vs {})", op, format_shape(a),
                                   format_shape(b), i, da, db));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace tapegrad
