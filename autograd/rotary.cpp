#include "tapegrad/autograd/rotary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "tapegrad/autograd/elementwise_kernels.hpp"
#include "tapegrad/autograd/instantiate.hpp"
#include "tapegrad/autograd/parallel.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad {

template <typename T>
std::pair<xt::xarray<T>, xt::xarray<T>> rotary_tables(std::size_t head_dim, std::size_t positions, double base) {
  if (head_dim == 0 || head_dim % 2 != 0) {
    throw std::invalid_argument(fmt::format(
        "rotary_tables: head_dim must be even and > 0 (element j pairs with j + head_dim / 2), got {}", head_dim));
  }
  if (!(base > 0)) throw std::invalid_argument(fmt::format("rotary_tables: base must be > 0, got {}", base));
  const std::size_t h = head_dim / 2;
  xt::xarray<T> cos = xt::xarray<T>::from_shape({positions, h}), sin = xt::xarray<T>::from_shape({positions, h});
  for (std::size_t i = 0; i < h; ++i) {
    const double inv_freq = 1.0 / std::pow(base, static_cast<double>(2 * i) / static_cast<double>(head_dim));
    for (std::size_t p = 0; p < positions; ++p) {
      const double angle = static_cast<double>(p) * inv_freq;
      cos.data()[p * h + i] = static_cast<T>(std::cos(angle));
      sin.data()[p * h + i] = static_cast<T>(std::sin(angle));
    }
  }
  return {std::move(cos), std::move(sin)};
}

namespace {

// Rotates rows [begin, end) of the [rows, 2h] array in by the angles of their positions: forward
// (Sign = +1) y[j] = x[j] c - x[j + h] s, y[j + h] = x[j + h] c + x[j] s; backward (Sign = -1) the
// inverse rotation, which is the transpose: the angle negated.
template <typename T, int Sign>
void rotate_rows(std::size_t begin, std::size_t end, std::size_t length, std::size_t offset, std::size_t h,
                 const T* pin, const T* pc, const T* ps, T* pout) {
  for (std::size_t r = begin; r < end; ++r) {
    const std::size_t pos = offset + r % length;
    const T* __restrict c = pc + pos * h;
    const T* __restrict s = ps + pos * h;
    const T* __restrict a = pin + r * 2 * h;  // first half
    const T* __restrict b = a + h;            // second half
    T* __restrict ya = pout + r * 2 * h;
    T* __restrict yb = ya + h;
    for (std::size_t j = 0; j < h; ++j) {
      if (Sign > 0) {
        ya[j] = a[j] * c[j] - b[j] * s[j];
        yb[j] = b[j] * c[j] + a[j] * s[j];
      } else {
        ya[j] = a[j] * c[j] + b[j] * s[j];
        yb[j] = b[j] * c[j] - a[j] * s[j];
      }
    }
  }
}

}  // namespace

template <typename T>
Tensor<T> rotary_embedding(const Tensor<T>& x, const Tensor<T>& cos, const Tensor<T>& sin, std::size_t offset) {
  const Shape& xs = x.shape();
  if (xs.size() != 4) {
    throw ShapeError(
        fmt::format("rotary_embedding: x must be [batch, heads, length, head_dim], got {}", format_shape(xs)));
  }
  const std::size_t length = xs[2], head_dim = xs[3];
  if (head_dim % 2 != 0) {
    throw ShapeError(
        fmt::format("rotary_embedding: head_dim must be even (element j pairs with j + head_dim / 2), got {} in x {}",
                    head_dim, format_shape(xs)));
  }
  const std::size_t h = head_dim / 2;
  if (cos.shape().size() != 2 || cos.shape()[1] != h || sin.shape() != cos.shape()) {
    throw ShapeError(
        fmt::format("rotary_embedding: cos and sin must both be [positions, head_dim / 2 = {}], got cos {} and sin {}",
                    h, format_shape(cos.shape()), format_shape(sin.shape())));
  }
  const std::size_t positions = cos.shape()[0];
  if (length > 0 && offset + length > positions) {
    throw ShapeError(
        fmt::format("rotary_embedding: positions {} to {} (offset {} + length {}) are beyond the tables' {} positions",
                    offset, offset + length - 1, offset, length, positions));
  }
  if (cos.requires_grad() || sin.requires_grad()) {
    throw std::invalid_argument("rotary_embedding: the cos and sin tables are constants and must not require grad");
  }

  const std::size_t rows = length == 0 ? 0 : x.numel() / head_dim;
  const std::size_t grain = std::max<std::size_t>(1, detail::kElementwiseGrain / std::max<std::size_t>(head_dim, 1));
  xt::xarray<T> y = xt::xarray<T>::from_shape(xs);
  const T* px = x.data().data();
  const T* pc = cos.data().data();
  const T* ps = sin.data().data();
  detail::parallel_for(rows, grain, [&](std::size_t begin, std::size_t end) {
    rotate_rows<T, 1>(begin, end, length, offset, h, px, pc, ps, y.data());
  });
  Tensor<T> out(std::move(y));
  if (!should_record(x)) return out;
  // The backward keeps only the shared tables: a rotation's inverse needs no input values.
  record(out, "rotary_embedding", {x},
         [c = cos.saved(), s = sin.saved(), rows, length, offset, h, grain](const xt::xarray<T>& g, GradInputs<T>& in) {
           xt::xarray<T> dx = xt::xarray<T>::from_shape(g.shape());
           detail::parallel_for(rows, grain, [&](std::size_t begin, std::size_t end) {
             rotate_rows<T, -1>(begin, end, length, offset, h, g.data(), c->data(), s->data(), dx.data());
           });
           in.accumulate(0, std::move(dx));
         });
  return out;
}

TAPEGRAD_INSTANTIATE(rotary_tables);
TAPEGRAD_INSTANTIATE(rotary_embedding);

}  // namespace tapegrad
