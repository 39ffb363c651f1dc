#include "tapegrad/autograd/indexing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "tapegrad/autograd/broadcast.hpp"
#include "tapegrad/autograd/elementwise_kernels.hpp"
#include "tapegrad/autograd/instantiate.hpp"
#include "tapegrad/autograd/parallel.hpp"
#include "tapegrad/autograd/strided_copy.hpp"
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
  const AroundDim split = around_dim(xs, d);
  const std::size_t outer = split.outer, size = split.size, inner = split.inner;
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

namespace {

// An order on the elements of one slice as torch's sort sees them: NaN above every number, ties broken
// by position, so the order is total and a partial sort gives a stable sort's first k.
template <typename T>
struct SliceOrder {
  const T* x;
  std::size_t inner;
  bool descending;
  bool operator()(std::int64_t a, std::int64_t b) const {
    const T va = x[static_cast<std::size_t>(a) * inner], vb = x[static_cast<std::size_t>(b) * inner];
    const bool na = std::isnan(va), nb = std::isnan(vb);
    if (na != nb) return descending ? na : nb;  // the NaN is the larger
    if (!na && va != vb) return descending ? va > vb : va < vb;
    return a < b;
  }
};

// Below size / kSelectRatio, topk selects in one pass with insertion into a sorted buffer of k rather
// than a partial sort (a heap of k over every position): about 2x faster at k 5 of 2,000.
constexpr std::size_t kSelectRatio = 16;
/// Elements of a contiguous slice the selection tests at once before looking at them one by one.
constexpr std::size_t kSelectChunk = 32;

// The first kk positions of one slice (size elements, inner apart) in SliceOrder, into order[0, kk).
// Few of many (topk's usual case): one pass keeps the best kk so far in order; an element that does not
// beat the last of them, which is almost every element, costs one comparison. Positions arrive in
// increasing order, so a tie never displaces an earlier position. The rejection compares values only:
// once kk are held, a later element enters only when strictly better than the last held one (ties keep
// the earlier position), a NaN counting as the largest value. Otherwise a (partial) sort.
template <typename T>
void order_slice(const T* slice, std::size_t size, std::size_t inner, std::size_t kk, bool descending,
                 std::vector<std::int64_t>& order) {
  const SliceOrder<T> before{slice, inner, descending};
  if (kk == 0 || kk * kSelectRatio > size) {
    for (std::size_t r = 0; r < size; ++r) order[r] = static_cast<std::int64_t>(r);
    if (kk == size)
      std::sort(order.begin(), order.end(), before);
    else
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kk), order.end(), before);
    return;
  }
  std::size_t held = 0;
  T last = T(0);  // the value of order[kk - 1] once held == kk
  for (std::size_t r = 0; r < size; ++r) {
    if (held == kk && inner == 1 && r % kSelectChunk == 0 && r + kSelectChunk <= size) {
      // A whole chunk at once, in a loop that vectorizes: skip it when no element can beat the last held
      // one. The test has no false negatives (a NaN on either side passes it), so the element-wise test
      // below still decides.
      int may_enter = 0;
      for (std::size_t j = r; j < r + kSelectChunk; ++j)
        may_enter |= descending ? !(slice[j] <= last) : !(slice[j] >= last);
      if (!may_enter) {
        r += kSelectChunk - 1;
        continue;
      }
    }
    if (held == kk) {
      const T v = slice[r * inner];
      const bool better = descending ? (v > last || (std::isnan(v) && !std::isnan(last)))
                                     : (v < last || (std::isnan(last) && !std::isnan(v)));
      if (!better) continue;
    }
    const auto candidate = static_cast<std::int64_t>(r);
    std::size_t at = held < kk ? held++ : kk - 1;
    for (; at > 0 && before(candidate, order[at - 1]); --at) order[at] = order[at - 1];
    order[at] = candidate;
    if (held == kk) last = slice[static_cast<std::size_t>(order[kk - 1]) * inner];
  }
}

