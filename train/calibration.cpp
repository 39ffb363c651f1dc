#include "tapegrad/train/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace tapegrad::train {

namespace {

void check(const char* what, const xt::xarray<double>& rows, const std::vector<std::int64_t>& labels) {
  if (rows.dimension() != 2 || rows.shape(0) != labels.size()) {
    throw std::invalid_argument(fmt::format("{}: expected [N, C] values for N = {} labels, got {} dimensions", what,
                                            labels.size(), rows.dimension()));
  }
  const auto classes = static_cast<std::int64_t>(rows.shape(1));
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      throw std::invalid_argument(
          fmt::format("{}: label {} of row {} is outside [0, {})", what, labels[i], i, classes));
    }
  }
  for (const double v : rows) {
    if (!std::isfinite(v)) throw std::invalid_argument(fmt::format("{}: a value is not finite ({})", what, v));
  }
}

// d/d(beta) of the mean NLL of softmax(beta * logits): mean over rows of E_p[z] - z_label. It increases
// with beta (its derivative is the mean variance of z under p), which is what bisection needs.
double nll_slope(const xt::xarray<double>& logits, const std::vector<std::int64_t>& labels, double beta) {
  const std::size_t n = logits.shape(0), c = logits.shape(1);
  const double* z = logits.data();
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double* row = z + i * c;
    const double top = *std::max_element(row, row + c);
    double norm = 0.0, expected = 0.0;
    for (std::size_t j = 0; j < c; ++j) {
      const double w = std::exp(beta * (row[j] - top));
      norm += w;
      expected += w * row[j];
    }
    total += expected / norm - row[labels[i]];
  }
  return total / static_cast<double>(n);
}

// softmax(scale(i, logits[i] - max)) row by row: the temperature's division or product is the caller's.
template <typename Scale>
xt::xarray<double> softmax_rows(const xt::xarray<double>& logits, Scale&& scale) {
  xt::xarray<double> out = logits;
  const std::size_t n = out.shape(0), c = out.shape(1);
  for (std::size_t i = 0; i < n; ++i) {
    double* row = out.data() + i * c;
    const double top = *std::max_element(row, row + c);
    double norm = 0.0;
    for (std::size_t j = 0; j < c; ++j) norm += (row[j] = std::exp(scale(i, row[j] - top)));
    for (std::size_t j = 0; j < c; ++j) row[j] /= norm;
  }
  return out;
}

}  // namespace

double fit_temperature(const xt::xarray<double>& logits, const std::vector<std::int64_t>& labels) {
  check("fit_temperature", logits, labels);
  if (labels.empty()) return 1.0;
  double lo = std::log(1e-3), hi = std::log(1e3);                 // over log(beta), beta = 1 / T
  if (nll_slope(logits, labels, std::exp(hi)) <= 0) return 1e-3;  // separable: sharper is always better
  if (nll_slope(logits, labels, std::exp(lo)) >= 0) return 1e3;
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (nll_slope(logits, labels, std::exp(mid)) < 0 ? lo : hi) = mid;
  }
  return 1.0 / std::exp(0.5 * (lo + hi));
}

namespace {

// The mean NLL of softmax(sum_k w_k parts[k]) and, when asked, its gradient and Hessian in w.
double stacked_nll(const std::vector<xt::xarray<double>>& parts, const std::vector<std::int64_t>& labels,
                   const std::vector<double>& w, std::vector<double>* gradient, std::vector<double>* hessian) {
  const std::size_t k = parts.size(), n = labels.size(), c = parts[0].shape(1);
  std::vector<double> z(c), p(c), expected(k);
  double nll = 0.0;
  if (gradient) gradient->assign(k, 0.0);
  if (hessian) hessian->assign(k * k, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < c; ++j) {
      z[j] = 0.0;
      for (std::size_t a = 0; a < k; ++a) z[j] += w[a] * parts[a](i, j);
    }
    const double top = *std::max_element(z.begin(), z.end());
    double norm = 0.0;
    for (std::size_t j = 0; j < c; ++j) norm += (p[j] = std::exp(z[j] - top));
    for (std::size_t j = 0; j < c; ++j) p[j] /= norm;
    nll += top + std::log(norm) - z[static_cast<std::size_t>(labels[i])];
    if (!gradient) continue;
    // d/dw_a = E_p[x_a] - x_a[label]; d2/dw_a dw_b = Cov_p(x_a, x_b), x_a the row of part a.
    for (std::size_t a = 0; a < k; ++a) {
      expected[a] = 0.0;
      for (std::size_t j = 0; j < c; ++j) expected[a] += p[j] * parts[a](i, j);
      (*gradient)[a] += expected[a] - parts[a](i, static_cast<std::size_t>(labels[i]));
    }
    if (!hessian) continue;
    for (std::size_t a = 0; a < k; ++a)
      for (std::size_t b = 0; b < k; ++b) {
        double second = 0.0;
        for (std::size_t j = 0; j < c; ++j) second += p[j] * parts[a](i, j) * parts[b](i, j);
        (*hessian)[a * k + b] += second - expected[a] * expected[b];
      }
  }
  const double scale = 1.0 / static_cast<double>(n);
  if (gradient)
    for (auto& g : *gradient) g *= scale;
  if (hessian)
    for (auto& h : *hessian) h *= scale;
  return nll * scale;
}

