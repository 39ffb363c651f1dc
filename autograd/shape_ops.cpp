#include "tapegrad/autograd/shape_ops.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "tapegrad/autograd/broadcast.hpp"
#include "tapegrad/autograd/instantiate.hpp"
#include "tapegrad/autograd/strided_copy.hpp"
#include "tapegrad/autograd/strided_view.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad {

namespace {

// The same elements in the same order under a new shape (of equal numel, checked by the caller).
template <typename T>
Tensor<T> with_shape(const Tensor<T>& x, const char* op, const Shape& shape) {
  xt::xarray<T> value = xt::xarray<T>::from_shape(shape);
  std::copy(x.data().data(), x.data().data() + x.numel(), value.data());
  Tensor<T> out(std::move(value));
  if (should_record(x))
    record(out, op, {x}, [in_shape = x.shape()](const xt::xarray<T>& g, GradInputs<T>& in) {
      xt::xarray<T> dx = xt::xarray<T>::from_shape(in_shape);
      std::copy(g.data(), g.data() + g.size(), dx.data());
      in.accumulate(0, std::move(dx));
    });
  return out;
}

// A dim for inserting a new axis into a tensor of rank `rank`: [-rank-1, rank], like torch.unsqueeze.
std::size_t normalize_insert_dim(const char* op, std::int64_t dim, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (dim < -r - 1 || dim > r) {
    throw ShapeError(
        fmt::format("{}: dim {} is out of range for inserting into a tensor of rank {} (expected {} to {})", op, dim,
                    rank, -r - 1, r));
  }
  return static_cast<std::size_t>(dim < 0 ? dim + r + 1 : dim);
}

// A 0-d tensor accepts dim 0 and -1 as if it had one dim (as in torch).
std::size_t normalize_dim_or_scalar(const char* op, std::int64_t dim, std::size_t rank) {
  return normalize_dim(op, dim, std::max<std::size_t>(rank, 1));
}

// cat's and stack's op: input i contributes rows[i] elements per outer index, one after another, and
// its gradient is its block of rows of g.
template <typename T>
Tensor<T> join_rows(const char* op, const std::vector<Tensor<T>>& tensors, std::vector<std::size_t> rows,
                    std::vector<Shape> shapes, std::size_t outer, const Shape& out_shape) {
  std::size_t total = 0;
  for (std::size_t r : rows) total += r;
  xt::xarray<T> joined = xt::xarray<T>::from_shape(out_shape);
  std::size_t column = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const T* pi = tensors[i].data().data();
    for (std::size_t o = 0; o < outer; ++o)
      std::copy(pi + o * rows[i], pi + (o + 1) * rows[i], joined.data() + o * total + column);
    column += rows[i];
  }
  Tensor<T> out(std::move(joined));
  if (should_record(tensors))
    record(
        out, op, tensors,
        [rows = std::move(rows), shapes = std::move(shapes), outer, total](const xt::xarray<T>& g, GradInputs<T>& in) {
          std::size_t column = 0;
          for (std::size_t i = 0; i < rows.size(); ++i) {
            if (in.needs(i)) {
              xt::xarray<T> dx = xt::xarray<T>::from_shape(shapes[i]);
              for (std::size_t o = 0; o < outer; ++o)
                std::copy(g.data() + o * total + column, g.data() + o * total + column + rows[i],
                          dx.data() + o * rows[i]);
              in.accumulate(i, std::move(dx));
            }
            column += rows[i];
          }
        });
  return out;
}

template <typename T>
Tensor<T> permute_as(const Tensor<T>& x, const char* op, const std::vector<std::size_t>& perm) {
  const StridedView in = whole(x.shape());
  StridedView v;
  for (std::size_t d : perm) {
    v.shape.push_back(in.shape[d]);
    v.strides.push_back(in.strides[d]);
  }
  return take_view(x, op, v);
}

}  // namespace