// The first k positions of every [o, :, i] slice in the order above, with their values; the gradient
// goes back to the positions.
template <typename T>
ValuesIndices<T> ordered_along(const char* op, const Tensor<T>& x, std::int64_t k, std::int64_t dim, bool descending) {
  const Shape& shape = x.shape();
  const std::size_t rank = shape.size();
  const std::size_t d = normalize_dim(op, dim, std::max<std::size_t>(rank, 1));
  const AroundDim split = around_dim(shape, d);
  const std::size_t outer = split.outer, size = split.size, inner = split.inner;
  if (k < 0 || static_cast<std::size_t>(k) > size || (rank == 0 && k != 1)) {
    throw ShapeError(fmt::format("{}: k {} is out of range for dim {} of size {} (expected {})", op, k, dim, size,
                                 rank == 0 ? std::string("1 for a 0-d tensor") : fmt::format("0 to {}", size)));
  }
  const auto kk = static_cast<std::size_t>(k);
  Shape out_shape = shape;
  if (rank > 0) out_shape[d] = kk;
  xt::xarray<T> values = xt::xarray<T>::from_shape(out_shape);
  IndexArray indices = IndexArray::from_shape(out_shape);
  const T* px = x.data().data();
  T* pv = values.data();
  std::int64_t* pi = indices.data();
  detail::parallel_for(outer * inner,
                       std::max<std::size_t>(1, detail::kElementwiseGrain / std::max<std::size_t>(size, 1)),
                       [&](std::size_t begin, std::size_t end) {
                         std::vector<std::int64_t> order(size);
                         for (std::size_t s = begin; s < end; ++s) {
                           const std::size_t o = s / inner, i = s % inner;
                           const T* slice = px + o * size * inner + i;
                           order_slice(slice, size, inner, kk, descending, order);
                           for (std::size_t r = 0; r < kk; ++r) {
                             const std::size_t at = (o * kk + r) * inner + i;
                             pi[at] = order[r];
                             pv[at] = slice[static_cast<std::size_t>(order[r]) * inner];
                           }
                         }
                       });
  Tensor<T> out(std::move(values));
  if (should_record(x)) {
    auto saved = std::make_shared<const IndexArray>(indices);
    record(out, op, {x}, [saved, in_shape = shape, split, kk](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(0, detail::scatter_picked(g, saved->data(), in_shape, split, kk));
    });
  }
  return {std::move(out), std::move(indices)};
}

}  // namespace

namespace detail {
template <typename T>
xt::xarray<T> scatter_picked(const xt::xarray<T>& g, const std::int64_t* positions, const Shape& in_shape,
                             AroundDim split, std::size_t picks) {
  xt::xarray<T> dx = xt::zeros<T>(in_shape);
  T* pd = dx.data();
  const T* pg = g.data();
  for (std::size_t o = 0; o < split.outer; ++o)
    for (std::size_t r = 0; r < picks; ++r)
      for (std::size_t i = 0; i < split.inner; ++i) {
        const std::size_t at = (o * picks + r) * split.inner + i;
        pd[(o * split.size + static_cast<std::size_t>(positions[at])) * split.inner + i] = pg[at];
      }
  return dx;
}
TAPEGRAD_INSTANTIATE(scatter_picked);
}  // namespace detail

template <typename T>
ValuesIndices<T> topk(const Tensor<T>& x, std::int64_t k, std::int64_t dim, bool largest, bool /*sorted*/) {
  return ordered_along("topk", x, k, dim, largest);
}

template <typename T>
ValuesIndices<T> sort(const Tensor<T>& x, std::int64_t dim, bool descending) {
  const std::size_t d = normalize_dim("sort", dim, std::max<std::size_t>(x.dim(), 1));
  const std::int64_t size = x.dim() == 0 ? 1 : static_cast<std::int64_t>(x.shape()[d]);
  return ordered_along("sort", x, size, dim, descending);
}

