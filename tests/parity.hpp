// Shared by the torch-parity tests: the dtype tags of the fixture files and the element-wise
// comparison that names the worst element when a result strays from torch's.
#pragma once

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <xtensor/xarray.hpp>

#include "autograd/shape.hpp"

namespace tapegrad::testing {

// The tag of T in the fixture names: "f32" or "f64".
template <typename T>
const char* dtype_tag();
template <>
inline const char* dtype_tag<float>() {
  return "f32";
}
template <>
inline const char* dtype_tag<double>() {
  return "f64";
}

// Agreement is |got - want| <= atol + rtol * |want|. rtol is a few units in the last place of the
// rounding accumulated over an op or a module's dozen ops, summed in another order than torch's
// (worst seen: ~3e-6 relative in float, ~1e-13 in double). atol is for elements near 0 by
// cancellation, e.g. a gradient summing O(1) terms of both signs, or the key bias's gradient in
// attention (exactly 0 in exact arithmetic, since softmax ignores a shift common to all keys): their
// error is eps times the size of the terms (~1e-7 in float, ~5e-16 in double), not of the result.
template <typename T>
struct Tolerance;
template <>
struct Tolerance<float> {
  static constexpr double rtol = 1e-5, atol = 1e-6;
};
template <>
struct Tolerance<double> {
  static constexpr double rtol = 1e-10, atol = 1e-12;
};

// "" when every element satisfies |got - want| <= atol + rtol * |want| (a NaN anywhere fails);
// otherwise the shapes, or the worst element as a multiple of its allowed error.
template <typename T>
std::string mismatch(const xt::xarray<T>& got, const xt::xarray<T>& want, double rtol, double atol) {
  const Shape gs(got.shape().begin(), got.shape().end()), ws(want.shape().begin(), want.shape().end());
  if (gs != ws) return "shape " + format_shape(gs) + ", torch has " + format_shape(ws);
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got.data()[i], w = want.data()[i];
    const double ratio = std::abs(g - w) / (atol + rtol * std::abs(w));
    if (!(ratio <= worst)) {  // NaN counts as the worst
      worst = ratio;
      at = i;
      if (std::isnan(ratio)) break;
    }
  }
  if (worst <= 1) return "";
  std::ostringstream out;
  out.precision(std::numeric_limits<T>::max_digits10);
  out << "flat element " << at << ": " << got.data()[at] << ", torch has " << want.data()[at] << " (" << worst
      << " times the tolerance)";
  return out.str();
}

template <typename T>
std::string mismatch(const xt::xarray<T>& got, const xt::xarray<T>& want) {
  return mismatch(got, want, Tolerance<T>::rtol, Tolerance<T>::atol);
}

}  // namespace tapegrad::testing
