#include "tapegrad/autograd/masking.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "tapegrad/autograd/broadcast.hpp"
#include "tapegrad/autograd/instantiate.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad {

namespace {

// Calls body(out, c, a, b) with the flat offsets of every element of out_shape in its three broadcast
// operands (strides from broadcast_strides), walking runs along the last dim.
template <typename Body>
void for_each_broadcast3(const Shape& out_shape, const std::vector<std::size_t>& cs, const std::vector<std::size_t>& as,
                         const std::vector<std::size_t>& bs, Body body) {
  const std::size_t rank = out_shape.size();
  const std::size_t total = numel(out_shape);
  if (total == 0) return;
  if (rank == 0) {
    body(0, 0, 0, 0);
    return;
  }
  const std::size_t inner = out_shape[rank - 1];
  const std::size_t dc = cs[rank - 1], da = as[rank - 1], db = bs[rank - 1];
  std::vector<std::size_t> index(rank, 0);
  std::size_t c = 0, a = 0, b = 0;
  for (std::size_t o = 0; o < total; o += inner) {
    for (std::size_t i = 0; i < inner; ++i) body(o + i, c + i * dc, a + i * da, b + i * db);
    for (std::size_t d = rank - 1; d-- > 0;) {  // odometer over the outer dims
      ++index[d];
      c += cs[d];
      a += as[d];
      b += bs[d];
      if (index[d] < out_shape[d]) break;
      c -= cs[d] * index[d];
      a -= as[d] * index[d];
      b -= bs[d] * index[d];
      index[d] = 0;
    }
  }
}

// Copies x into out ([batch, rows, cols]) inside the triangle and writes 0 outside it: columns
// [0, i + diagonal] of row i for the lower one, [i + diagonal, cols) for the upper.
template <typename T>
void keep_triangle(const T* x, T* out, std::size_t batch, std::size_t rows, std::size_t cols, std::int64_t diagonal,
                   bool lower) {
  const auto c = static_cast<std::int64_t>(cols);
  // Past the matrix's edge a diagonal changes nothing more; clamped, i + diagonal cannot overflow.
  diagonal = std::clamp<std::int64_t>(diagonal, -static_cast<std::int64_t>(rows), c);
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < rows; ++i) {
      const std::int64_t edge = static_cast<std::int64_t>(i) + diagonal;  // the row's diagonal column
      const auto begin = static_cast<std::size_t>(lower ? 0 : std::clamp<std::int64_t>(edge, 0, c));
      const auto end = static_cast<std::size_t>(lower ? std::clamp<std::int64_t>(edge + 1, 0, c) : c);
      const T* xr = x + (b * rows + i) * cols;
      T* o = out + (b * rows + i) * cols;
      std::fill(o, o + begin, T(0));
      std::copy(xr + begin, xr + end, o + begin);
      std::fill(o + end, o + cols, T(0));
    }
}

template <typename T>
Tensor<T> triangle(const char* op, const Tensor<T>& x, std::int64_t diagonal, bool lower) {
  const Shape& xs = x.shape();
  if (xs.size() < 2) {
    throw ShapeError(
        fmt::format("{}: expects a tensor with at least 2 dims, got {}-D {}", op, xs.size(), format_shape(xs)));
  }
  const std::size_t rows = xs[xs.size() - 2], cols = xs.back();
  const std::size_t batch = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
  xt::xarray<T> y = xt::xarray<T>::from_shape(xs);
  keep_triangle(x.data().data(), y.data(), batch, rows, cols, diagonal, lower);
  Tensor<T> out(std::move(y));
  if (should_record(x))
    record(out, op, {x}, [xs, batch, rows, cols, diagonal, lower](const xt::xarray<T>& g, GradInputs<T>& in) {
      xt::xarray<T> dx = xt::xarray<T>::from_shape(xs);
      keep_triangle(g.data(), dx.data(), batch, rows, cols, diagonal, lower);
      in.accumulate(0, std::move(dx));
    });
  return out;
}

}  // namespace