template <typename T>
Tensor<T> one_hot(const IndexArray& indices, std::int64_t num_classes) {
  if (num_classes < -1) {
    throw ShapeError(fmt::format("one_hot: num_classes must be -1 (inferred) or >= 0, got {}", num_classes));
  }
  const std::int64_t* pi = indices.data();
  const std::size_t n = indices.size();
  if (num_classes == -1) {
    if (n == 0) throw ShapeError("one_hot: cannot infer num_classes from an empty indices; pass num_classes");
    num_classes = *std::max_element(pi, pi + n) + 1;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (pi[i] < 0 || pi[i] >= num_classes) {
      throw ShapeError(fmt::format("one_hot: index {} at position {} is out of range for {} classes (expected 0 to {})",
                                   pi[i], format_position(i, shape_of(indices)), num_classes, num_classes - 1));
    }
  }
  Shape shape = shape_of(indices);
  shape.push_back(static_cast<std::size_t>(num_classes));
  numel(shape);  // refuses a shape whose element count overflows before anything is allocated
  xt::xarray<T> out = xt::zeros<T>(shape);
  const auto classes = static_cast<std::size_t>(num_classes);
  for (std::size_t i = 0; i < n; ++i) out.data()[i * classes + static_cast<std::size_t>(pi[i])] = T(1);
  return Tensor<T>(std::move(out));
}

namespace detail {

StridedView index_view(const char* op, const Shape& shape, const std::vector<indexing::TensorIndex>& indices) {
  using Kind = indexing::TensorIndex::Kind;
  std::size_t consumed = 0, ellipses = 0;
  for (const auto& i : indices) {
    if (i.kind() == Kind::Integer || i.kind() == Kind::Slice) ++consumed;
    if (i.kind() == Kind::Ellipsis) ++ellipses;
  }
  if (ellipses > 1)
    throw ShapeError(fmt::format("{}: an index list may hold one Ellipsis, this one has {}", op, ellipses));
  if (consumed > shape.size()) {
    throw ShapeError(fmt::format("{}: too many indices for a tensor of {} dims (shape {}): {} integers and slices", op,
                                 shape.size(), format_shape(shape), consumed));
  }
  const std::vector<std::size_t> strides = contiguous_strides(shape);
  StridedView v;
  std::size_t d = 0;  // the next dim of x
  const auto keep_whole = [&](std::size_t n) {
    for (std::size_t k = 0; k < n; ++k, ++d) {
      v.shape.push_back(shape[d]);
      v.strides.push_back(strides[d]);
    }
  };
  for (const auto& i : indices) {
    if (i.kind() == Kind::None) {
      v.shape.push_back(1);
      v.strides.push_back(0);
    } else if (i.kind() == Kind::Ellipsis) {
      keep_whole(shape.size() - consumed);
    } else if (i.kind() == Kind::Integer) {
      const auto size = static_cast<std::int64_t>(shape[d]);
      const std::int64_t at = i.integer();
      if (at < -size || at >= size) {
        throw ShapeError(fmt::format("{}: index {} is out of range for dim {} of size {} (shape {})", op, at, d, size,
                                     format_shape(shape)));
      }
      v.offset += static_cast<std::size_t>(at < 0 ? at + size : at) * strides[d];
      ++d;
    } else {
      const indexing::Slice& s = i.slice();
      if (s.step() < 1) throw ShapeError(fmt::format("{}: a slice's step must be positive, got {}", op, s.step()));
      const auto size = static_cast<std::int64_t>(shape[d]);
      // Python's rules: negative bounds count from the end, then both are clamped into [0, size].
      const auto clamp = [size](std::int64_t b) { return std::clamp<std::int64_t>(b < 0 ? b + size : b, 0, size); };
      const std::int64_t start = clamp(s.start().value_or(0)), stop = clamp(s.stop().value_or(size));
      const std::int64_t count = stop > start ? (stop - start + s.step() - 1) / s.step() : 0;
      v.offset += static_cast<std::size_t>(start) * strides[d];
      v.shape.push_back(static_cast<std::size_t>(count));
      v.strides.push_back(strides[d] * static_cast<std::size_t>(s.step()));
      ++d;
    }
  }
  keep_whole(shape.size() - d);
  return v;
}

namespace {
// values' shape without the leading 1s beyond the part's rank, which Python's x[...] = values drops.
Shape without_extra_ones(Shape vs, std::size_t rank) {
  while (vs.size() > rank && vs.front() == 1) vs.erase(vs.begin());
  return vs;
}
}  // namespace

template <typename T>
void put_view(const char* op, xt::xarray<T>& dst, const StridedView& v, const xt::xarray<T>& values) {
  const Shape vs = without_extra_ones(shape_of(values), v.shape.size());
  if (vs != v.shape) {
    const std::size_t lead = v.shape.size() - std::min(vs.size(), v.shape.size());
    bool fits = vs.size() <= v.shape.size();
    for (std::size_t i = 0; fits && i < vs.size(); ++i) fits = vs[i] == 1 || vs[i] == v.shape[lead + i];
    if (!fits) {
      throw ShapeError(fmt::format("{}: values of shape {} cannot be broadcast to the indexed shape {}", op,
                                   format_shape(shape_of(values)), format_shape(v.shape)));
    }
    xt::xarray<T> fitted = values;
    fitted.reshape(vs);
    put_view(op, dst, v, broadcast_copy(fitted, v.shape));
    return;
  }
  strided_copy(v.shape, values.data(), contiguous_strides(v.shape), dst.data() + v.offset, v.strides);
}

TAPEGRAD_INSTANTIATE(put_view);

}  // namespace detail

