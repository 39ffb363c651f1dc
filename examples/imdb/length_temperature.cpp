#include "examples/imdb/length_temperature.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "examples/imdb/logit_weights.hpp"
#include "tapegrad/train/calibration.hpp"

namespace imdb {

double LengthTemperature::inverse(std::size_t length) const {
  const double n = std::clamp(static_cast<double>(std::max<std::size_t>(length, 1)), shortest, longest);
  return a + b * std::log(n);
}

LengthTemperature LengthTemperature::constant(double temperature) {
  LengthTemperature t;
  t.a = 1.0 / temperature;
  return t;
}

std::string LengthTemperature::problem() const {
  for (const double v : {a, b, shortest, longest}) {
    if (!std::isfinite(v))
      return fmt::format("a value is not finite (a {}, b {}, lengths {} to {})", a, b, shortest, longest);
  }
  if (!(shortest >= 1.0) || shortest > longest) {
    return fmt::format("the lengths {} to {} are not a range from at least 1", shortest, longest);
  }
  for (const double n : {shortest, longest}) {
    const double s = a + b * std::log(n);
    if (!(s > 0.0)) return fmt::format("the inverse temperature {} + {} ln {} = {} is not positive", a, b, n, s);
  }
  return "";
}

std::string LengthTemperature::to_string() const {
  return fmt::format("{:.17g} {:.17g} {:.17g} {:.17g}", a, b, shortest, longest);
}

LengthTemperature LengthTemperature::parse(const std::string& text) {
  std::istringstream in(text);
  LengthTemperature t;
  std::string rest;
  if (!(in >> t.a >> t.b >> t.shortest >> t.longest) || (in >> rest)) {
    throw std::invalid_argument("not four numbers \"a b shortest longest\"");
  }
  if (const auto problem = t.problem(); !problem.empty()) throw std::invalid_argument(problem);
  return t;
}

xt::xarray<double> times_log_length(const xt::xarray<double>& logits, const std::vector<std::size_t>& lengths) {
  if (logits.dimension() != 2 || logits.shape(0) != lengths.size()) {
    throw std::invalid_argument(
        fmt::format("times_log_length: logits must be [N, C] for N = {} lengths", lengths.size()));
  }
  xt::xarray<double> scaled = logits;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    const double ln_n = std::log(static_cast<double>(std::max<std::size_t>(lengths[i], 1)));
    for (std::size_t j = 0; j < logits.shape(1); ++j) scaled(i, j) *= ln_n;
  }
  return scaled;
}

LengthTemperature fit_length_temperature(const xt::xarray<double>& logits, const std::vector<std::int64_t>& labels,
                                         const std::vector<std::size_t>& lengths) {
  if (lengths.size() != labels.size()) {
    throw std::invalid_argument(
        fmt::format("fit_length_temperature: {} lengths for {} rows", lengths.size(), labels.size()));
  }
  LengthTemperature t;
  if (labels.empty()) return t;
  const auto [shortest, longest] = std::minmax_element(lengths.begin(), lengths.end());
  t.shortest = static_cast<double>(std::max<std::size_t>(*shortest, 1));
  t.longest = static_cast<double>(std::max<std::size_t>(*longest, 1));
  const auto w = fit_logit_weights({logits, times_log_length(logits, lengths)}, labels);
  t.a = w[0];
  t.b = w[1];
  if (!t.problem().empty()) {
    t.a = 1.0 / tapegrad::train::fit_temperature(logits, labels);
    t.b = 0.0;
  }
  return t;
}

xt::xarray<double> softmax_with_temperature(const xt::xarray<double>& logits, const LengthTemperature& t,
                                            const std::vector<std::size_t>& lengths) {
  if (logits.dimension() != 2 || logits.shape(0) != lengths.size()) {
    throw std::invalid_argument(
        fmt::format("softmax_with_temperature: logits must be [N, C] for N = {} lengths", lengths.size()));
  }
  if (const auto problem = t.problem(); !problem.empty()) {
    throw std::invalid_argument("softmax_with_temperature: " + problem);
  }
  xt::xarray<double> out = logits;
  const std::size_t n = out.shape(0), c = out.shape(1);
  for (std::size_t i = 0; i < n; ++i) {
    double* row = out.data() + i * c;
    const double top = *std::max_element(row, row + c), s = t.inverse(lengths[i]);
    double norm = 0.0;
    for (std::size_t j = 0; j < c; ++j) norm += (row[j] = std::exp((row[j] - top) * s));
    for (std::size_t j = 0; j < c; ++j) row[j] /= norm;
  }
  return out;
}

}  // namespace imdb