template <typename T>
Tensor<T> permute(const Tensor<T>& x, const std::vector<std::int64_t>& dims) {
  const std::size_t rank = x.dim();
  if (dims.size() != rank) {
    throw ShapeError(fmt::format("permute: got {} dims [{}] for a tensor of shape {} (rank {})", dims.size(),
                                 fmt::join(dims, ", "), format_shape(x.shape()), rank));
  }
  std::vector<std::size_t> perm(rank);
  std::vector<bool> used(rank, false);
  for (std::size_t i = 0; i < rank; ++i) {
    perm[i] = normalize_dim("permute", dims[i], rank);
    if (used[perm[i]])
      throw ShapeError(fmt::format("permute: dim {} appears more than once in [{}]", perm[i], fmt::join(dims, ", ")));
    used[perm[i]] = true;
  }
  return permute_as(x, "permute", perm);
}

template <typename T>
Tensor<T> clone(const Tensor<T>& x) {
  return with_shape(x, "clone", x.shape());
}

template <typename T>
Tensor<T> transpose(const Tensor<T>& x, std::int64_t dim0, std::int64_t dim1) {
  const std::size_t rank = x.dim();
  const std::size_t a = normalize_dim_or_scalar("transpose", dim0, rank);
  const std::size_t b = normalize_dim_or_scalar("transpose", dim1, rank);
  std::vector<std::size_t> perm(rank);
  for (std::size_t i = 0; i < rank; ++i) perm[i] = i;
  if (rank > 0) std::swap(perm[a], perm[b]);
  return permute_as(x, "transpose", perm);
}

template <typename T>
Tensor<T> reshape(const Tensor<T>& x, const std::vector<std::int64_t>& shape) {
  const auto describe = [&] { return fmt::format("[{}]", fmt::join(shape, ", ")); };
  std::size_t known = 1;
  std::size_t inferred = shape.size();  // position of the -1, if any
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred != shape.size())
        throw ShapeError(fmt::format("reshape: only one dim can be -1, got shape {}", describe()));
      inferred = i;
    } else if (shape[i] < 0) {
      throw ShapeError(fmt::format("reshape: invalid size {} in shape {}", shape[i], describe()));
    } else {
      known *= static_cast<std::size_t>(shape[i]);
    }
  }
  const std::size_t n = x.numel();
  Shape out(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) out[i] = i == inferred ? 0 : static_cast<std::size_t>(shape[i]);
  if (inferred != shape.size()) {
    if (known == 0)
      throw ShapeError(fmt::format("reshape: cannot infer the -1 in shape {} for an input of shape {} ({} elements)",
                                   describe(), format_shape(x.shape()), n));
    out[inferred] = n / known;
    known *= out[inferred];
  }
  if (known != n) {
    throw ShapeError(fmt::format("reshape: shape {} is invalid for an input of shape {} ({} elements)", describe(),
                                 format_shape(x.shape()), n));
  }
  return with_shape(x, "reshape", out);
}

template <typename T>
Tensor<T> flatten(const Tensor<T>& x, std::int64_t start_dim, std::int64_t end_dim) {
  const std::size_t rank = x.dim();
  const std::size_t start = normalize_dim_or_scalar("flatten", start_dim, rank);
  const std::size_t end = normalize_dim_or_scalar("flatten", end_dim, rank);
  if (start > end) {
    throw ShapeError(fmt::format("flatten: start_dim {} comes after end_dim {} for a tensor of shape {}", start_dim,
                                 end_dim, format_shape(x.shape())));
  }
  if (rank == 0) return with_shape(x, "flatten", Shape{1});
  const Shape& s = x.shape();
  Shape out(s.begin(), s.begin() + start);
  std::size_t merged = 1;
  for (std::size_t d = start; d <= end; ++d) merged *= s[d];
  out.push_back(merged);
  out.insert(out.end(), s.begin() + end + 1, s.end());
  return with_shape(x, "flatten", out);
}

template <typename T>
Tensor<T> squeeze(const Tensor<T>& x) {
  Shape out;
  for (std::size_t s : x.shape())
    if (s != 1) out.push_back(s);
  return with_shape(x, "squeeze", out);
}

template <typename T>
Tensor<T> squeeze(const Tensor<T>& x, std::int64_t dim) {
  const std::size_t d = normalize_dim_or_scalar("squeeze", dim, x.dim());
  Shape out = x.shape();
  if (!out.empty() && out[d] == 1) out.erase(out.begin() + d);
  return with_shape(x, "squeeze", out);
}

