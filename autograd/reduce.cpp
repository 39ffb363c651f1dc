#include "tapegrad/autograd/reduce.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tapegrad/autograd/broadcast.hpp"
#include "tapegrad/autograd/elementwise_kernels.hpp"
#include "tapegrad/autograd/indexing.hpp"
#include "tapegrad/autograd/instantiate.hpp"
#include "tapegrad/autograd/parallel.hpp"
#include "tapegrad/autograd/strided_copy.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad {

namespace {

// How one reduction walks memory. When the reduced dims (ignoring size-1 dims) form one block, the
// input already is a contiguous [outer, count, inner] array; otherwise it is first permuted (one
// strided copy) so that the kept dims lead and the reduced dims trail: [outer, count, 1].
struct ReducePlan {
  Shape in_shape;
  Shape keep_shape;  // in_shape with the reduced dims set to 1
  Shape out_shape;   // keep_shape, or without the reduced dims unless keepdim
  std::size_t outer = 1, count = 1, inner = 1;
  bool blocked = true;
  std::vector<std::size_t> perm;  // when !blocked: kept dims, then reduced dims
};

// dims empty means every dim, as in torch's sum(x, []). A 0-d tensor takes dim 0 or -1, as in torch.
ReducePlan make_plan(const char* op, const Shape& shape, const std::vector<std::int64_t>& dims, bool keepdim) {
  ReducePlan p;
  p.in_shape = shape;
  const std::size_t rank = shape.size();
  std::vector<bool> reduced(rank, dims.empty());
  std::vector<bool> seen(std::max<std::size_t>(rank, 1), false);
  for (std::int64_t dim : dims) {
    const std::size_t d = normalize_dim(op, dim, std::max<std::size_t>(rank, 1));
    if (seen[d])
      throw ShapeError(fmt::format("{}: dim {} appears more than once in dims [{}]", op, dim, fmt::join(dims, ", ")));
    seen[d] = true;
    if (rank > 0) reduced[d] = true;
  }
  if (rank == 0) return p;
  for (std::size_t d = 0; d < rank; ++d) {
    p.keep_shape.push_back(reduced[d] ? 1 : shape[d]);
    if (!reduced[d] || keepdim) p.out_shape.push_back(reduced[d] ? 1 : shape[d]);
    if (reduced[d]) p.count *= shape[d];
  }
  // The span from the first to the last reduced dim of size > 1 must hold no kept dim of size > 1.
  std::size_t first = rank, last = 0;
  for (std::size_t d = 0; d < rank; ++d) {
    if (reduced[d] && shape[d] != 1) {
      first = std::min(first, d);
      last = d;
    }
  }
  if (first == rank) {  // nothing of size > 1 is reduced: one element per slice
    p.outer = numel(shape);
    return p;
  }
  for (std::size_t d = first; d <= last; ++d)
    if (!reduced[d] && shape[d] != 1) p.blocked = false;
  if (p.blocked) {
    for (std::size_t d = 0; d < first; ++d) p.outer *= shape[d];
    for (std::size_t d = last + 1; d < rank; ++d) p.inner *= shape[d];
    return p;
  }
  for (std::size_t d = 0; d < rank; ++d)
    if (!reduced[d]) p.perm.push_back(d);
  for (std::size_t d = 0; d < rank; ++d)
    if (reduced[d]) p.perm.push_back(d);
  p.outer = numel(p.keep_shape);
  return p;
}

// x laid out as the plan's [outer, count, inner]: x itself, or a permuted copy kept in scratch.
template <typename T>
const T* arrange(const xt::xarray<T>& x, const ReducePlan& p, xt::xarray<T>& scratch) {
  if (p.blocked) return x.data();
  const auto strides = contiguous_strides(p.in_shape);
  Shape shape;
  std::vector<std::size_t> perm_strides;
  for (std::size_t d : p.perm) {
    shape.push_back(p.in_shape[d]);
    perm_strides.push_back(strides[d]);
  }
  scratch = gather_strided(shape, x.data(), perm_strides);
  return scratch.data();
}

// sum of f(p[i]) over n contiguous values, in double. Eight independent partial sums let the adds
// pipeline (and vectorize) instead of waiting on one accumulator.
template <typename T, typename F>
double sum_run(const T* p, std::size_t n, F f) {
  double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (std::size_t k = 0; k < 8; ++k) part[k] += f(static_cast<double>(p[i + k]));
  double s = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
  for (; i < n; ++i) s += f(static_cast<double>(p[i]));
  return s;
}

// body(o) for every outer slice o in [0, outer) of count * inner elements, the slices split over the
// threads (each slice whole on one thread, so its result does not depend on the thread count).
template <typename F>
void for_each_slice(std::size_t outer, std::size_t count, std::size_t inner, F&& body) {
  const std::size_t per_slice = std::max<std::size_t>(1, count * inner);
  detail::parallel_for(outer, std::max<std::size_t>(1, detail::kElementwiseGrain / per_slice),
                       [&](std::size_t o0, std::size_t o1) {
                         for (std::size_t o = o0; o < o1; ++o) body(o);
                       });
}

// out[o, i] = sum over r of x[o, r, i], accumulated in double.
template <typename T>
void sum_slices(const T* x, std::size_t outer, std::size_t count, std::size_t inner, std::vector<double>& out) {
  out.assign(outer * inner, 0.0);
  for_each_slice(outer, count, inner, [&](std::size_t o) {
    const T* xo = x + o * count * inner;
    double* acc = out.data() + o * inner;
    if (inner == 1) {
      *acc = sum_run(xo, count, [](double v) { return v; });
    } else {
      for (std::size_t r = 0; r < count; ++r)
        for (std::size_t i = 0; i < inner; ++i) acc[i] += xo[r * inner + i];
    }
  });
}

template <typename T>
xt::xarray<T> to_array(const std::vector<double>& values, const Shape& shape, double scale = 1.0) {
  xt::xarray<T> out = xt::xarray<T>::from_shape(shape);
  T* po = out.data();
  for (std::size_t i = 0; i < values.size(); ++i) po[i] = static_cast<T>(values[i] * scale);
  return out;
}

// g (of the output's shape) as an array of keep_shape: same elements, size-1 dims where reduced.
template <typename T>
xt::xarray<T> with_keep_shape(const xt::xarray<T>& g, const Shape& keep_shape) {
  xt::xarray<T> out = xt::xarray<T>::from_shape(keep_shape);
  std::copy(g.data(), g.data() + g.size(), out.data());
  return out;
}

// NaN beats everything (torch's max and min propagate NaN); otherwise a strict > (< for the min, when
// !Max) keeps the first extreme.
template <bool Max, typename T>
bool beats(T v, T best) {
  return (Max ? v > best : v < best) || (std::isnan(v) && !std::isnan(best));
}

// The first arg-max (arg-min when !Max) of every [o, :, i] slice, as positions along the reduced dim.
template <bool Max, typename T>
std::vector<std::int64_t> arg_extreme_slices(const T* x, std::size_t outer, std::size_t count, std::size_t inner) {
  std::vector<std::int64_t> idx(outer * inner, 0);
  if (inner == 1) {  // one contiguous scan per slice
    for (std::size_t o = 0; o < outer; ++o) {
      const T* xo = x + o * count;
      T best = xo[0];
      std::size_t at = 0;
      for (std::size_t r = 1; r < count; ++r) {
        if (beats<Max>(xo[r], best)) {
          best = xo[r];
          at = r;
        }
      }
      idx[o] = static_cast<std::int64_t>(at);
    }
    return idx;
  }
  std::vector<T> best(inner);
  for (std::size_t o = 0; o < outer; ++o) {
    const T* xo = x + o * count * inner;
    std::int64_t* io = idx.data() + o * inner;
    std::copy(xo, xo + inner, best.begin());
    for (std::size_t r = 1; r < count; ++r) {
      const T* row = xo + r * inner;
      for (std::size_t i = 0; i < inner; ++i) {
        if (beats<Max>(row[i], best[i])) {
          best[i] = row[i];
          io[i] = static_cast<std::int64_t>(r);
        }
      }
    }
  }
  return idx;
}

// The plan of a reduction over one dim, which must not be empty.
ReducePlan max_plan(const char* op, const Shape& shape, std::int64_t dim, bool keepdim) {
  ReducePlan p = make_plan(op, shape, {dim}, keepdim);
  if (p.count == 0) {
    throw ShapeError(fmt::format("{}: cannot reduce dim {} of size 0 (shape {})", op, dim, format_shape(shape)));
  }
  return p;
}

template <typename T>
Tensor<T> sum_or_mean(const Tensor<T>& x, const char* op, const std::vector<std::int64_t>& dims, bool keepdim,
                      bool average) {
  const ReducePlan p = make_plan(op, x.shape(), dims, keepdim);
  xt::xarray<T> scratch;
  std::vector<double> acc;
  sum_slices(arrange(x.data(), p, scratch), p.outer, p.count, p.inner, acc);
  // An empty mean is 0/0 = NaN, as in torch.
  const double scale = average ? 1.0 / static_cast<double>(p.count) : 1.0;
  Tensor<T> out(
      to_array<T>(acc, p.out_shape, average && p.count == 0 ? std::numeric_limits<double>::quiet_NaN() : scale));
  if (should_record(x))
    record(out, op, {x},
           [in_shape = p.in_shape, keep_shape = p.keep_shape, scale](const xt::xarray<T>& g, GradInputs<T>& in) {
             xt::xarray<T> dx = broadcast_copy(with_keep_shape(g, keep_shape), in_shape);
             if (scale != 1.0) {
               T* pd = dx.data();
               const T s = static_cast<T>(scale);
               for (std::size_t i = 0; i < dx.size(); ++i) pd[i] *= s;
             }
             in.accumulate(0, std::move(dx));
           });
  return out;
}

// log(sum(exp(x))) of every [o, :, i] slice into out, in double, as log(sum(exp(x - m))) + m around
// the slice's max m. As torch, an infinite m is taken as 0 (a slice of all -inf, or an empty one, then
// gives log 0 = -inf, and one holding +inf gives +inf rather than inf - inf = NaN); a NaN propagates.
template <typename T>
void logsumexp_slices(const T* x, std::size_t outer, std::size_t count, std::size_t inner, T* out) {
  std::vector<double> shift(outer * inner, -HUGE_VAL), total(outer * inner, 0.0);
  for_each_slice(outer, count, inner, [&](std::size_t o) {
    const T* xo = x + o * count * inner;
    double* m = shift.data() + o * inner;
    double* acc = total.data() + o * inner;
    for (std::size_t r = 0; r < count; ++r)
      for (std::size_t i = 0; i < inner; ++i)
        if (beats<true>(static_cast<double>(xo[r * inner + i]), m[i])) m[i] = xo[r * inner + i];
    for (std::size_t i = 0; i < inner; ++i)
      if (std::isinf(m[i])) m[i] = 0;
    for (std::size_t r = 0; r < count; ++r)
      for (std::size_t i = 0; i < inner; ++i) acc[i] += std::exp(xo[r * inner + i] - m[i]);
    for (std::size_t i = 0; i < inner; ++i) out[o * inner + i] = static_cast<T>(std::log(acc[i]) + m[i]);
  });
}

// max(x, dim) (min when !Max): the values at the first arg-extremes, whose gradient goes there, and
// those positions.
template <bool Max, typename T>
ValuesIndices<T> extreme_along(const char* op, const Tensor<T>& x, std::int64_t dim, bool keepdim) {
  const ReducePlan p = max_plan(op, x.shape(), dim, keepdim);
  const T* px = x.data().data();  // one dim is always a block
  std::vector<std::int64_t> idx = arg_extreme_slices<Max>(px, p.outer, p.count, p.inner);
  xt::xarray<T> values = xt::xarray<T>::from_shape(p.out_shape);
  T* pv = values.data();
  for (std::size_t o = 0; o < p.outer; ++o)
    for (std::size_t i = 0; i < p.inner; ++i) {
      const std::size_t k = o * p.inner + i;
      pv[k] = px[(o * p.count + static_cast<std::size_t>(idx[k])) * p.inner + i];
    }
  IndexArray indices = IndexArray::from_shape(p.out_shape);
  std::copy(idx.begin(), idx.end(), indices.data());
  Tensor<T> out(std::move(values));
  if (should_record(x))
    record(out, op, {x},
           [idx = std::move(idx), in_shape = p.in_shape, split = AroundDim{p.outer, p.count, p.inner}](
               const xt::xarray<T>& g, GradInputs<T>& in) {
             in.accumulate(0, detail::scatter_picked(g, idx.data(), in_shape, split, 1));
           });
  return {std::move(out), std::move(indices)};
}

// argmax(x, dim) (argmin when !Max).
template <bool Max, typename T>
xt::xarray<std::int64_t> arg_extreme(const char* op, const Tensor<T>& x, std::int64_t dim, bool keepdim) {
  const ReducePlan p = max_plan(op, x.shape(), dim, keepdim);
  const std::vector<std::int64_t> idx = arg_extreme_slices<Max>(x.data().data(), p.outer, p.count, p.inner);
  xt::xarray<std::int64_t> out = xt::xarray<std::int64_t>::from_shape(p.out_shape);
  std::copy(idx.begin(), idx.end(), out.data());
  return out;
}

}  // namespace

