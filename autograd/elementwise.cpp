#include "tapegrad/autograd/elementwise.hpp"

#include <algorithm>
#include <cmath>

#include "tapegrad/autograd/broadcast.hpp"
#include "tapegrad/autograd/elementwise_kernels.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/autograd/vector_math.hpp"

namespace tapegrad {

namespace {
// Gives g to input i summed down to its shape; g itself (copied only if the input has no gradient yet)
// when the input was not broadcast.
template <typename T>
void pass_gradient(GradInputs<T>& in, std::size_t i, const xt::xarray<T>& g, const Shape& shape) {
  if (!in.needs(i)) return;
  if (std::equal(g.shape().begin(), g.shape().end(), shape.begin(), shape.end()))
    in.accumulate(i, g);
  else
    in.accumulate(i, unbroadcast(xt::xarray<T>(g), shape));
}
}  // namespace

template <typename T>
Tensor<T> add(const Tensor<T>& a, const Tensor<T>& b) {
  Tensor<T> out(broadcast_apply("add", a.data(), b.data(), [](T x, T y) { return x + y; }));
  if (should_record(a, b))
    record(out, "add", {a, b}, [sa = a.shape(), sb = b.shape()](const xt::xarray<T>& g, GradInputs<T>& in) {
      pass_gradient(in, 0, g, sa);
      pass_gradient(in, 1, g, sb);
    });
  return out;
}

template <typename T>
Tensor<T> sub(const Tensor<T>& a, const Tensor<T>& b) {
  Tensor<T> out(broadcast_apply("sub", a.data(), b.data(), [](T x, T y) { return x - y; }));
  if (should_record(a, b))
    record(out, "sub", {a, b}, [sa = a.shape(), sb = b.shape()](const xt::xarray<T>& g, GradInputs<T>& in) {
      pass_gradient(in, 0, g, sa);
      if (in.needs(1)) in.accumulate(1, unbroadcast(map(g, [](T v) { return -v; }), sb));
    });
  return out;
}

template <typename T>
Tensor<T> mul(const Tensor<T>& a, const Tensor<T>& b) {
  Tensor<T> out(broadcast_apply("mul", a.data(), b.data(), [](T x, T y) { return x * y; }));
  if (should_record(a, b)) {
    // Each side's gradient reads the other side's value only.
    auto a_val = b.requires_grad() ? a.saved() : nullptr;
    auto b_val = a.requires_grad() ? b.saved() : nullptr;
    record(out, "mul", {a, b},
           [a_val, b_val, sa = a.shape(), sb = b.shape()](const xt::xarray<T>& g, GradInputs<T>& in) {
             const auto times = [](T x, T y) { return x * y; };
             if (in.needs(0)) in.accumulate(0, unbroadcast(broadcast_apply("mul", g, *b_val, times), sa));
             if (in.needs(1)) in.accumulate(1, unbroadcast(broadcast_apply("mul", g, *a_val, times), sb));
           });
  }
  return out;
}

template <typename T>
Tensor<T> div(const Tensor<T>& a, const Tensor<T>& b) {
  Tensor<T> out(broadcast_apply("div", a.data(), b.data(), [](T x, T y) { return x / y; }));
  if (should_record(a, b))
    record(out, "div", {a, b},
           [b_val = b.saved(), out_val = b.requires_grad() ? out.saved() : nullptr, sa = a.shape(), sb = b.shape()](
               const xt::xarray<T>& g, GradInputs<T>& in) {
             // d(a/b)/da = 1/b; d(a/b)/db = -(a/b)/b = -out/b.
             xt::xarray<T> g_over_b = broadcast_apply("div", g, *b_val, [](T x, T y) { return x / y; });
             if (in.needs(1)) {
               xt::xarray<T> db = zip(g_over_b, *out_val, [](T x, T y) { return -x * y; });
               in.accumulate(1, unbroadcast(std::move(db), sb));
             }
             if (in.needs(0)) in.accumulate(0, unbroadcast(std::move(g_over_b), sa));
           });
  return out;
}

template <typename T>
Tensor<T> pow(const Tensor<T>& a, const Tensor<T>& b) {
  Tensor<T> out(broadcast_apply("pow", a.data(), b.data(), [](T x, T y) { return std::pow(x, y); }));
  if (should_record(a, b))
    record(out, "pow", {a, b},
           [a_val = a.saved(), b_val = b.saved(), sa = a.shape(), sb = b.shape()](const xt::xarray<T>& g,
                                                                                  GradInputs<T>& in) {
             if (in.needs(0)) {  // b * a^(b-1), and 0 where b == 0 (as torch: not 0 * 0^-1 = NaN)
               xt::xarray<T> da = broadcast_apply("pow", *a_val, *b_val,
                                                  [](T x, T y) { return y == T(0) ? T(0) : y * std::pow(x, y - 1); });
               in.accumulate(0, unbroadcast(zip(da, g, [](T x, T y) { return x * y; }), sa));
             }
             if (in.needs(1)) {  // a^b * log a, and 0 where a == 0 and b >= 0 (as torch: not 0 * -inf = NaN)
               xt::xarray<T> db = broadcast_apply("pow", *a_val, *b_val, [](T x, T y) {
                 return x == T(0) && y >= T(0) ? T(0) : std::pow(x, y) * std::log(x);
               });
               in.accumulate(1, unbroadcast(zip(db, g, [](T x, T y) { return x * y; }), sb));
             }
           });
  return out;
}

template <typename T>
Tensor<T> add(const Tensor<T>& a, detail::scalar_t<T> s) {
  Tensor<T> out(map(a.data(), [s](T x) { return x + s; }));
  if (should_record(a))
    record(out, "add_scalar", {a}, [](const xt::xarray<T>& g, GradInputs<T>& in) { in.accumulate(0, g); });
  return out;
}

template <typename T>
Tensor<T> mul(const Tensor<T>& a, detail::scalar_t<T> s) {
  Tensor<T> out(map(a.data(), [s](T x) { return x * s; }));
  if (should_record(a))
    record(out, "mul_scalar", {a},
           [s](const xt::xarray<T>& g, GradInputs<T>& in) { in.accumulate(0, map(g, [s](T v) { return v * s; })); });
  return out;
}

template <typename T>
Tensor<T> pow(const Tensor<T>& a, detail::scalar_t<T> exponent) {
  Tensor<T> out(map(a.data(), [exponent](T x) { return std::pow(x, exponent); }));
  if (should_record(a))
    record(out, "pow_scalar", {a}, [a_val = a.saved(), exponent](const xt::xarray<T>& g, GradInputs<T>& in) {
      // x^0 is constant: its gradient is 0 even at x = 0, where exponent * x^-1 would be NaN (as torch).
      if (exponent == T(0)) {
        in.accumulate(0, xt::xarray<T>(xt::zeros<T>(g.shape())));
        return;
      }
      in.accumulate(0, zip(g, *a_val, [exponent](T gv, T x) { return gv * exponent * std::pow(x, exponent - 1); }));
    });
  return out;
}

template <typename T>
Tensor<T> rsub(const Tensor<T>& a, detail::scalar_t<T> s) {
  Tensor<T> out(map(a.data(), [s](T x) { return s - x; }));
  if (should_record(a))
    record(out, "rsub_scalar", {a},
           [](const xt::xarray<T>& g, GradInputs<T>& in) { in.accumulate(0, map(g, [](T v) { return -v; })); });
  return out;
}

template <typename T>
Tensor<T> div(const Tensor<T>& a, detail::scalar_t<T> s) {
  // A true division, not a * (1 / s): 0.3 / 0.1 must round like torch's (2.9999999999999996, not 3).
  Tensor<T> out(map(a.data(), [s](T x) { return x / s; }));
  if (should_record(a))
    record(out, "div_scalar", {a},
           [s](const xt::xarray<T>& g, GradInputs<T>& in) { in.accumulate(0, map(g, [s](T v) { return v / s; })); });
  return out;
}

template <typename T>
Tensor<T> rdiv(const Tensor<T>& a, detail::scalar_t<T> s) {
  Tensor<T> out(map(a.data(), [s](T x) { return s / x; }));
  if (should_record(a))
    record(out, "rdiv_scalar", {a},
           [a_val = a.saved(), out_val = out.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
             // d(s/a)/da = -s/a^2 = -out/a.
             xt::xarray<T> da = zip(*out_val, *a_val, [](T y, T x) { return -y / x; });
             in.accumulate(0, zip(da, g, [](T x, T y) { return x * y; }));
           });
  return out;
}

template <typename T>
Tensor<T> neg(const Tensor<T>& x) {
  return mul(x, T(-1));
}

template <typename T>
Tensor<T> exp(const Tensor<T>& x) {
  Tensor<T> out(map(x.data(), [](T v) { return std::exp(v); }));
  if (should_record(x))
    record(out, "exp", {x}, [y = out.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(0, zip(g, *y, [](T gv, T yv) { return gv * yv; }));
    });
  return out;
}

template <typename T>
Tensor<T> log(const Tensor<T>& x) {
  Tensor<T> out(map(x.data(), [](T v) { return std::log(v); }));
  if (should_record(x))
    record(out, "log", {x}, [x_val = x.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(0, zip(g, *x_val, [](T gv, T xv) { return gv / xv; }));
    });
  return out;
}

template <typename T>
Tensor<T> sqrt(const Tensor<T>& x) {
  Tensor<T> out(map(x.data(), [](T v) { return std::sqrt(v); }));
  if (should_record(x))
    record(out, "sqrt", {x}, [y = out.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(0, zip(g, *y, [](T gv, T yv) { return gv / (2 * yv); }));
    });
  return out;
}

template <typename T>
Tensor<T> tanh(const Tensor<T>& x) {
  Tensor<T> out(map(x.data(), [](T v) { return std::tanh(v); }));
  if (should_record(x))
    record(out, "tanh", {x}, [y = out.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(0, zip(g, *y, [](T gv, T yv) { return gv * (1 - yv * yv); }));
    });
  return out;
}

template <typename T>
Tensor<T> sigmoid(const Tensor<T>& x) {
  // Written so that neither branch overflows: exp of a non-positive number only.
  Tensor<T> out(map(x.data(), [](T v) {
    if (v >= 0) return T(1) / (T(1) + std::exp(-v));
    const T e = std::exp(v);
    return e / (T(1) + e);
  }));
  if (should_record(x))
    record(out, "sigmoid", {x}, [y = out.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(0, zip(g, *y, [](T gv, T yv) { return gv * yv * (1 - yv); }));
    });
  return out;
}

template <typename T>
Tensor<T> relu(const Tensor<T>& x) {
  // NaN propagates (v <= 0 is false for NaN), as in torch, so a diverging model is not silently masked.
  Tensor<T> out(map(x.data(), [](T v) { return v <= 0 ? T(0) : v; }));
  if (should_record(x))
    record(out, "relu", {x}, [y = out.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(0, zip(g, *y, [](T gv, T yv) { return yv <= 0 ? T(0) : gv; }));
    });
  return out;
}

namespace {
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kCubic = 0.044715;

// GELU's pieces per element. double keeps std::erf, std::exp and std::tanh (gradchecks and the
// double fixtures compare to 1e-12); float uses the vectorizable fast_erfc / fast_exp of
// autograd/vector_math.hpp, branch-free, so that the loops vectorize (std::erf does not).
// x Phi(x) and its derivative Phi(x) + x phi(x).
double gelu_value(double v) { return 0.5 * v * (1 + std::erf(v * kInvSqrt2)); }
double gelu_slope(double v) {
  const double cdf = 0.5 * (1 + std::erf(v * kInvSqrt2));
  const double pdf = kInvSqrt2Pi * std::exp(-0.5 * v * v);
  return cdf + v * pdf;
}
// Phi(x) = erfc(-x / sqrt 2) / 2 has no cancellation for x << 0, where 1 + erf(x / sqrt 2) has.
float gelu_value(float v) { return v * (0.5f * detail::fast_erfc(v * -static_cast<float>(kInvSqrt2))); }
float gelu_slope(float v) {
  const float cdf = 0.5f * detail::fast_erfc(v * -static_cast<float>(kInvSqrt2));
  const float pdf = static_cast<float>(kInvSqrt2Pi) * detail::fast_exp(-0.5f * v * v);
  return cdf + v * pdf;
}
// The tanh approximation 0.5 x (1 + tanh(u)), u = sqrt(2 / pi) (x + 0.044715 x^3), and its derivative.
double gelu_tanh_value(double v) { return 0.5 * v * (1 + std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v))); }
double gelu_tanh_slope(double v) {
  const double t = std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v));
  const double dinner = kSqrt2OverPi * (1 + 3 * kCubic * v * v);
  return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * dinner;
}
// In float, (1 + tanh(u)) / 2 = s = 1 / (1 + e) with e = exp(-2 u), which keeps its relative accuracy
// for u << 0; the derivative is s + 2 x s (1 - s) du/dx, with 1 - s = 1 / (1 + 1 / e) (1 - s itself
// cancels when s is near 1; both forms are exact at e = 0 and e = inf).
float gelu_tanh_exp(float v) {
  const float u = static_cast<float>(kSqrt2OverPi) * (v + static_cast<float>(kCubic) * v * v * v);
  return detail::fast_exp(-2.0f * u);
}
float gelu_tanh_value(float v) { return v / (1.0f + gelu_tanh_exp(v)); }
float gelu_tanh_slope(float v) {
  const float e = gelu_tanh_exp(v);
  const float s = 1.0f / (1.0f + e), one_minus_s = 1.0f / (1.0f + 1.0f / e);
  const float dinner = static_cast<float>(kSqrt2OverPi) * (1.0f + static_cast<float>(3 * kCubic) * v * v);
  return s + 2.0f * v * s * one_minus_s * dinner;
}
}  // namespace

