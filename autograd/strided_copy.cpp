#include "tapegrad/autograd/strided_copy.hpp"

#include <algorithm>

#include "tapegrad/autograd/broadcast.hpp"
#include "tapegrad/autograd/elementwise_kernels.hpp"
#include "tapegrad/autograd/parallel.hpp"

namespace tapegrad {

namespace {

struct Layout {
  Shape shape;
  std::vector<std::size_t> src, dst;
};

// Drops size-1 dims and merges each dim into its left neighbour when both layouts step over it as
// one run: [2, 3, 4] read contiguously becomes [24].
Layout coalesce(const Shape& shape, const std::vector<std::size_t>& src, const std::vector<std::size_t>& dst) {
  Layout out;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!out.shape.empty() && out.src.back() == src[d] * shape[d] && out.dst.back() == dst[d] * shape[d]) {
      out.shape.back() *= shape[d];
      out.src.back() = src[d];
      out.dst.back() = dst[d];
      continue;
    }
    out.shape.push_back(shape[d]);
    out.src.push_back(src[d]);
    out.dst.push_back(dst[d]);
  }
  return out;
}

// A transpose-like 2-d copy: 16 x 16 tiles keep both sides in cache (larger tiles thrash on
// power-of-two strides), and the inner loop runs along the side that writes contiguously.
template <typename T>
void copy_tiled(std::size_t n0, std::size_t n1, const T* src, std::size_t s0, std::size_t s1, T* dst, std::size_t d0,
                std::size_t d1) {
  constexpr std::size_t tile = 16;
  if (d0 < d1) {
    std::swap(n0, n1);
    std::swap(s0, s1);
    std::swap(d0, d1);
  }
  for (std::size_t i0 = 0; i0 < n0; i0 += tile) {
    const std::size_t i1 = std::min(n0, i0 + tile);
    for (std::size_t j0 = 0; j0 < n1; j0 += tile) {
      const std::size_t j1 = std::min(n1, j0 + tile);
      for (std::size_t i = i0; i < i1; ++i)
        for (std::size_t j = j0; j < j1; ++j) dst[i * d0 + j * d1] = src[i * s0 + j * s1];
    }
  }
}

// The last one or two dims of the layout from one base offset each.
template <typename T>
void copy_inner(const Layout& l, std::size_t rank, const T* src, T* dst) {
  const std::size_t n1 = l.shape[rank - 1], s1 = l.src[rank - 1], d1 = l.dst[rank - 1];
  const auto row = [&](const T* s, T* d) {
    if (s1 == 1 && d1 == 1) {
      std::copy(s, s + n1, d);
    } else if (s1 == 0 && d1 == 1) {
      std::fill(d, d + n1, *s);
    } else {
      for (std::size_t j = 0; j < n1; ++j) d[j * d1] = s[j * s1];
    }
  };
  if (rank == 1) {
    row(src, dst);
    return;
  }
  const std::size_t n0 = l.shape[rank - 2], s0 = l.src[rank - 2], d0 = l.dst[rank - 2];
  if ((s1 == 1 || s1 == 0) && d1 == 1) {  // rows are runs already
    for (std::size_t i = 0; i < n0; ++i) row(src + i * s0, dst + i * d0);
    return;
  }
  copy_tiled(n0, n1, src, s0, s1, dst, d0, d1);
}

}  // namespace

template <typename T>
void strided_copy(const Shape& shape, const T* src, const std::vector<std::size_t>& src_strides, T* dst,
                  const std::vector<std::size_t>& dst_strides) {
  if (numel(shape) == 0) return;
  const Layout l = coalesce(shape, src_strides, dst_strides);
  const std::size_t rank = l.shape.size();
  if (rank == 0) {
    *dst = *src;
    return;
  }
  const std::size_t inner_rank = rank >= 2 ? 2 : 1;
  const std::size_t outer_rank = rank - inner_rank;
  std::size_t outer = 1;
  for (std::size_t d = 0; d < outer_rank; ++d) outer *= l.shape[d];
  const std::size_t inner = numel(shape) / outer;
  // The outer steps split over the threads (each element is written once: any split gives the same).
  detail::parallel_for(outer, std::max<std::size_t>(1, detail::kElementwiseGrain / std::max<std::size_t>(inner, 1)),
                       [&](std::size_t first, std::size_t last) {
                         std::vector<std::size_t> index(outer_rank, 0);
                         std::size_t s = 0, o = 0;
                         for (std::size_t d = outer_rank, rest = first; d-- > 0;) {  // the odometer, started at `first`
                           index[d] = rest % l.shape[d];
                           rest /= l.shape[d];
                           s += index[d] * l.src[d];
                           o += index[d] * l.dst[d];
                         }
                         for (std::size_t step = first; step < last; ++step) {
                           copy_inner(l, rank, src + s, dst + o);
                           for (std::size_t d = outer_rank; d-- > 0;) {
                             ++index[d];
                             s += l.src[d];
                             o += l.dst[d];
                             if (index[d] < l.shape[d]) break;
                             s -= l.src[d] * index[d];
                             o -= l.dst[d] * index[d];
                             index[d] = 0;
                           }
                         }
                       });
}

template <typename T>
xt::xarray<T> gather_strided(const Shape& shape, const T* src, const std::vector<std::size_t>& src_strides) {
  xt::xarray<T> out = xt::xarray<T>::from_shape(shape);
  strided_copy(shape, src, src_strides, out.data(), contiguous_strides(shape));
  return out;
}

template <typename T>
xt::xarray<T> broadcast_copy(const xt::xarray<T>& a, const Shape& shape) {
  return gather_strided(shape, a.data(), broadcast_strides(shape_of(a), shape.size()));
}

#define TAPEGRAD_INSTANTIATE(T)                                                                      \
  template void strided_copy<T>(const Shape&, const T*, const std::vector<std::size_t>&, T*,         \
                                const std::vector<std::size_t>&);                                    \
  template xt::xarray<T> gather_strided<T>(const Shape&, const T*, const std::vector<std::size_t>&); \
  template xt::xarray<T> broadcast_copy<T>(const xt::xarray<T>&, const Shape&);
TAPEGRAD_INSTANTIATE(float)
TAPEGRAD_INSTANTIATE(double)
#undef TAPEGRAD_INSTANTIATE

}  // namespace tapegrad