template <typename T>
Tensor<T> sum(const Tensor<T>& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  return sum_or_mean(x, "sum", dims, keepdim, false);
}

template <typename T>
Tensor<T> mean(const Tensor<T>& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  return sum_or_mean(x, "mean", dims, keepdim, true);
}

template <typename T>
Tensor<T> sum(const Tensor<T>& x) {
  return sum_or_mean(x, "sum", {}, false, false);
}

template <typename T>
Tensor<T> mean(const Tensor<T>& x) {
  return sum_or_mean(x, "mean", {}, false, true);
}

namespace {
// var (root false) and std (root true): one pass for the means, one for the squared deviations.
template <typename T>
Tensor<T> variance(const char* op, const Tensor<T>& x, const std::vector<std::int64_t>& dims, std::int64_t correction,
                   bool keepdim, bool root) {
  const ReducePlan p = make_plan(op, x.shape(), dims, keepdim);
  xt::xarray<T> scratch;
  const T* px = arrange(x.data(), p, scratch);
  std::vector<double> means;
  sum_slices(px, p.outer, p.count, p.inner, means);
  for (double& m : means) m /= static_cast<double>(p.count);
  // torch divides by max(0, N - correction): a non-positive divisor gives inf or NaN, not an error.
  const double divisor = std::max<double>(0.0, static_cast<double>(p.count) - static_cast<double>(correction));
  std::vector<double> sq(p.outer * p.inner, 0.0);
  for (std::size_t o = 0; o < p.outer; ++o) {
    const T* xo = px + o * p.count * p.inner;
    const double* mo = means.data() + o * p.inner;
    double* so = sq.data() + o * p.inner;
    if (p.inner == 1) {
      const double m = *mo;
      *so = sum_run(xo, p.count, [m](double v) { return (v - m) * (v - m); });
      continue;
    }
    for (std::size_t r = 0; r < p.count; ++r)
      for (std::size_t i = 0; i < p.inner; ++i) {
        const double dev = xo[r * p.inner + i] - mo[i];
        so[i] += dev * dev;
      }
  }
  for (double& s : sq) s = root ? std::sqrt(s / divisor) : s / divisor;
  Tensor<T> out(to_array<T>(sq, p.out_shape));
  if (should_record(x))
    record(out, op, {x},
           [op, x_val = x.saved(), mean_val = to_array<T>(means, p.keep_shape), keep_shape = p.keep_shape, divisor,
            y = root ? out.saved() : nullptr](const xt::xarray<T>& g, GradInputs<T>& in) {
             // d var / dx = 2 (x - mean) / divisor; the mean's own dependence on x cancels out. For std,
             // d std / dx = (x - mean) / (divisor std), and 0 where std is 0 (torch masks g / (2 std)).
             xt::xarray<T> coef = with_keep_shape(g, keep_shape);
             if (y) {
               const T* py = y->data();
               T* pc = coef.data();
               for (std::size_t k = 0; k < coef.size(); ++k)
                 pc[k] = py[k] == T(0) ? T(0) : pc[k] / (py[k] * static_cast<T>(divisor));
             } else {
               const T two_over = static_cast<T>(2.0 / divisor);
               for (auto& c : coef) c *= two_over;
             }
             xt::xarray<T> dev = broadcast_apply(op, *x_val, mean_val, [](T a, T m) { return a - m; });
             in.accumulate(0, broadcast_apply(op, dev, coef, [](T d, T c) { return d * c; }));
           });
  return out;
}
}  // namespace

