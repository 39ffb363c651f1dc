#include "tapegrad/nn/init.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "tapegrad/autograd/activation_kernels.hpp"
#include "tapegrad/autograd/shape.hpp"

namespace tapegrad::nn::init {

namespace {

// A tensor whose values init may overwrite: writing into an op's output would change what its
// backward reads, with no error anywhere.
template <typename T>
void check_writable(const Tensor<T>& tensor, const char* fn) {
  if (!tensor.defined()) throw std::invalid_argument(fmt::format("init.{}: the tensor is undefined", fn));
  if (!tensor.is_leaf())
    throw std::invalid_argument(
        fmt::format("init.{}: the tensor is the output of {}, not a leaf (a parameter or a tensor made by a factory); "
                    "initialize the leaf it was computed from",
                    fn, tensor.grad_fn_name()));
}

double norm_cdf(double x) { return 0.5 * std::erfc(-x * tapegrad::detail::kInvSqrt2); }
double norm_pdf(double x) { return tapegrad::detail::kInvSqrt2Pi * std::exp(-x * x / 2); }

// The standard normal's quantile function, accurate in the far tails too: Abramowitz and Stegun
// 26.2.23 (absolute error below 4.5e-4) as the start, then Newton steps on log(cdf), which is nearly
// quadratic in the lower tail, so each step squares the error. The upper half goes through the
// symmetry, where 1 - p is exact.
double norm_ppf(double p) {
  if (p <= 0) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return std::numeric_limits<double>::infinity();
  if (p > 0.5) return -norm_ppf(1 - p);
  const double t = std::sqrt(-2 * std::log(p));
  double x = -(t - (2.515517 + 0.802853 * t + 0.010328 * t * t) /
                       (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t));
  for (int i = 0; i < 4; ++i) {
    const double c = norm_cdf(x), d = norm_pdf(x);
    if (c <= 0 || d <= 0) break;  // beyond double's range: x is as good as it gets
    x -= (std::log(c) - std::log(p)) * c / d;
  }
  return x;
}

double fan_of(const Shape& shape, FanMode mode) {
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(shape);
  return static_cast<double>(mode == FanMode::FanIn ? fan_in : fan_out);
}

}  // namespace

double calculate_gain(const std::string& nonlinearity, double param) {
  static const char* const unit_gain[] = {"linear",           "conv1d",           "conv2d",           "conv3d",
                                          "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid"};
  if (std::find(std::begin(unit_gain), std::end(unit_gain), nonlinearity) != std::end(unit_gain)) return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "selu") return 3.0 / 4.0;
  if (nonlinearity == "leaky_relu") {
    if (!std::isfinite(param))
      throw std::invalid_argument(fmt::format("calculate_gain: negative_slope {} is not a finite number", param));
    return std::sqrt(2.0 / (1 + param * param));
  }
  throw std::invalid_argument(
      fmt::format("calculate_gain: unsupported nonlinearity \"{}\" (linear, conv1d, conv2d, conv3d, conv_transpose1d, "
                  "conv_transpose2d, conv_transpose3d, sigmoid, tanh, relu, leaky_relu, selu)",
                  nonlinearity));
}

std::pair<std::size_t, std::size_t> calculate_fan_in_and_fan_out(const Shape& shape) {
  if (shape.size() < 2)
    throw ShapeError(
        fmt::format("calculate_fan_in_and_fan_out: fan in and fan out need at least 2 dimensions, got shape {}",
                    format_shape(shape)));
  std::size_t receptive_field = 1;
  for (std::size_t d = 2; d < shape.size(); ++d) receptive_field *= shape[d];
  return {shape[1] * receptive_field, shape[0] * receptive_field};
}

namespace {

// Writes draw(shape)'s values into tensor: the same draws as the factory, so that a parameter
// initialized in place equals one made by Tensor::uniform or Tensor::normal from the same generator state.
template <typename T, typename Draw>
Tensor<T> fill_drawn(Tensor<T> tensor, const char* fn, Draw draw) {
  check_writable(tensor, fn);
  if (tensor.numel() == 0) return tensor;
  tensor.mutable_data() = std::move(draw(tensor.shape()).mutable_data());
  return tensor;
}

}  // namespace

template <typename T>
Tensor<T> uniform_(Tensor<T> tensor, Generator& gen, double a, double b) {
  return fill_drawn(std::move(tensor), "uniform_", [&](const Shape& shape) {
    return Tensor<T>::uniform(shape, static_cast<T>(a), static_cast<T>(b), gen);
  });
}

template <typename T>
Tensor<T> normal_(Tensor<T> tensor, Generator& gen, double mean, double std) {
  return fill_drawn(std::move(tensor), "normal_", [&](const Shape& shape) {
    return Tensor<T>::normal(shape, static_cast<T>(mean), static_cast<T>(std), gen);
  });
}

template <typename T>
Tensor<T> constant_(Tensor<T> tensor, double value) {
  check_writable(tensor, "constant_");
  std::fill(tensor.mutable_data().begin(), tensor.mutable_data().end(), static_cast<T>(value));
  return tensor;
}