template <typename T>
Tensor<T> index(const Tensor<T>& x, const std::vector<indexing::TensorIndex>& indices) {
  return take_view(x, "index", detail::index_view("index", x.shape(), indices));
}

template <typename T>
Tensor<T> index_put(const Tensor<T>& x, const std::vector<indexing::TensorIndex>& indices, const Tensor<T>& values) {
  const StridedView v = detail::index_view("index_put", x.shape(), indices);
  xt::xarray<T> value = x.data();
  detail::put_view("index_put", value, v, values.data());
  Tensor<T> out(std::move(value));
  if (should_record(x, values))
    record(out, "index_put", {x, values},
           [v, values_shape = values.shape()](const xt::xarray<T>& g, GradInputs<T>& in) {
             if (in.needs(0)) {
               xt::xarray<T> dx = g;
               const xt::xarray<T> replaced = xt::zeros<T>(v.shape);
               strided_copy(v.shape, replaced.data(), contiguous_strides(v.shape), dx.data() + v.offset, v.strides);
               in.accumulate(0, std::move(dx));
             }
             if (in.needs(1)) {
               xt::xarray<T> dv = unbroadcast(gather_strided(v.shape, g.data() + v.offset, v.strides),
                                              detail::without_extra_ones(values_shape, v.shape.size()));
               dv.reshape(values_shape);
               in.accumulate(1, std::move(dv));
             }
           });
  return out;
}

template <typename T>
Tensor<T> index_put(const Tensor<T>& x, const std::vector<indexing::TensorIndex>& indices, detail::scalar_t<T> value) {
  return index_put(x, indices, Tensor<T>::scalar(value));
}

TAPEGRAD_INSTANTIATE(index);
template Tensor<float> index_put<float>(const Tensor<float>&, const std::vector<indexing::TensorIndex>&,
                                        const Tensor<float>&);
template Tensor<double> index_put<double>(const Tensor<double>&, const std::vector<indexing::TensorIndex>&,
                                          const Tensor<double>&);
template Tensor<float> index_put<float>(const Tensor<float>&, const std::vector<indexing::TensorIndex>&, float);
template Tensor<double> index_put<double>(const Tensor<double>&, const std::vector<indexing::TensorIndex>&, double);

TAPEGRAD_INSTANTIATE(gather);
TAPEGRAD_INSTANTIATE(index_select);

TAPEGRAD_INSTANTIATE(topk);
TAPEGRAD_INSTANTIATE(sort);
TAPEGRAD_INSTANTIATE(one_hot);

}  // namespace tapegrad
