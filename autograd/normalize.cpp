#include "tapegrad/autograd/normalize.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/elementwise_kernels.hpp"
#include "tapegrad/autograd/instantiate.hpp"
#include "tapegrad/autograd/parallel.hpp"
#include "tapegrad/autograd/reduce.hpp"
#include "tapegrad/autograd/shape_ops.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad {

template <typename T>
Tensor<T> normalize(const Tensor<T>& x, double p, std::int64_t dim, double eps) {
  normalize_dim("normalize", dim, x.dim());  // named here rather than by norm
  if (!(p >= 0)) throw ShapeError(fmt::format("normalize: p must be >= 0 (or inf), got {}", p));
  // torch's own composition: input / input.norm(p, dim, keepdim=True).clamp_min(eps).
  return div(x, clamp(norm(x, p, std::vector<std::int64_t>{dim}, true), static_cast<T>(eps)));
}

template <typename T>
Tensor<T> cosine_similarity(const Tensor<T>& x1, const Tensor<T>& x2, std::int64_t dim, double eps) {
  const char* op = "cosine_similarity";
  const Shape shape = broadcast_shapes(op, x1.shape(), x2.shape());
  const std::size_t rank = shape.size();
  const std::size_t d = normalize_dim(op, dim, rank);
  // Broadcasting through expand, whose backward sums each gradient back to its operand's shape.
  const Tensor<T> a = x1.shape() == shape ? x1 : expand(x1, shape);
  const Tensor<T> b = x2.shape() == shape ? x2 : expand(x2, shape);
  const AroundDim split = around_dim(shape, d);
  const std::size_t outer = split.outer, count = split.size, inner = split.inner;
  Shape out_shape(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(d));
  out_shape.insert(out_shape.end(), shape.begin() + static_cast<std::ptrdiff_t>(d) + 1, shape.end());
  // Per slice, in double: w12 = sum x1 x2, the clamped squared norms s1 and s2, and 1 / sqrt(s1 s2).
  const std::size_t slices = outer * inner;
  struct Stats {
    std::vector<double> w12, s1, s2, denom;
  };
  auto st = std::make_shared<Stats>();
  st->w12.assign(slices, 0.0);
  st->s1.assign(slices, 0.0);
  st->s2.assign(slices, 0.0);
  st->denom.assign(slices, 0.0);
  const T* pa = a.data().data();
  const T* pb = b.data().data();
  const double eps2 = eps * eps;
  xt::xarray<T> values = xt::xarray<T>::from_shape(out_shape);
  T* pv = values.data();
  detail::parallel_for(outer,
                       std::max<std::size_t>(1, detail::kElementwiseGrain / std::max<std::size_t>(1, count * inner)),
                       [&](std::size_t o0, std::size_t o1) {
                         for (std::size_t o = o0; o < o1; ++o) {
                           double* w = st->w12.data() + o * inner;
                           double* s1 = st->s1.data() + o * inner;
                           double* s2 = st->s2.data() + o * inner;
                           for (std::size_t r = 0; r < count; ++r) {
                             const T* ar = pa + (o * count + r) * inner;
                             const T* br = pb + (o * count + r) * inner;
                             for (std::size_t i = 0; i < inner; ++i) {
                               const double u = ar[i], v = br[i];
                               w[i] += u * v;
                               s1[i] += u * u;
                               s2[i] += v * v;
                             }
                           }
                           for (std::size_t i = 0; i < inner; ++i) {
                             const std::size_t k = o * inner + i;
                             st->s1[k] = std::max(st->s1[k], eps2);
                             st->s2[k] = std::max(st->s2[k], eps2);
                             st->denom[k] = 1.0 / std::sqrt(st->s1[k] * st->s2[k]);
                             pv[k] = static_cast<T>(st->w12[k] * st->denom[k]);
                           }
                         }
                       });
  Tensor<T> out(std::move(values));
  if (should_record(a, b))
    record(out, op, {a, b},
           [st, a_val = a.saved(), b_val = b.saved(), outer, count, inner](const xt::xarray<T>& g, GradInputs<T>& in) {
             // d cos / d x1 = (x2 - w12 x1 / s1) / sqrt(s1 s2) with the clamped s1, s2 held constant
             // (torch clamps them under no_grad); likewise for x2.
             const auto grad_of = [&](const xt::xarray<T>& self, const xt::xarray<T>& other,
                                      const std::vector<double>& s_self) {
               xt::xarray<T> dx = xt::xarray<T>::from_shape(self.shape());
               const T* ps = self.data();
               const T* po = other.data();
               T* pd = dx.data();
               for (std::size_t o = 0; o < outer; ++o)
                 for (std::size_t r = 0; r < count; ++r)
                   for (std::size_t i = 0; i < inner; ++i) {
                     const std::size_t k = o * inner + i, at = (o * count + r) * inner + i;
                     const double scale = static_cast<double>(g.data()[k]) * st->denom[k];
                     pd[at] = static_cast<T>(scale * (po[at] - st->w12[k] * ps[at] / s_self[k]));
                   }
               return dx;
             };
             if (in.needs(0)) in.accumulate(0, grad_of(*a_val, *b_val, st->s1));
             if (in.needs(1)) in.accumulate(1, grad_of(*b_val, *a_val, st->s2));
           });
  return out;
}

TAPEGRAD_INSTANTIATE(normalize);
TAPEGRAD_INSTANTIATE(cosine_similarity);

}  // namespace tapegrad