template <typename T>
Tensor<T> unsqueeze(const Tensor<T>& x, std::int64_t dim) {
  const std::size_t d = normalize_insert_dim("unsqueeze", dim, x.dim());
  Shape out = x.shape();
  out.insert(out.begin() + d, 1);
  return with_shape(x, "unsqueeze", out);
}

template <typename T>
Tensor<T> narrow(const Tensor<T>& x, std::int64_t dim, std::int64_t start, std::int64_t length) {
  const std::size_t d = normalize_dim("narrow", dim, x.dim());
  const auto size = static_cast<std::int64_t>(x.shape()[d]);
  if (start < -size || start > size) {
    throw ShapeError(fmt::format("narrow: start {} is out of range for dim {} of size {} (shape {})", start, dim, size,
                                 format_shape(x.shape())));
  }
  const std::int64_t begin = start < 0 ? start + size : start;
  if (length < 0 || begin + length > size) {
    throw ShapeError(fmt::format("narrow: start {} + length {} does not fit in dim {} of size {} (shape {})", start,
                                 length, dim, size, format_shape(x.shape())));
  }
  StridedView v = whole(x.shape());
  v.offset = static_cast<std::size_t>(begin) * v.strides[d];
  v.shape[d] = static_cast<std::size_t>(length);
  return take_view(x, "narrow", v);
}

template <typename T>
Tensor<T> slice(const Tensor<T>& x, std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step) {
  const std::size_t d = normalize_dim("slice", dim, x.dim());
  if (step <= 0) throw ShapeError(fmt::format("slice: step must be positive, got {}", step));
  const auto size = static_cast<std::int64_t>(x.shape()[d]);
  // Python's rules: negative bounds count from the end, then both are clamped into [0, size].
  const auto clamp = [size](std::int64_t i) { return std::clamp<std::int64_t>(i < 0 ? i + size : i, 0, size); };
  start = clamp(start);
  end = clamp(end);
  const std::int64_t count = end > start ? (end - start + step - 1) / step : 0;
  StridedView v = whole(x.shape());
  v.offset = static_cast<std::size_t>(start) * v.strides[d];
  v.shape[d] = static_cast<std::size_t>(count);
  v.strides[d] *= static_cast<std::size_t>(step);
  return take_view(x, "slice", v);
}

template <typename T>
Tensor<T> select(const Tensor<T>& x, std::int64_t dim, std::int64_t index) {
  const std::size_t d = normalize_dim("select", dim, x.dim());
  const auto size = static_cast<std::int64_t>(x.shape()[d]);
  if (index < -size || index >= size) {
    throw ShapeError(fmt::format("select: index {} is out of range for dim {} of size {} (shape {})", index, dim, size,
                                 format_shape(x.shape())));
  }
  if (index < 0) index += size;
  StridedView v = whole(x.shape());
  v.offset = static_cast<std::size_t>(index) * v.strides[d];
  v.shape.erase(v.shape.begin() + d);
  v.strides.erase(v.strides.begin() + d);
  return take_view(x, "select", v);
}

template <typename T>
Tensor<T> cat(const std::vector<Tensor<T>>& tensors, std::int64_t dim) {
  if (tensors.empty()) throw ShapeError("cat: expected a non-empty list of tensors");
  const Shape& first = tensors[0].shape();
  const std::size_t d = normalize_dim("cat", dim, first.size());
  Shape out_shape = first;
  out_shape[d] = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Shape& s = tensors[i].shape();
    bool fits = s.size() == first.size();
    for (std::size_t k = 0; fits && k < s.size(); ++k) fits = k == d || s[k] == first[k];
    if (!fits) {
      throw ShapeError(
          fmt::format("cat: tensor {} has shape {} but tensor 0 has shape {}; all need rank {} and equal "
                      "sizes except in dim {}",
                      i, format_shape(s), format_shape(first), first.size(), d));
    }
    out_shape[d] += s[d];
  }
  std::size_t outer = 1, inner = 1;
  for (std::size_t k = 0; k < d; ++k) outer *= first[k];
  for (std::size_t k = d + 1; k < first.size(); ++k) inner *= first[k];
  std::vector<std::size_t> rows;
  std::vector<Shape> shapes;
  for (const auto& t : tensors) {
    rows.push_back(t.shape()[d] * inner);
    shapes.push_back(t.shape());
  }
  return join_rows("cat", tensors, std::move(rows), std::move(shapes), outer, out_shape);
}

