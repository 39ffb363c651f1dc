#include "tapegrad/autograd/elementwise.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tapegrad/autograd/activation_kernels.hpp"
#include "tapegrad/autograd/broadcast.hpp"
#include "tapegrad/autograd/elementwise_kernels.hpp"
#include "tapegrad/autograd/instantiate.hpp"
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

namespace {
// The share of the gradient of maximum(x, y) (of minimum when Max is false) that goes to x, for one
// pair; y's share is share<Max>(y, x). torch 1.13 masks a side only where it strictly loses, so a tie
// gives each half and a NaN on either side (no comparison holds) gives both all of it.
template <bool Max, typename T>
T share(T x, T y) {
  if (x == y) return T(0.5);
  return (Max ? x < y : x > y) ? T(0) : T(1);
}

template <bool Max, typename T>
Tensor<T> extremum(const char* op, const Tensor<T>& a, const Tensor<T>& b) {
  // A NaN on either side wins, as in torch: x when x is NaN, else y when x does not win (y may be NaN).
  Tensor<T> out(
      broadcast_apply(op, a.data(), b.data(), [](T x, T y) { return (Max ? x > y : x < y) || std::isnan(x) ? x : y; }));
  if (should_record(a, b))
    record(out, op, {a, b},
           [op, a_val = a.saved(), b_val = b.saved(), sa = a.shape(), sb = b.shape()](const xt::xarray<T>& g,
                                                                                      GradInputs<T>& in) {
             const auto times = [](T gv, T s) { return gv * s; };
             if (in.needs(0)) {
               const xt::xarray<T> s = broadcast_apply(op, *a_val, *b_val, [](T x, T y) { return share<Max>(x, y); });
               in.accumulate(0, unbroadcast(zip(g, s, times), sa));
             }
             if (in.needs(1)) {
               const xt::xarray<T> s = broadcast_apply(op, *b_val, *a_val, [](T y, T x) { return share<Max>(y, x); });
               in.accumulate(1, unbroadcast(zip(g, s, times), sb));
             }
           });
  return out;
}
}  // namespace

template <typename T>
Tensor<T> minimum(const Tensor<T>& a, const Tensor<T>& b) {
  return extremum<false>("minimum", a, b);
}

template <typename T>
Tensor<T> maximum(const Tensor<T>& a, const Tensor<T>& b) {
  return extremum<true>("maximum", a, b);
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
  // NaN propagates, as in torch, so a diverging model is not silently masked.
  Tensor<T> out(map(x.data(), [](T v) { return detail::relu_value(v); }));
  if (should_record(x))
    record(out, "relu", {x}, [y = out.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(0, zip(g, *y, [](T gv, T yv) { return detail::relu_grad_from_output(gv, yv); }));
    });
  return out;
}

template <typename T>
Tensor<T> gelu(const Tensor<T>& x, GeluApproximate approximate) {
  if (approximate == GeluApproximate::None) {
    Tensor<T> out(map(x.data(), [](T v) { return detail::gelu_value(v); }));
    if (should_record(x))
      record(out, "gelu", {x}, [x_val = x.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
        in.accumulate(0, zip(g, *x_val, [](T gv, T v) { return gv * detail::gelu_slope(v); }));
      });
    return out;
  }
  Tensor<T> out(map(x.data(), [](T v) { return detail::gelu_tanh_value(v); }));
  if (should_record(x))
    record(out, "gelu_tanh", {x}, [x_val = x.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(0, zip(g, *x_val, [](T gv, T v) { return gv * detail::gelu_tanh_slope(v); }));
    });
  return out;
}

template <typename T>
Tensor<T> abs(const Tensor<T>& x) {
  Tensor<T> out(map(x.data(), [](T v) { return std::abs(v); }));
  if (should_record(x))
    record(out, "abs", {x}, [x_val = x.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      // g * sgn(x): 0 at 0 and at NaN, where both comparisons are false.
      in.accumulate(0, zip(g, *x_val, [](T gv, T v) { return v > 0 ? gv : v < 0 ? -gv : T(0); }));
    });
  return out;
}

template <typename T>
Tensor<T> log1p(const Tensor<T>& x) {
  Tensor<T> out(map(x.data(), [](T v) { return std::log1p(v); }));
  if (should_record(x))
    record(out, "log1p", {x}, [x_val = x.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(0, zip(g, *x_val, [](T gv, T v) { return gv / (1 + v); }));
    });
  return out;
}

template <typename T>
Tensor<T> sin(const Tensor<T>& x) {
  Tensor<T> out(map(x.data(), [](T v) { return std::sin(v); }));
  if (should_record(x))
    record(out, "sin", {x}, [x_val = x.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(0, zip(g, *x_val, [](T gv, T v) { return gv * std::cos(v); }));
    });
  return out;
}

template <typename T>
Tensor<T> cos(const Tensor<T>& x) {
  Tensor<T> out(map(x.data(), [](T v) { return std::cos(v); }));
  if (should_record(x))
    record(out, "cos", {x}, [x_val = x.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(0, zip(g, *x_val, [](T gv, T v) { return -gv * std::sin(v); }));
    });
  return out;
}

template <typename T>
Tensor<T> silu(const Tensor<T>& x) {
  // torch's formula x / (1 + exp(-x)): exp overflowing to inf for x << 0 gives -0, not NaN. fast_exp
  // vectorizes in float (std::exp does not: silu took 2.6x torch's time on one thread); in double it
  // is std::exp.
  Tensor<T> out(map(x.data(), [](T v) { return v / (1 + detail::fast_exp(-v)); }));
  if (should_record(x))
    record(out, "silu", {x}, [x_val = x.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      // d/dx x s(x) = s (1 + x (1 - s)), with s = sigmoid(x).
      in.accumulate(0, zip(g, *x_val, [](T gv, T v) {
                      const T s = 1 / (1 + detail::fast_exp(-v));
                      return gv * s * (1 + v * (1 - s));
                    }));
    });
  return out;
}

