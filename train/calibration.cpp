#include "tapegrad/train/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
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

xt::xarray<double> softmax_with_temperature(const xt::xarray<double>& logits, double temperature) {
  if (logits.dimension() != 2) throw std::invalid_argument("softmax_with_temperature: logits must be [N, C]");
  if (!(temperature > 0) || !std::isfinite(temperature)) {
    throw std::invalid_argument(fmt::format("softmax_with_temperature: temperature {} must be positive", temperature));
  }
  xt::xarray<double> out = logits;
  const std::size_t n = out.shape(0), c = out.shape(1);
  for (std::size_t i = 0; i < n; ++i) {
    double* row = out.data() + i * c;
    const double top = *std::max_element(row, row + c);
    double norm = 0.0;
    for (std::size_t j = 0; j < c; ++j) norm += (row[j] = std::exp((row[j] - top) / temperature));
    for (std::size_t j = 0; j < c; ++j) row[j] /= norm;
  }
  return out;
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