template <typename T>
Tensor<T> stack(const std::vector<Tensor<T>>& tensors, std::int64_t dim) {
  if (tensors.empty()) throw ShapeError("stack: expected a non-empty list of tensors");
  const Shape& first = tensors[0].shape();
  const std::size_t d = normalize_insert_dim("stack", dim, first.size());
  for (std::size_t i = 1; i < tensors.size(); ++i) {
    if (tensors[i].shape() != first) {
      throw ShapeError(fmt::format("stack: tensor {} has shape {} but tensor 0 has shape {}; all must be equal", i,
                                   format_shape(tensors[i].shape()), format_shape(first)));
    }
  }
  Shape out_shape = first;
  out_shape.insert(out_shape.begin() + d, tensors.size());
  std::size_t outer = 1;
  for (std::size_t k = 0; k < d; ++k) outer *= first[k];
  const std::size_t block = outer == 0 ? 0 : numel(first) / outer;
  std::vector<std::size_t> rows(tensors.size(), block);
  std::vector<Shape> shapes(tensors.size(), first);
  return join_rows("stack", tensors, std::move(rows), std::move(shapes), outer, out_shape);
}

template <typename T>
std::vector<Tensor<T>> split(const Tensor<T>& x, std::int64_t split_size, std::int64_t dim) {
  const std::size_t d = normalize_dim("split", dim, x.dim());
  const auto size = static_cast<std::int64_t>(x.shape()[d]);
  if (split_size < 0) throw ShapeError(fmt::format("split: split_size must be non-negative, got {}", split_size));
  if (split_size == 0 && size != 0) {
    throw ShapeError(
        fmt::format("split: split_size 0 is only allowed for a dim of size 0, but dim {} has size {}", dim, size));
  }
  std::vector<Tensor<T>> pieces;
  if (size == 0) {
    pieces.push_back(narrow(x, static_cast<std::int64_t>(d), 0, 0));
    return pieces;
  }
  for (std::int64_t start = 0; start < size; start += split_size)
    pieces.push_back(narrow(x, static_cast<std::int64_t>(d), start, std::min(split_size, size - start)));
  return pieces;
}

template <typename T>
std::vector<Tensor<T>> split(const Tensor<T>& x, const std::vector<std::int64_t>& sizes, std::int64_t dim) {
  const std::size_t d = normalize_dim("split", dim, x.dim());
  const auto size = static_cast<std::int64_t>(x.shape()[d]);
  std::int64_t total = 0;
  for (std::int64_t s : sizes) {
    if (s < 0)
      throw ShapeError(fmt::format("split: sizes [{}] contain the negative size {}", fmt::join(sizes, ", "), s));
    total += s;
  }
  if (total != size) {
    throw ShapeError(fmt::format("split: sizes [{}] sum to {}, but dim {} has size {} (shape {})",
                                 fmt::join(sizes, ", "), total, dim, size, format_shape(x.shape())));
  }
  std::vector<Tensor<T>> pieces;
  std::int64_t start = 0;
  for (std::int64_t s : sizes) {
    pieces.push_back(narrow(x, static_cast<std::int64_t>(d), start, s));
    start += s;
  }
  return pieces;
}

template <typename T>
std::vector<Tensor<T>> chunk(const Tensor<T>& x, std::int64_t chunks, std::int64_t dim) {
  if (chunks <= 0) throw ShapeError(fmt::format("chunk: chunks must be positive, got {}", chunks));
  const std::size_t d = normalize_dim("chunk", dim, x.dim());
  const auto size = static_cast<std::int64_t>(x.shape()[d]);
  if (size == 0) return split(x, std::vector<std::int64_t>(static_cast<std::size_t>(chunks), 0), dim);
  return split(x, (size + chunks - 1) / chunks, dim);
}