template <typename T>
Tensor<T> var(const Tensor<T>& x, const std::vector<std::int64_t>& dims, std::int64_t correction, bool keepdim) {
  return variance("var", x, dims, correction, keepdim, false);
}

template <typename T>
Tensor<T> std(const Tensor<T>& x, const std::vector<std::int64_t>& dims, std::int64_t correction, bool keepdim) {
  return variance("std", x, dims, correction, keepdim, true);
}

template <typename T>
Tensor<T> logsumexp(const Tensor<T>& x, const std::vector<std::int64_t>& dims, bool keepdim) {
  const ReducePlan p = make_plan("logsumexp", x.shape(), dims, keepdim);
  xt::xarray<T> scratch;
  xt::xarray<T> values = xt::xarray<T>::from_shape(p.out_shape);
  logsumexp_slices(arrange(x.data(), p, scratch), p.outer, p.count, p.inner, values.data());
  Tensor<T> out(std::move(values));
  if (should_record(x))
    record(out, "logsumexp", {x},
           [x_val = x.saved(), y = out.saved(), keep_shape = p.keep_shape](const xt::xarray<T>& g, GradInputs<T>& in) {
             // d out / dx = exp(x - out), the slice's softmax; torch's form, which is NaN where x and out
             // are the same infinity (a slice of all -inf, or a +inf).
             const xt::xarray<T> prob = broadcast_apply("logsumexp", *x_val, with_keep_shape(*y, keep_shape),
                                                        [](T v, T lse) { return std::exp(v - lse); });
             in.accumulate(0, broadcast_apply("logsumexp", prob, with_keep_shape(g, keep_shape),
                                              [](T pv, T gv) { return pv * gv; }));
           });
  return out;
}