template <typename T>
Tensor<T> leaky_relu(const Tensor<T>& x, detail::scalar_t<T> negative_slope) {
  Tensor<T> out(map(x.data(), [negative_slope](T v) { return v > 0 ? v : v * negative_slope; }));
  if (should_record(x))
    record(out, "leaky_relu", {x}, [x_val = x.saved(), negative_slope](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(0, zip(g, *x_val, [negative_slope](T gv, T v) { return v > 0 ? gv : gv * negative_slope; }));
    });
  return out;
}

template <typename T>
Tensor<T> softplus(const Tensor<T>& x, detail::scalar_t<T> beta, detail::scalar_t<T> threshold) {
  // fast_exp and fast_log1p vectorize in float (std::exp and std::log1p do not); in double they are
  // std::exp and std::log1p.
  Tensor<T> out(map(x.data(), [beta, threshold](T v) { return detail::softplus_value(v, beta, threshold); }));
  if (should_record(x))
    record(out, "softplus", {x}, [x_val = x.saved(), beta, threshold](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(
          0, zip(g, *x_val, [beta, threshold](T gv, T v) { return gv * detail::softplus_slope(v, beta, threshold); }));
    });
  return out;
}

template <typename T>
Tensor<T> elu(const Tensor<T>& x, detail::scalar_t<T> alpha) {
  Tensor<T> out(map(x.data(), [alpha](T v) { return detail::elu_value(v, alpha); }));
  if (should_record(x))
    record(out, "elu", {x}, [x_val = x.saved(), alpha](const xt::xarray<T>& g, GradInputs<T>& in) {
      in.accumulate(0, zip(g, *x_val, [alpha](T gv, T v) { return gv * detail::elu_slope(v, alpha); }));
    });
  return out;
}

template <typename T>
Tensor<T> clamp(const Tensor<T>& x, std::optional<detail::scalar_t<T>> min, std::optional<detail::scalar_t<T>> max) {
  if (!min && !max) throw ShapeError("clamp: at least one of min and max must be given");
  // An absent bound is an infinite one: it changes no value and, bounds being inclusive, keeps every
  // gradient (x = -inf passes with no min, as in torch).
  const T lo = min ? *min : -std::numeric_limits<T>::infinity();
  const T hi = max ? *max : std::numeric_limits<T>::infinity();
  const bool nan_bound = std::isnan(lo) || std::isnan(hi);
  // Lower bound first, then upper: min > max gives max everywhere; a NaN x fails both tests and stays.
  Tensor<T> out(map(x.data(), [lo, hi, nan_bound](T v) {
    if (nan_bound) return std::numeric_limits<T>::quiet_NaN();
    const T up = v < lo ? lo : v;
    return up > hi ? hi : up;
  }));
  if (should_record(x))
    record(out, "clamp", {x}, [x_val = x.saved(), lo, hi](const xt::xarray<T>& g, GradInputs<T>& in) {
      // Inside [lo, hi], bounds included (torch's clamp_backward); no comparison holds for a NaN.
      in.accumulate(0, zip(g, *x_val, [lo, hi](T gv, T v) { return v >= lo && v <= hi ? gv : T(0); }));
    });
  return out;
}

TAPEGRAD_INSTANTIATE(sub);
TAPEGRAD_INSTANTIATE(rsub);
TAPEGRAD_INSTANTIATE(rdiv);
TAPEGRAD_INSTANTIATE(neg);
TAPEGRAD_INSTANTIATE(exp);
TAPEGRAD_INSTANTIATE(log);
TAPEGRAD_INSTANTIATE(sqrt);
TAPEGRAD_INSTANTIATE(tanh);
TAPEGRAD_INSTANTIATE(sigmoid);
TAPEGRAD_INSTANTIATE(relu);
TAPEGRAD_INSTANTIATE(gelu);
TAPEGRAD_INSTANTIATE(minimum);
TAPEGRAD_INSTANTIATE(maximum);
TAPEGRAD_INSTANTIATE(abs);
TAPEGRAD_INSTANTIATE(log1p);
TAPEGRAD_INSTANTIATE(sin);
TAPEGRAD_INSTANTIATE(cos);
TAPEGRAD_INSTANTIATE(silu);
TAPEGRAD_INSTANTIATE(leaky_relu);
TAPEGRAD_INSTANTIATE(softplus);
TAPEGRAD_INSTANTIATE(elu);
TAPEGRAD_INSTANTIATE(clamp);
#define TAPEGRAD_OVERLOADS(T)                                       \
  template Tensor<T> add<T>(const Tensor<T>&, const Tensor<T>&);    \
  template Tensor<T> mul<T>(const Tensor<T>&, const Tensor<T>&);    \
  template Tensor<T> div<T>(const Tensor<T>&, const Tensor<T>&);    \
  template Tensor<T> pow<T>(const Tensor<T>&, const Tensor<T>&);    \
  template Tensor<T> add<T>(const Tensor<T>&, detail::scalar_t<T>); \
  template Tensor<T> mul<T>(const Tensor<T>&, detail::scalar_t<T>); \
  template Tensor<T> div<T>(const Tensor<T>&, detail::scalar_t<T>); \
  template Tensor<T> pow<T>(const Tensor<T>&, detail::scalar_t<T>);
TAPEGRAD_OVERLOADS(float)
TAPEGRAD_OVERLOADS(double)
#undef TAPEGRAD_OVERLOADS

}  // namespace tapegrad