template <typename T>
Tensor<T> expand(const Tensor<T>& x, const Shape& shape) {
  const Shape& s = x.shape();
  if (shape.size() < s.size()) {
    throw ShapeError(fmt::format("expand: cannot expand shape {} to {} (the target has fewer dims)", format_shape(s),
                                 format_shape(shape)));
  }
  const std::size_t lead = shape.size() - s.size();
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != 1 && s[i] != shape[lead + i]) {
      throw ShapeError(fmt::format("expand: cannot expand shape {} to {} (dim {}: size {} is neither 1 nor {})",
                                   format_shape(s), format_shape(shape), lead + i, s[i], shape[lead + i]));
    }
  }
  numel(shape);  // refuses a shape whose element count overflows before anything is allocated
  Tensor<T> out(broadcast_copy(x.data(), shape));
  if (should_record(x))
    record(out, "expand", {x}, [in_shape = s](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(0, unbroadcast(xt::xarray<T>(g), in_shape));
    });
  return out;
}

namespace {
// Copies the box of `extent` starting at src_start in src (of src_shape) to dst_start in dst (of
// dst_shape): strided_copy from the two corners, with each array's own strides.
template <typename T>
void copy_box(const T* src, const Shape& src_shape, const Shape& src_start, T* dst, const Shape& dst_shape,
              const Shape& dst_start, const Shape& extent) {
  if (numel(extent) == 0) return;  // the corners may lie past an array's end
  const auto ss = contiguous_strides(src_shape), ds = contiguous_strides(dst_shape);
  std::size_t so = 0, dof = 0;
  for (std::size_t d = 0; d < extent.size(); ++d) {
    so += src_start[d] * ss[d];
    dof += dst_start[d] * ds[d];
  }
  strided_copy(extent, src + so, ss, dst + dof, ds);
}
}  // namespace

template <typename T>
Tensor<T> pad(const Tensor<T>& x, const std::vector<std::int64_t>& pads, detail::scalar_t<T> value) {
  const Shape& s = x.shape();
  const std::size_t rank = s.size();
  if (pads.size() % 2 != 0) {
    throw ShapeError(fmt::format("pad: the number of pads must be even (a left and a right per dim), got {}: [{}]",
                                 pads.size(), fmt::join(pads, ", ")));
  }
  if (pads.size() / 2 > rank) {
    throw ShapeError(fmt::format("pad: {} pads cover {} dims but the input of shape {} has {}", pads.size(),
                                 pads.size() / 2, format_shape(s), rank));
  }
  // Per dim: where x's kept part starts in x and in the output, and its extent.
  Shape out_shape = s, src_start(rank, 0), dst_start(rank, 0), extent = s;
  for (std::size_t j = 0; j < pads.size() / 2; ++j) {
    const std::size_t d = rank - 1 - j;
    const std::int64_t left = pads[2 * j], right = pads[2 * j + 1];
    const std::int64_t size = static_cast<std::int64_t>(s[d]) + left + right;
    if (size < 0) {
      throw ShapeError(fmt::format("pad: pads ({}, {}) make dim {} of size {} negative ({}) in shape {}", left, right,
                                   d, s[d], size, format_shape(s)));
    }
    out_shape[d] = static_cast<std::size_t>(size);
    const std::int64_t begin = std::max<std::int64_t>(0, -left);
    const std::int64_t end =
        std::min<std::int64_t>(static_cast<std::int64_t>(s[d]), static_cast<std::int64_t>(s[d]) + right);
    src_start[d] = static_cast<std::size_t>(begin);
    dst_start[d] = static_cast<std::size_t>(std::max<std::int64_t>(0, left));
    extent[d] = static_cast<std::size_t>(std::max<std::int64_t>(0, end - begin));
  }
  numel(out_shape);  // refuses a shape whose element count overflows
  xt::xarray<T> values = xt::xarray<T>::from_shape(out_shape);
  std::fill(values.begin(), values.end(), static_cast<T>(value));
  copy_box(x.data().data(), s, src_start, values.data(), out_shape, dst_start, extent);
  Tensor<T> out(std::move(values));
  if (should_record(x))
    record(out, "pad", {x}, [s, out_shape, src_start, dst_start, extent](const xt::xarray<T>& g, GradInputs<T>& in) {
      // The same box read back out of g; cropped elements of x get 0.
      xt::xarray<T> dx = xt::zeros<T>(s);
      copy_box(g.data(), out_shape, dst_start, dx.data(), s, src_start, extent);
      in.accumulate(0, std::move(dx));
    });
  return out;
}