template <typename T>
Tensor<T> gelu(const Tensor<T>& x, GeluApproximate approximate) {
  if (approximate == GeluApproximate::None) {
    Tensor<T> out(map(x.data(), [](T v) { return gelu_value(v); }));
    if (should_record(x))
      record(out, "gelu", {x}, [x_val = x.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
        in.accumulate(0, zip(g, *x_val, [](T gv, T v) { return gv * gelu_slope(v); }));
      });
    return out;
  }
  Tensor<T> out(map(x.data(), [](T v) { return gelu_tanh_value(v); }));
  if (should_record(x))
    record(out, "gelu_tanh", {x}, [x_val = x.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(0, zip(g, *x_val, [](T gv, T v) { return gv * gelu_tanh_slope(v); }));
    });
  return out;
}

#define TAPEGRAD_INSTANTIATE(T)                                      \
  template Tensor<T> add<T>(const Tensor<T>&, const Tensor<T>&);     \
  template Tensor<T> sub<T>(const Tensor<T>&, const Tensor<T>&);     \
  template Tensor<T> mul<T>(const Tensor<T>&, const Tensor<T>&);     \
  template Tensor<T> div<T>(const Tensor<T>&, const Tensor<T>&);     \
  template Tensor<T> pow<T>(const Tensor<T>&, const Tensor<T>&);     \
  template Tensor<T> add<T>(const Tensor<T>&, detail::scalar_t<T>);  \
  template Tensor<T> mul<T>(const Tensor<T>&, detail::scalar_t<T>);  \
  template Tensor<T> div<T>(const Tensor<T>&, detail::scalar_t<T>);  \
  template Tensor<T> pow<T>(const Tensor<T>&, detail::scalar_t<T>);  \
  template Tensor<T> rsub<T>(const Tensor<T>&, detail::scalar_t<T>); \
  template Tensor<T> rdiv<T>(const Tensor<T>&, detail::scalar_t<T>); \
  template Tensor<T> neg<T>(const Tensor<T>&);                       \
  template Tensor<T> exp<T>(const Tensor<T>&);                       \
  template Tensor<T> log<T>(const Tensor<T>&);                       \
  template Tensor<T> sqrt<T>(const Tensor<T>&);                      \
  template Tensor<T> tanh<T>(const Tensor<T>&);                      \
  template Tensor<T> sigmoid<T>(const Tensor<T>&);                   \
  template Tensor<T> relu<T>(const Tensor<T>&);                      \
  template Tensor<T> gelu<T>(const Tensor<T>&, GeluApproximate);
TAPEGRAD_INSTANTIATE(float)
TAPEGRAD_INSTANTIATE(double)
#undef TAPEGRAD_INSTANTIATE

}  // namespace tapegrad