template <typename T>
Tensor<T> masked_fill(const Tensor<T>& x, const BoolArray& mask, detail::scalar_t<T> value) {
  const Shape& xs = x.shape();
  const Shape ms = shape_of(mask);
  // Unlike out-of-place torch.masked_fill, the mask may not enlarge x: the result always has x's shape.
  bool fits = ms.size() <= xs.size();
  for (std::size_t i = 0; fits && i < ms.size(); ++i) {
    const std::size_t m = ms[ms.size() - 1 - i], s = xs[xs.size() - 1 - i];
    fits = m == s || m == 1;
  }
  if (!fits) {
    throw ShapeError(fmt::format("masked_fill: mask of shape {} cannot be broadcast to the input's shape {}",
                                 format_shape(ms), format_shape(xs)));
  }
  const auto mask_strides = broadcast_strides(ms, xs.size());
  const auto x_strides = contiguous_strides(xs);
  xt::xarray<T> y = x.data();
  const bool* pm = mask.data();
  T* py = y.data();
  for_each_broadcast_run(xs, x_strides, mask_strides,
                         [&](std::size_t o, std::size_t, std::size_t im, std::size_t n, std::size_t, std::size_t dm) {
                           for (std::size_t i = 0; i < n; ++i)
                             if (pm[im + i * dm]) py[o + i] = value;
                         });
  Tensor<T> out(std::move(y));
  if (should_record(x)) {
    auto saved_mask = std::make_shared<const BoolArray>(mask);
    record(out, "masked_fill", {x},
           [saved_mask, mask_strides, x_strides, xs](const xt::xarray<T>& g, GradInputs<T>& in) {
             xt::xarray<T> dx = g;
             const bool* pm = saved_mask->data();
             T* pd = dx.data();
             for_each_broadcast_run(
                 xs, x_strides, mask_strides,
                 [&](std::size_t o, std::size_t, std::size_t im, std::size_t n, std::size_t, std::size_t dm) {
                   for (std::size_t i = 0; i < n; ++i)
                     if (pm[im + i * dm]) pd[o + i] = T(0);
                 });
             in.accumulate(0, std::move(dx));
           });
  }
  return out;
}

template <typename T>
Tensor<T> where(const BoolArray& condition, const Tensor<T>& a, const Tensor<T>& b) {
  const Shape cs = shape_of(condition);
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  Shape so;
  try {
    so = broadcast_shapes("where", broadcast_shapes("where", cs, sa), sb);
  } catch (const ShapeError&) {  // name all three shapes, not just the pair that failed
    throw ShapeError(fmt::format("where: condition {}, input {} and other {} cannot be broadcast together",
                                 format_shape(cs), format_shape(sa), format_shape(sb)));
  }
  const auto c_strides = broadcast_strides(cs, so.size());
  const auto a_strides = broadcast_strides(sa, so.size());
  const auto b_strides = broadcast_strides(sb, so.size());
  xt::xarray<T> y = xt::xarray<T>::from_shape(so);
  const bool* pc = condition.data();
  const T* pa = a.data().data();
  const T* pb = b.data().data();
  T* py = y.data();
  for_each_broadcast3(
      so, c_strides, a_strides, b_strides,
      [&](std::size_t o, std::size_t c, std::size_t i, std::size_t j) { py[o] = pc[c] ? pa[i] : pb[j]; });
  Tensor<T> out(std::move(y));
  if (should_record(a, b)) {
    auto saved_cond = std::make_shared<const BoolArray>(condition);
    record(out, "where", {a, b}, [saved_cond, c_strides, so, sa, sb](const xt::xarray<T>& g, GradInputs<T>& in) {
      // The gradient at out's shape for the side `pick` chooses, then reduced to that side's shape.
      const bool* pc = saved_cond->data();
      const std::vector<std::size_t> none(so.size(), 0);
      auto routed = [&](bool pick) {
        xt::xarray<T> d = xt::xarray<T>::from_shape(so);
        const T* pg = g.data();
        T* pd = d.data();
        for_each_broadcast3(so, c_strides, none, none, [&](std::size_t o, std::size_t c, std::size_t, std::size_t) {
          pd[o] = pc[c] == pick ? pg[o] : T(0);
        });
        return d;
      };
      if (in.needs(0)) in.accumulate(0, unbroadcast(routed(true), sa));
      if (in.needs(1)) in.accumulate(1, unbroadcast(routed(false), sb));
    });
  }
  return out;
}

template <typename T>
Tensor<T> tril(const Tensor<T>& x, std::int64_t diagonal) {
  return triangle("tril", x, diagonal, true);
}

template <typename T>
Tensor<T> triu(const Tensor<T>& x, std::int64_t diagonal) {
  return triangle("triu", x, diagonal, false);
}

TAPEGRAD_INSTANTIATE(masked_fill);
TAPEGRAD_INSTANTIATE(where);
TAPEGRAD_INSTANTIATE(tril);
TAPEGRAD_INSTANTIATE(triu);

}  // namespace tapegrad