template <typename T>
Tensor<T> repeat(const Tensor<T>& x, const std::vector<std::int64_t>& repeats) {
  const Shape& s = x.shape();
  if (repeats.size() < s.size()) {
    throw ShapeError(
        fmt::format("repeat: {} repeats [{}] for an input of shape {} with {} dims (give at least one per dim)",
                    repeats.size(), fmt::join(repeats, ", "), format_shape(s), s.size()));
  }
  const std::size_t rank = repeats.size(), lead = rank - s.size();
  // Tiling along dim d is broadcasting a [1, size] pair of dims to [repeats, size]: x as
  // [1, s0, 1, s1, ...] broadcast to [r0, s0, r1, s1, ...] is the result in row-major order.
  Shape pairs_in, pairs_out, out_shape;
  for (std::size_t d = 0; d < rank; ++d) {
    if (repeats[d] < 0) {
      throw ShapeError(fmt::format("repeat: repeats must be >= 0, got {} at position {} of [{}]", repeats[d], d,
                                   fmt::join(repeats, ", ")));
    }
    const std::size_t size = d < lead ? 1 : s[d - lead], r = static_cast<std::size_t>(repeats[d]);
    pairs_in.insert(pairs_in.end(), {1, size});
    pairs_out.insert(pairs_out.end(), {r, size});
    out_shape.push_back(r * size);
  }
  numel(pairs_out);  // refuses a shape whose element count overflows
  xt::xarray<T> values = gather_strided(pairs_out, x.data().data(), broadcast_strides(pairs_in, pairs_out.size()));
  values.reshape(out_shape);
  Tensor<T> out(std::move(values));
  if (should_record(x))
    record(out, "repeat", {x}, [s, pairs_in, pairs_out](const xt::xarray<T>& g, GradInputs<T>& in) {
      xt::xarray<T> tiles = g;
      tiles.reshape(pairs_out);
      xt::xarray<T> dx = unbroadcast(std::move(tiles), pairs_in);  // the sum over the tiles
      dx.reshape(s);
      in.accumulate(0, std::move(dx));
    });
  return out;
}

TAPEGRAD_INSTANTIATE(clone);
TAPEGRAD_INSTANTIATE(transpose);
TAPEGRAD_INSTANTIATE(permute);
TAPEGRAD_INSTANTIATE(reshape);
TAPEGRAD_INSTANTIATE(flatten);
TAPEGRAD_INSTANTIATE(unsqueeze);
TAPEGRAD_INSTANTIATE(narrow);
TAPEGRAD_INSTANTIATE(slice);
TAPEGRAD_INSTANTIATE(select);
TAPEGRAD_INSTANTIATE(chunk);
TAPEGRAD_INSTANTIATE(expand);
TAPEGRAD_INSTANTIATE(pad);
TAPEGRAD_INSTANTIATE(repeat);
#define TAPEGRAD_OVERLOADS(T)                                                             \
  template Tensor<T> cat<T>(const std::vector<Tensor<T>>&, std::int64_t);                 \
  template Tensor<T> stack<T>(const std::vector<Tensor<T>>&, std::int64_t);               \
  template Tensor<T> squeeze<T>(const Tensor<T>&);                                        \
  template Tensor<T> squeeze<T>(const Tensor<T>&, std::int64_t);                          \
  template std::vector<Tensor<T>> split<T>(const Tensor<T>&, std::int64_t, std::int64_t); \
  template std::vector<Tensor<T>> split<T>(const Tensor<T>&, const std::vector<std::int64_t>&, std::int64_t);
TAPEGRAD_OVERLOADS(float)
TAPEGRAD_OVERLOADS(double)
#undef TAPEGRAD_OVERLOADS

}  // namespace tapegrad