template <typename T>
ValuesIndices<T> max(const Tensor<T>& x, std::int64_t dim, bool keepdim) {
  return extreme_along<true>("max", x, dim, keepdim);
}

template <typename T>
ValuesIndices<T> min(const Tensor<T>& x, std::int64_t dim, bool keepdim) {
  return extreme_along<false>("min", x, dim, keepdim);
}

// The max (min when !Max) of every element; its gradient is shared equally among all tied extremes, as
// torch 1.13's max() and min() do.
template <bool Max, typename T>
Tensor<T> extreme_of_all(const char* op, const Tensor<T>& x) {
  const std::size_t n = x.numel();
  if (n == 0) {
    throw ShapeError(fmt::format("{0}: cannot take the {0} of an empty tensor (shape {1}); pass a dim", op,
                                 format_shape(x.shape())));
  }
  const T* px = x.data().data();
  T best = px[0];
  for (std::size_t i = 1; i < n; ++i)
    if (beats<Max>(px[i], best)) best = px[i];
  Tensor<T> out = Tensor<T>::scalar(best);
  if (should_record(x))
    record(out, op, {x}, [x_val = x.saved(), best](const xt::xarray<T>& g, GradInputs<T>& in) {
      // Every element equal to the extreme (NaN counts as equal to a NaN extreme) gets an equal share.
      const auto ties = [best](T v) { return v == best || (std::isnan(v) && std::isnan(best)); };
      const T* pxv = x_val->data();
      const std::size_t n = x_val->size();
      std::size_t count = 0;
      for (std::size_t i = 0; i < n; ++i) count += ties(pxv[i]) ? 1 : 0;
      const T share = g() / static_cast<T>(count);
      xt::xarray<T> dx = xt::xarray<T>::from_shape(x_val->shape());
      T* pd = dx.data();
      for (std::size_t i = 0; i < n; ++i) pd[i] = ties(pxv[i]) ? share : T(0);
      in.accumulate(0, std::move(dx));
    });
  return out;
}