// Solves h x = g for a small symmetric positive semi-definite h by Gaussian elimination with partial
// pivoting, after adding `ridge` to the diagonal.
std::vector<double> solve(std::vector<double> h, std::vector<double> g, double ridge) {
  const std::size_t k = g.size();
  for (std::size_t a = 0; a < k; ++a) h[a * k + a] += ridge;
  for (std::size_t col = 0; col < k; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < k; ++r)
      if (std::abs(h[r * k + col]) > std::abs(h[pivot * k + col])) pivot = r;
    for (std::size_t j = 0; j < k; ++j) std::swap(h[col * k + j], h[pivot * k + j]);
    std::swap(g[col], g[pivot]);
    for (std::size_t r = col + 1; r < k; ++r) {
      const double f = h[r * k + col] / h[col * k + col];
      for (std::size_t j = col; j < k; ++j) h[r * k + j] -= f * h[col * k + j];
      g[r] -= f * g[col];
    }
  }
  std::vector<double> x(k);
  for (std::size_t r = k; r-- > 0;) {
    double v = g[r];
    for (std::size_t j = r + 1; j < k; ++j) v -= h[r * k + j] * x[j];
    x[r] = v / h[r * k + r];
  }
  return x;
}

}  // namespace

std::vector<double> fit_logit_weights(const std::vector<xt::xarray<double>>& parts,
                                      const std::vector<std::int64_t>& labels) {
  if (parts.empty()) throw std::invalid_argument("fit_logit_weights: no parts");
  for (std::size_t a = 0; a < parts.size(); ++a) {
    check("fit_logit_weights", parts[a], labels);
    if (parts[a].shape() != parts[0].shape()) {
      throw std::invalid_argument(fmt::format("fit_logit_weights: part {} is [{}, {}] but part 0 is [{}, {}]", a,
                                              parts[a].shape(0), parts[a].shape(1), parts[0].shape(0),
                                              parts[0].shape(1)));
    }
  }
  const std::size_t k = parts.size();
  std::vector<double> w(k, 1.0);
  if (labels.empty()) return w;
  std::vector<double> gradient, hessian;
  double nll = stacked_nll(parts, labels, w, &gradient, &hessian);
  for (int step = 0; step < 100; ++step) {
    double trace = 0.0;
    for (std::size_t a = 0; a < k; ++a) trace += hessian[a * k + a];
    const std::vector<double> direction = solve(hessian, gradient, 1e-9 * std::max(trace, 1e-12));
    double decrement = 0.0;  // the Newton decrement, g . H^-1 g: how much the NLL can still fall
    for (std::size_t a = 0; a < k; ++a) decrement += gradient[a] * direction[a];
    if (!(decrement > 1e-14)) break;
    // Backtracking (Armijo) line search along -direction.
    double t = 1.0, next_nll = nll;
    std::vector<double> next(k);
    for (int halving = 0; halving < 60; ++halving, t *= 0.5) {
      for (std::size_t a = 0; a < k; ++a) next[a] = w[a] - t * direction[a];
      next_nll = stacked_nll(parts, labels, next, nullptr, nullptr);
      if (next_nll <= nll - 0.25 * t * decrement) break;
    }
    if (!(next_nll < nll)) break;
    // Separable data would push the weights without end: stop at the edge of [-1e3, 1e3], the range
    // fit_temperature searches.
    if (std::any_of(next.begin(), next.end(), [](double v) { return std::abs(v) > 1e3; })) break;
    w = next;
    nll = stacked_nll(parts, labels, w, &gradient, &hessian);
  }
  return w;
}

xt::xarray<double> softmax_with_temperature(const xt::xarray<double>& logits, double temperature) {
  if (logits.dimension() != 2) throw std::invalid_argument("softmax_with_temperature: logits must be [N, C]");
  if (!(temperature > 0) || !std::isfinite(temperature)) {
    throw std::invalid_argument(fmt::format("softmax_with_temperature: temperature {} must be positive", temperature));
  }
  return softmax_rows(logits, [temperature](std::size_t, double z) { return z / temperature; });
}

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
  check("fit_length_temperature", logits, labels);
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
    t.a = 1.0 / fit_temperature(logits, labels);
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
  return softmax_rows(logits, [&](std::size_t i, double z) { return z * t.inverse(lengths[i]); });
}

CalibrationReport calibration_report(const xt::xarray<double>& probabilities, const std::vector<std::int64_t>& labels,
                                     std::size_t bins) {
  check("calibration_report", probabilities, labels);
  if (bins == 0) throw std::invalid_argument("calibration_report: bins must be positive");
  CalibrationReport report;
  report.bins.resize(bins);
  for (std::size_t b = 0; b < bins; ++b) {
    report.bins[b].lower = double(b) / double(bins);
    report.bins[b].upper = double(b + 1) / double(bins);
  }
  const std::size_t n = labels.size(), c = probabilities.shape(1);
  std::vector<double> confidence_sum(bins, 0.0), correct(bins, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const double* row = probabilities.data() + i * c;
    const auto best = static_cast<std::size_t>(std::max_element(row, row + c) - row);
    const double confidence = row[best];
    // Bin b holds (b / bins, (b + 1) / bins]; a confidence of 0 goes to the first bin.
    auto b = static_cast<std::size_t>(std::ceil(confidence * double(bins))) - (confidence > 0 ? 1 : 0);
    b = std::min(b, bins - 1);
    ++report.bins[b].count;
    confidence_sum[b] += confidence;
    correct[b] += static_cast<std::int64_t>(best) == labels[i] ? 1.0 : 0.0;
  }
  for (std::size_t b = 0; b < bins; ++b) {
    auto& bin = report.bins[b];
    if (bin.count == 0) continue;
    bin.mean_confidence = confidence_sum[b] / double(bin.count);
    bin.accuracy = correct[b] / double(bin.count);
    report.expected_calibration_error += double(bin.count) / double(n) * std::abs(bin.accuracy - bin.mean_confidence);
  }
  return report;
}

}  // namespace tapegrad::train
