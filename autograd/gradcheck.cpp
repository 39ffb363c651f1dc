#include "tapegrad/autograd/gradcheck.hpp"

#include <fmt/format.h>

#include <cmath>

#include "tapegrad/autograd/shape.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad {

namespace {
double weighted_sum(const Tensor<double>& y, const xt::xarray<double>& w) {
  double s = 0;
  for (std::size_t i = 0; i < w.size(); ++i) s += w.data()[i] * y.data().data()[i];
  return s;
}
}  // namespace

GradcheckResult gradcheck(const GradcheckFunction& f, const std::vector<Tensor<double>>& inputs,
                          const GradcheckOptions& options) {
  for (auto input : inputs) input.zero_grad();
  const Tensor<double> y = f(inputs);
  if (!y.requires_grad()) {
    return {false, "gradcheck: the output does not require grad (no input requiring grad reached it)"};
  }
  Generator gen(options.seed);
  xt::xarray<double> w = Tensor<double>::normal(y.shape(), 0.0, 1.0, gen).data();
  y.backward(w);

  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Tensor<double> input = inputs[i];
    if (!input.requires_grad()) {
      if (input.has_grad()) return {false, fmt::format("gradcheck: input {} does not require grad but got one", i)};
      continue;
    }
    const xt::xarray<double> analytic =
        input.has_grad() ? input.grad() : xt::xarray<double>(xt::zeros<double>(input.shape()));
    double* values = input.mutable_data().data();
    for (std::size_t j = 0; j < input.numel(); ++j) {
      const double original = values[j];
      double plus, minus;
      {
        NoGradGuard no_grad;
        values[j] = original + options.eps;
        plus = weighted_sum(f(inputs), w);
        values[j] = original - options.eps;
        minus = weighted_sum(f(inputs), w);
        values[j] = original;
      }
      const double numeric = (plus - minus) / (2 * options.eps);
      const double a = analytic.data()[j];
      const double tolerance = options.atol + options.rtol * std::abs(numeric);
      if (!(std::abs(a - numeric) <= tolerance)) {
        return {false, fmt::format("gradcheck: input {} (shape {}), element {}: analytic {:.10g}, numeric {:.10g}, "
                                   "|difference| {:.3g} > tolerance {:.3g}",
                                   i, format_shape(input.shape()), format_position(j, input.shape()), a, numeric,
                                   std::abs(a - numeric), tolerance)};
      }
    }
  }
  return {};
}

}  // namespace tapegrad