template <typename T>
Tensor<T> max(const Tensor<T>& x) {
  return extreme_of_all<true>("max", x);
}

template <typename T>
Tensor<T> min(const Tensor<T>& x) {
  return extreme_of_all<false>("min", x);
}

template <typename T>
xt::xarray<std::int64_t> argmax(const Tensor<T>& x, std::int64_t dim, bool keepdim) {
  return arg_extreme<true>("argmax", x, dim, keepdim);
}

template <typename T>
xt::xarray<std::int64_t> argmin(const Tensor<T>& x, std::int64_t dim, bool keepdim) {
  return arg_extreme<false>("argmin", x, dim, keepdim);
}

namespace {
// argmax(x) (argmin when !Max) over every element, as one flat slice.
template <bool Max, typename T>
xt::xarray<std::int64_t> arg_extreme_of_all(const char* op, const Tensor<T>& x) {
  if (x.numel() == 0) {
    throw ShapeError(fmt::format("{0}: cannot take the {0} of an empty tensor (shape {1}); pass a dim", op,
                                 format_shape(x.shape())));
  }
  xt::xarray<std::int64_t> out = xt::xarray<std::int64_t>::from_shape({});
  out() = arg_extreme_slices<Max>(x.data().data(), 1, x.numel(), 1)[0];
  return out;
}
}  // namespace

