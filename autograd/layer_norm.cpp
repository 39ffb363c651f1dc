#include "tapegrad/autograd/layer_norm.hpp"

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <vector>

#include "tapegrad/autograd/tape.hpp"

namespace tapegrad {

namespace {
template <typename T>
void check_affine(const char* name, const Tensor<T>& p, const Shape& normalized_shape) {
  if (p.defined() && p.shape() != normalized_shape) {
    throw ShapeError(fmt::format("layer_norm: {} of shape {} does not match normalized_shape {}", name,
                                 format_shape(p.shape()), format_shape(normalized_shape)));
  }
}
}  // namespace

template <typename T>
Tensor<T> layer_norm(const Tensor<T>& x, const Shape& normalized_shape, const Tensor<T>& weight, const Tensor<T>& bias,
                     double eps) {
  const Shape& xs = x.shape();
  if (normalized_shape.empty()) {
    throw ShapeError(
        fmt::format("layer_norm: normalized_shape must have at least one dim, got [] for input {}", format_shape(xs)));
  }
  const std::size_t k = normalized_shape.size();
  if (xs.size() < k || !std::equal(normalized_shape.begin(), normalized_shape.end(), xs.end() - k)) {
    throw ShapeError(fmt::format("layer_norm: input {} does not end in normalized_shape {}", format_shape(xs),
                                 format_shape(normalized_shape)));
  }
  check_affine("weight", weight, normalized_shape);
  check_affine("bias", bias, normalized_shape);

  const std::size_t d = numel(normalized_shape);
  const std::size_t rows = d == 0 ? 0 : x.numel() / d;
  auto mean = std::make_shared<std::vector<T>>(rows);
  auto rstd = std::make_shared<std::vector<T>>(rows);
  xt::xarray<T> y = xt::xarray<T>::from_shape(xs);
  const T* px = x.data().data();
  const T* pw = weight.defined() ? weight.data().data() : nullptr;
  const T* pb = bias.defined() ? bias.data().data() : nullptr;
  T* py = y.data();
  for (std::size_t r = 0; r < rows; ++r) {
    const T* xr = px + r * d;
    T* yr = py + r * d;
    // Two passes (mean, then squared deviations) avoid the cancellation of E[x^2] - E[x]^2.
    T m = 0;
    for (std::size_t j = 0; j < d; ++j) m += xr[j];
    m /= static_cast<T>(d);
    T v = 0;
    for (std::size_t j = 0; j < d; ++j) v += (xr[j] - m) * (xr[j] - m);
    v /= static_cast<T>(d);
    const T s = T(1) / std::sqrt(v + static_cast<T>(eps));
    (*mean)[r] = m;
    (*rstd)[r] = s;
    for (std::size_t j = 0; j < d; ++j) {
      T h = (xr[j] - m) * s;
      if (pw) h *= pw[j];
      if (pb) h += pb[j];
      yr[j] = h;
    }
  }

  Tensor<T> out(std::move(y));
  if (should_record(x, weight, bias)) {
    // x_hat is recomputed from x, mean and rstd, so the backward keeps one value per row besides x.
    record(out, "layer_norm", {x, weight, bias},
           [x_val = x.saved(), w_val = weight.defined() ? weight.saved() : nullptr, mean, rstd, rows, d,
            normalized_shape](const xt::xarray<T>& g, GradInputs<T>& in) {
             const T* px = x_val->data();
             const T* pg = g.data();
             const T* pw = w_val ? w_val->data() : nullptr;
             const bool need_x = in.needs(0), need_w = in.needs(1), need_b = in.needs(2);
             xt::xarray<T> dx, dw, db;
             if (need_x) dx = xt::xarray<T>::from_shape(x_val->shape());
             if (need_w) dw = xt::zeros<T>(normalized_shape);
             if (need_b) db = xt::zeros<T>(normalized_shape);
             for (std::size_t r = 0; r < rows; ++r) {
               const T* xr = px + r * d;
               const T* gr = pg + r * d;
               const T m = (*mean)[r], s = (*rstd)[r];
               if (need_w)
                 for (std::size_t j = 0; j < d; ++j) dw.data()[j] += gr[j] * (xr[j] - m) * s;
               if (need_b)
                 for (std::size_t j = 0; j < d; ++j) db.data()[j] += gr[j];
               if (need_x) {
                 // With gh = g * w: dx = rstd * (gh - mean(gh) - x_hat * mean(gh * x_hat)).
                 T sum_gh = 0, sum_gh_xhat = 0;
                 for (std::size_t j = 0; j < d; ++j) {
                   const T gh = pw ? gr[j] * pw[j] : gr[j];
                   sum_gh += gh;
                   sum_gh_xhat += gh * (xr[j] - m) * s;
                 }
                 const T mean_gh = sum_gh / static_cast<T>(d), mean_gh_xhat = sum_gh_xhat / static_cast<T>(d);
                 T* dr = dx.data() + r * d;
                 for (std::size_t j = 0; j < d; ++j) {
                   const T gh = pw ? gr[j] * pw[j] : gr[j];
                   dr[j] = s * (gh - mean_gh - (xr[j] - m) * s * mean_gh_xhat);
                 }
               }
             }
             if (need_x) in.accumulate(0, std::move(dx));
             if (need_w) in.accumulate(1, std::move(dw));
             if (need_b) in.accumulate(2, std::move(db));
           });
  }
  return out;
}

template Tensor<float> layer_norm<float>(const Tensor<float>&, const Shape&, const Tensor<float>&, const Tensor<float>&,
                                         double);
template Tensor<double> layer_norm<double>(const Tensor<double>&, const Shape&, const Tensor<double>&,
                                           const Tensor<double>&, double);

}  // namespace tapegrad
