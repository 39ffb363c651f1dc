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

}  // namespace tapegrad::testing