template <typename T>
xt::xarray<std::int64_t> argmax(const Tensor<T>& x) {
  return arg_extreme_of_all<true>("argmax", x);
}

template <typename T>
xt::xarray<std::int64_t> argmin(const Tensor<T>& x) {
  return arg_extreme_of_all<false>("argmin", x);
}

template <typename T>
Tensor<T> cumsum(const Tensor<T>& x, std::int64_t dim) {
  const Shape& shape = x.shape();
  const std::size_t rank = shape.size();
  const std::size_t d = normalize_dim("cumsum", dim, std::max<std::size_t>(rank, 1));
  // x as [outer, count, inner] around dim (a 0-d tensor is one element).
  const AroundDim split = around_dim(shape, d);
  const std::size_t outer = split.outer, count = split.size, inner = split.inner;
  // Running sums in double along dim, one [count, inner] block at a time; forward (Reverse false) for
  // the values, from the end (Reverse true) for the gradient.
  const auto scan = [outer, count, inner](const T* in, T* out, bool reverse) {
    std::vector<double> acc(inner);
    for (std::size_t o = 0; o < outer; ++o) {
      std::fill(acc.begin(), acc.end(), 0.0);
      const T* io = in + o * count * inner;
      T* oo = out + o * count * inner;
      for (std::size_t step = 0; step < count; ++step) {
        const std::size_t r = reverse ? count - 1 - step : step;
        for (std::size_t i = 0; i < inner; ++i) {
          acc[i] += io[r * inner + i];
          oo[r * inner + i] = static_cast<T>(acc[i]);
        }
      }
    }
  };
  xt::xarray<T> values = xt::xarray<T>::from_shape(shape);
  scan(x.data().data(), values.data(), false);
  Tensor<T> out(std::move(values));
  if (should_record(x))
    record(out, "cumsum", {x}, [scan](const xt::xarray<T>& g, GradInputs<T>& in) {
      // out_j sums x_i for i <= j, so d loss / d x_i sums g_j for j >= i: the cumulative sum from the end.
      xt::xarray<T> dx = xt::xarray<T>::from_shape(g.shape());
      scan(g.data(), dx.data(), true);
      in.accumulate(0, std::move(dx));
    });
  return out;
}