template <typename T>
Tensor<T> zeros_(Tensor<T> tensor) {
  return constant_(tensor, 0.0);
}

template <typename T>
Tensor<T> ones_(Tensor<T> tensor) {
  return constant_(tensor, 1.0);
}

template <typename T>
Tensor<T> trunc_normal_(Tensor<T> tensor, Generator& gen, double mean, double std, double a, double b) {
  check_writable(tensor, "trunc_normal_");
  if (!(a <= b))
    throw std::invalid_argument(fmt::format("init.trunc_normal_: expects a <= b, got a {} and b {}", a, b));
  if (!(std >= 0)) throw std::invalid_argument(fmt::format("init.trunc_normal_: expects std >= 0, got {}", std));
  if (tensor.numel() == 0) return tensor;
  if (std == 0) return constant_(tensor, std::clamp(mean, a, b));
  // z = ppf(u) with u uniform on [cdf(alpha), cdf(beta)]: exact for any interval, where rejection
  // sampling would loop for ever on one far in a tail. An interval in the upper tail is mirrored into
  // the lower one, where the cdf's small values keep their precision (1 - 1e-16 would not).
  double alpha = (a - mean) / std, beta = (b - mean) / std;
  const bool mirror = alpha + beta > 0;
  if (mirror) {
    const double upper_alpha = alpha;
    alpha = -beta;
    beta = -upper_alpha;
  }
  const double lo = norm_cdf(alpha), hi = norm_cdf(beta);
  for (auto& v : tensor.mutable_data()) {
    const double z = norm_ppf(lo + (hi - lo) * gen.uniform());
    // Rounding (and an infinite quantile at the ends) can step outside [a, b]: clamp, as torch does.
    v = static_cast<T>(std::clamp(mean + std * (mirror ? -z : z), a, b));
  }
  return tensor;
}

namespace {

// fan_in + fan_out, the xavier initializations' scale, after fn's checks.
template <typename T>
double xavier_fans(const Tensor<T>& tensor, const char* fn) {
  check_writable(tensor, fn);
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor.shape());
  return static_cast<double>(fan_in + fan_out);
}

}  // namespace

template <typename T>
Tensor<T> xavier_uniform_(Tensor<T> tensor, Generator& gen, double gain) {
  const T bound = static_cast<T>(gain * std::sqrt(6.0 / xavier_fans(tensor, "xavier_uniform_")));
  return uniform_(tensor, gen, -bound, bound);
}

template <typename T>
Tensor<T> xavier_normal_(Tensor<T> tensor, Generator& gen, double gain) {
  return normal_(tensor, gen, 0.0, gain * std::sqrt(2.0 / xavier_fans(tensor, "xavier_normal_")));
}

namespace {

// The kaiming initializations' gain and fan, after fn's checks.
template <typename T>
std::pair<double, double> kaiming_gain_and_fan(const Tensor<T>& tensor, const char* fn, double a, FanMode mode,
                                               const std::string& nonlinearity) {
  check_writable(tensor, fn);
  const double gain = calculate_gain(nonlinearity, a);
  return {gain, fan_of(tensor.shape(), mode)};
}

}  // namespace

template <typename T>
Tensor<T> kaiming_uniform_(Tensor<T> tensor, Generator& gen, double a, FanMode mode, const std::string& nonlinearity) {
  const auto [gain, fan] = kaiming_gain_and_fan(tensor, "kaiming_uniform_", a, mode, nonlinearity);
  const T bound = static_cast<T>(std::sqrt(3.0) * gain / std::sqrt(fan));
  return uniform_(tensor, gen, -bound, bound);
}

template <typename T>
Tensor<T> kaiming_normal_(Tensor<T> tensor, Generator& gen, double a, FanMode mode, const std::string& nonlinearity) {
  const auto [gain, fan] = kaiming_gain_and_fan(tensor, "kaiming_normal_", a, mode, nonlinearity);
  return normal_(tensor, gen, 0.0, gain / std::sqrt(fan));
}

#define TAPEGRAD_INIT(T)                                                                           \
  template Tensor<T> uniform_(Tensor<T>, Generator&, double, double);                              \
  template Tensor<T> normal_(Tensor<T>, Generator&, double, double);                               \
  template Tensor<T> constant_(Tensor<T>, double);                                                 \
  template Tensor<T> zeros_(Tensor<T>);                                                            \
  template Tensor<T> ones_(Tensor<T>);                                                             \
  template Tensor<T> trunc_normal_(Tensor<T>, Generator&, double, double, double, double);         \
  template Tensor<T> xavier_uniform_(Tensor<T>, Generator&, double);                               \
  template Tensor<T> xavier_normal_(Tensor<T>, Generator&, double);                                \
  template Tensor<T> kaiming_uniform_(Tensor<T>, Generator&, double, FanMode, const std::string&); \
  template Tensor<T> kaiming_normal_(Tensor<T>, Generator&, double, FanMode, const std::string&);
TAPEGRAD_INIT(float)
TAPEGRAD_INIT(double)
#undef TAPEGRAD_INIT

}  // namespace tapegrad::nn::init
