#include "tapegrad/autograd/indexing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "tapegrad/autograd/elementwise_kernels.hpp"
#include "tapegrad/autograd/parallel.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad {

namespace {

// Throws unless every position in index lies in [0, size): the first one that does not is named with
// where it sits in index, the dim as the caller wrote it and the dim's size.
void check_positions(const char* op, const IndexArray& index, std::int64_t dim, std::size_t size) {
  const auto n = static_cast<std::int64_t>(size);
  const std::int64_t* pi = index.data();
  for (std::size_t i = 0; i < index.size(); ++i) {
    if (pi[i] < 0 || pi[i] >= n) {
      throw ShapeError(fmt::format("{}: index {} at position {} is out of range for dim {} of size {}{}", op, pi[i],
                                   format_position(i, shape_of(index)), dim, size,
                                   size == 0 ? "" : fmt::format(" (expected 0 to {})", n - 1)));
    }
  }
}

// A 0-d tensor counts as one dim of one element, as torch's gather and index_select take it.
Shape at_least_1d(const Shape& shape) { return shape.empty() ? Shape{1} : shape; }

}  // namespace

template <typename T>
Tensor<T> gather(const Tensor<T>& x, std::int64_t dim, const IndexArray& index) {
  const Shape xs = at_least_1d(x.shape());
  const Shape is = at_least_1d(shape_of(index));
  if (is.size() != xs.size()) {
    throw ShapeError(fmt::format("gather: index of shape {} has {} dims but the input of shape {} has {}",
                                 format_shape(shape_of(index)), index.dimension(), format_shape(x.shape()), x.dim()));
  }
  const std::size_t rank = xs.size();
  const std::size_t d = normalize_dim("gather", dim, rank);
  if (index.size() > 0) {  // torch checks the sizes of a non-empty index only
    for (std::size_t k = 0; k < rank; ++k) {
      if (k != d && is[k] > xs[k]) {
        throw ShapeError(
            fmt::format("gather: index of shape {} is larger than the input of shape {} in dim {} ({} > {}); only "
                        "dim {} may be larger",
                        format_shape(shape_of(index)), format_shape(x.shape()), k, is[k], xs[k], d));
      }
    }
  }
  check_positions("gather", index, dim, xs[d]);

  // Where each output element is read from in x: its own coordinates, with index's value along dim.
  const std::size_t n = index.size();
  auto offsets = std::make_shared<std::vector<std::size_t>>(n);
  {
    const auto xstr = contiguous_strides(xs);
    const std::int64_t* pi = index.data();
    std::vector<std::size_t> coord(rank, 0);
    std::size_t base = 0;  // sum of coord[k] * xstr[k] over k != d
    for (std::size_t p = 0; p < n; ++p) {
      (*offsets)[p] = base + static_cast<std::size_t>(pi[p]) * xstr[d];
      for (std::size_t k = rank; k-- > 0;) {  // odometer over index's shape
        if (++coord[k] < is[k]) {
          if (k != d) base += xstr[k];
          break;
        }
        if (k != d) base -= (is[k] - 1) * xstr[k];
        coord[k] = 0;
      }
    }
  }
  xt::xarray<T> values = xt::xarray<T>::from_shape(index.shape());
  const T* px = x.data().data();
  const std::size_t* po = offsets->data();
  T* pv = values.data();
  detail::parallel_for(n, detail::kElementwiseGrain, [&](std::size_t begin, std::size_t end) {
    for (std::size_t p = begin; p < end; ++p) pv[p] = px[po[p]];
  });

  Tensor<T> out(std::move(values));
  if (should_record(x))
    record(out, "gather", {x}, [offsets, in_shape = x.shape()](const xt::xarray<T>& g, GradInputs<T>& in) {
      // Scatter-add, in index's order: a repeated position sums its gradients.
      xt::xarray<T> dx = xt::zeros<T>(in_shape);
      T* pd = dx.data();
      const T* pg = g.data();
      const std::size_t* po = offsets->data();
      for (std::size_t p = 0; p < offsets->size(); ++p) pd[po[p]] += pg[p];
      in.accumulate(0, std::move(dx));
    });
  return out;
}

template <typename T>
Tensor<T> index_select(const Tensor<T>& x, std::int64_t dim, const IndexArray& index) {
  if (index.dimension() > 1) {
    throw ShapeError(
        fmt::format("index_select: index must be 1-D or 0-d, got shape {}", format_shape(shape_of(index))));
  }
  const Shape xs = at_least_1d(x.shape());
  const std::size_t d = normalize_dim("index_select", dim, xs.size());
  const std::size_t m = index.size();
  if (x.dim() == 0 && m != 1) {
    throw ShapeError(fmt::format("index_select: a 0-d input takes one index, got {}", m));
  }
  check_positions("index_select", index, dim, xs[d]);
  // x as [outer, size, inner] around dim, the result as [outer, m, inner].
  std::size_t outer = 1, inner = 1;
  for (std::size_t k = 0; k < d; ++k) outer *= xs[k];
  for (std::size_t k = d + 1; k < xs.size(); ++k) inner *= xs[k];
  const std::size_t size = xs[d];
  Shape out_shape = x.shape();
  if (!out_shape.empty()) out_shape[d] = m;
  xt::xarray<T> values = xt::xarray<T>::from_shape(out_shape);
  const T* px = x.data().data();
  const std::int64_t* pi = index.data();
  T* pv = values.data();
  detail::parallel_for(outer * m, std::max<std::size_t>(1, detail::kElementwiseGrain / std::max<std::size_t>(inner, 1)),
                       [&](std::size_t begin, std::size_t end) {
                         for (std::size_t r = begin; r < end; ++r) {
                           const std::size_t o = r / m, j = r % m;
                           std::copy_n(px + (o * size + static_cast<std::size_t>(pi[j])) * inner, inner,
                                       pv + r * inner);
                         }
                       });

  Tensor<T> out(std::move(values));
  if (should_record(x)) {
    auto saved_index = std::make_shared<const IndexArray>(index);
    record(out, "index_select", {x},
           [saved_index, in_shape = x.shape(), outer, size, inner](const xt::xarray<T>& g, GradInputs<T>& in) {
             // Scatter-add, in index's order: a repeated position sums its slices' gradients.
             xt::xarray<T> dx = xt::zeros<T>(in_shape);
             T* pd = dx.data();
             const T* pg = g.data();
             const std::int64_t* pi = saved_index->data();
             const std::size_t m = saved_index->size();
             for (std::size_t o = 0; o < outer; ++o)
               for (std::size_t j = 0; j < m; ++j) {
                 T* __restrict row = pd + (o * size + static_cast<std::size_t>(pi[j])) * inner;
                 const T* __restrict gr = pg + (o * m + j) * inner;
                 for (std::size_t i = 0; i < inner; ++i) row[i] += gr[i];
               }
             in.accumulate(0, std::move(dx));
           });
  }
  return out;
}

template Tensor<float> gather<float>(const Tensor<float>&, std::int64_t, const IndexArray&);
template Tensor<double> gather<double>(const Tensor<double>&, std::int64_t, const IndexArray&);
template Tensor<float> index_select<float>(const Tensor<float>&, std::int64_t, const IndexArray&);
template Tensor<double> index_select<double>(const Tensor<double>&, std::int64_t, const IndexArray&);

}  // namespace tapegrad