namespace {
// The p-norm of n values v(0) .. v(n - 1) (read through a stride), in double; torch's special cases.
template <typename T>
double slice_norm(const T* x, std::size_t n, std::size_t stride, double p) {
  double acc = 0;
  if (p == 2) {
    for (std::size_t r = 0; r < n; ++r) acc += static_cast<double>(x[r * stride]) * x[r * stride];
    return std::sqrt(acc);
  }
  if (p == 1) {
    for (std::size_t r = 0; r < n; ++r) acc += std::abs(static_cast<double>(x[r * stride]));
    return acc;
  }
  if (std::isinf(p)) {
    for (std::size_t r = 0; r < n; ++r) {
      const double a = std::abs(static_cast<double>(x[r * stride]));
      if (a > acc || std::isnan(a)) acc = a;
      if (std::isnan(acc)) break;
    }
    return acc;
  }
  if (p == 0) {
    for (std::size_t r = 0; r < n; ++r) acc += x[r * stride] != T(0) ? 1.0 : 0.0;
    return acc;
  }
  for (std::size_t r = 0; r < n; ++r) acc += std::pow(std::abs(static_cast<double>(x[r * stride])), p);
  return std::pow(acc, 1.0 / p);
}
}  // namespace

template <typename T>
Tensor<T> norm(const Tensor<T>& x, double p, const std::vector<std::int64_t>& dims, bool keepdim) {
  if (!(p >= 0)) {
    throw ShapeError(fmt::format("norm: p must be >= 0 (or inf), got {}", p));
  }
  const ReducePlan plan = make_plan("norm", x.shape(), dims, keepdim);
  xt::xarray<T> scratch;
  const T* px = arrange(x.data(), plan, scratch);
  xt::xarray<T> values = xt::xarray<T>::from_shape(plan.out_shape);
  T* pv = values.data();
  const std::size_t count = plan.count, inner = plan.inner;
  for_each_slice(plan.outer, count, inner, [&](std::size_t o) {
    for (std::size_t i = 0; i < inner; ++i)
      pv[o * inner + i] = static_cast<T>(slice_norm(px + o * count * inner + i, count, inner, p));
  });
  Tensor<T> out(std::move(values));
  if (should_record(x))
    record(out, "norm", {x},
           [x_val = x.saved(), y = out.saved(), keep_shape = plan.keep_shape, p, plan](const xt::xarray<T>& g,
                                                                                       GradInputs<T>& in) {
             // torch 1.13's norm_backward, case by case (docs/gradients.md, "norm"): every case is 0 over a
             // slice whose norm is 0.
             const xt::xarray<T> nk = with_keep_shape(*y, keep_shape);
             const xt::xarray<T> gk = with_keep_shape(g, keep_shape);
             const auto sgn = [](T v) { return v > 0 ? T(1) : v < 0 ? T(-1) : v == 0 ? T(0) : v; };
             if (p == 0) {
               in.accumulate(0, xt::xarray<T>(xt::zeros<T>(x_val->shape())));
               return;
             }
             if (std::isinf(p)) {
               // The arg-maxima of |x| (or NaNs) of each slice share g equally: g sgn(x) / count.
               const xt::xarray<T> hit = broadcast_apply("norm", *x_val, nk, [](T v, T n) {
                 const T a = std::abs(v);
                 return a == n || std::isnan(a) ? T(1) : T(0);
               });
               xt::xarray<T> scratch2;
               const T* ph = arrange(hit, plan, scratch2);
               std::vector<double> ties;
               sum_slices(ph, plan.outer, plan.count, plan.inner, ties);
               const xt::xarray<T> share =
                   broadcast_apply("norm", gk, to_array<T>(ties, keep_shape), [](T gv, T c) { return gv / c; });
               const xt::xarray<T> sx = map(*x_val, sgn);
               const xt::xarray<T> part = zip(sx, hit, [](T s, T h) { return s * h; });
               in.accumulate(0, broadcast_apply("norm", part, share, [](T a, T b) { return a * b; }));
               return;
             }
             if (p == 1) {
               in.accumulate(0, broadcast_apply("norm", map(*x_val, sgn), gk, [](T s, T gv) { return s * gv; }));
               return;
             }
             if (p == 2) {
               // g x / norm, 0 where the norm is 0.
               const xt::xarray<T> scale = zip(gk, nk, [](T gv, T n) { return n == T(0) ? T(0) : gv / n; });
               in.accumulate(0, broadcast_apply("norm", *x_val, scale, [](T v, T s) { return v * s; }));
               return;
             }
             const T pt = static_cast<T>(p);
             if (p < 1) {
               // sgn(x) |x|^(p-1) (0 at x = 0) times g norm^(1-p).
               const xt::xarray<T> scale = zip(gk, nk, [pt](T gv, T n) { return gv * std::pow(n, 1 - pt); });
               const xt::xarray<T> xs =
                   map(*x_val, [pt, sgn](T v) { return v == T(0) ? T(0) : sgn(v) * std::pow(std::abs(v), pt - 1); });
               in.accumulate(0, broadcast_apply("norm", xs, scale, [](T a, T b) { return a * b; }));
               return;
             }
             // sgn(x) |x|^(p-1) times g / norm^(p-1), 0 where the norm is 0.
             const xt::xarray<T> scale =
                 zip(gk, nk, [pt](T gv, T n) { return n == T(0) ? T(0) : gv / std::pow(n, pt - 1); });
             const xt::xarray<T> xs = map(*x_val, [pt, sgn](T v) {
               return pt < 2 ? sgn(v) * std::pow(std::abs(v), pt - 1) : v * std::pow(std::abs(v), pt - 2);
             });
             in.accumulate(0, broadcast_apply("norm", xs, scale, [](T a, T b) { return a * b; }));
           });
  return out;
}

TAPEGRAD_INSTANTIATE(var);
TAPEGRAD_INSTANTIATE(std);
TAPEGRAD_INSTANTIATE(cumsum);
TAPEGRAD_INSTANTIATE(norm);
TAPEGRAD_INSTANTIATE(logsumexp);
#define TAPEGRAD_OVERLOADS(T)                                                           \
  template Tensor<T> sum<T>(const Tensor<T>&);                                          \
  template Tensor<T> mean<T>(const Tensor<T>&);                                         \
  template Tensor<T> sum<T>(const Tensor<T>&, const std::vector<std::int64_t>&, bool);  \
  template Tensor<T> mean<T>(const Tensor<T>&, const std::vector<std::int64_t>&, bool); \
  template ValuesIndices<T> max<T>(const Tensor<T>&, std::int64_t, bool);               \
  template ValuesIndices<T> min<T>(const Tensor<T>&, std::int64_t, bool);               \
  template Tensor<T> max<T>(const Tensor<T>&);                                          \
  template Tensor<T> min<T>(const Tensor<T>&);                                          \
  template xt::xarray<std::int64_t> argmax<T>(const Tensor<T>&, std::int64_t, bool);    \
  template xt::xarray<std::int64_t> argmin<T>(const Tensor<T>&, std::int64_t, bool);    \
  template xt::xarray<std::int64_t> argmax<T>(const Tensor<T>&);                        \
  template xt::xarray<std::int64_t> argmin<T>(const Tensor<T>&);
TAPEGRAD_OVERLOADS(float)
TAPEGRAD_OVERLOADS(double)
#undef TAPEGRAD_OVERLOADS

}  // namespace tapegrad
