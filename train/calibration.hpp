/// @file
/// Calibration of a classifier's probabilities: temperature scaling fitted on held-out data (Guo et
/// al. 2017, "On Calibration of Modern Neural Networks"), the expected calibration error and the
/// reliability curve it is read from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>

namespace tapegrad::train {

/// The temperature T > 0 that minimizes the mean negative log-likelihood of softmax(logits / T) on
/// (logits [N, C], labels [N]): the NLL is convex in 1/T, so its derivative is bisected on a log scale
/// over 1/T in [1e-3, 1e3]. Returns 1 for N = 0. Throws std::invalid_argument for mismatched sizes,
/// a label outside [0, C) or a non-finite logit.
double fit_temperature(const xt::xarray<double>& logits, const std::vector<std::int64_t>& labels);

/// The weights w that minimize the mean negative log-likelihood of softmax(sum_k w_k parts[k]) on the
/// labels: how much to trust each of several models' logits [N, C] when their sum is the prediction
/// (stacking, Wolpert 1992, fitted on held-out data). With one part it is 1 / fit_temperature. The NLL
/// is convex in w; Newton's method from w = 1 with a backtracking line search, at most 100 steps (a
/// small ridge keeps the Hessian invertible when parts are collinear), stopping before a weight would
/// leave [-1e3, 1e3] (separable data has no finite optimum). Returns ones for N = 0. Throws
/// std::invalid_argument for no parts, parts of different shapes, mismatched labels, a label outside
/// [0, C) or a non-finite logit.
std::vector<double> fit_logit_weights(const std::vector<xt::xarray<double>>& parts,
                                      const std::vector<std::int64_t>& labels);

/// softmax(logits / temperature) row by row: [N, C] -> [N, C].
xt::xarray<double> softmax_with_temperature(const xt::xarray<double>& logits, double temperature);

/// Temperature scaling that depends on each input's length n (its tokens): softmax(logits * s(n)) with
/// the inverse temperature s(n) = a + b ln(clamp(n, shortest, longest)), n clamped to the lengths it was
/// fitted on. A model that sums evidence over its input (a bag of n-grams) grows more confident the
/// longer the input, so that one temperature leaves short inputs underconfident and long ones
/// overconfident; b < 0 undoes that. A plain temperature T is a = 1 / T, b = 0.
struct LengthTemperature {
  double a = 1.0, b = 0.0;
  double shortest = 1.0, longest = 1.0;

  /// s(length); a length of 0 counts as 1.
  double inverse(std::size_t length) const;
  double temperature(std::size_t length) const { return 1.0 / inverse(length); }
  /// The plain temperature T.
  static LengthTemperature constant(double temperature);
  /// The problem that makes it unusable (a non-finite value, shortest < 1 or above longest, s not
  /// positive at shortest or at longest), or an empty string.
  std::string problem() const;
  /// "a b shortest longest", each to 17 significant digits: parse() reads back the same values.
  std::string to_string() const;
  /// Reads to_string()'s form; throws std::invalid_argument for anything else or a problem().
  static LengthTemperature parse(const std::string& text);
};

/// logits [N, C] times ln n row by row, n = lengths[i] (at least 1): what b multiplies in a fit of a + b
/// ln n by fit_logit_weights. Throws std::invalid_argument for a lengths size other than N.
xt::xarray<double> times_log_length(const xt::xarray<double>& logits, const std::vector<std::size_t>& lengths);

/// The (a, b) that minimize the mean negative log-likelihood of softmax(logits * s(n)) on (logits [N,
/// C], labels, lengths [N]), fitted by fit_logit_weights over the parts {logits, logits * ln n}, with
/// shortest and longest the extreme lengths given. Falls back to the plain fit_temperature when s(n)
/// would not stay positive over [shortest, longest]. Returns the identity for N = 0. Throws
/// std::invalid_argument as fit_logit_weights does, and for a lengths size other than N.
LengthTemperature fit_length_temperature(const xt::xarray<double>& logits, const std::vector<std::int64_t>& labels,
                                         const std::vector<std::size_t>& lengths);

/// softmax(logits[i] * t.inverse(lengths[i])) row by row: [N, C] -> [N, C]. Throws
/// std::invalid_argument for a lengths size other than N or a temperature with a problem().
xt::xarray<double> softmax_with_temperature(const xt::xarray<double>& logits, const LengthTemperature& t,
                                            const std::vector<std::size_t>& lengths);

/// One equal-width bin of the confidences (the largest probability of each row).
struct ReliabilityBin {
  double lower = 0, upper = 0;   ///< the bin is (lower, upper], the first one [0, upper]
  std::size_t count = 0;         ///< rows whose confidence falls in it
  double mean_confidence = 0.0;  ///< 0 when empty
  double accuracy = 0.0;         ///< share of those rows whose most likely class is the label; 0 when empty
};

/// The expected calibration error and the bins it was computed from.
struct CalibrationReport {
  /// sum over bins of count / N * |accuracy - mean_confidence| (0 for N = 0).
  double expected_calibration_error = 0.0;
  std::vector<ReliabilityBin> bins;
};

/// The reliability curve and the expected calibration error of probabilities [N, C] against labels,
/// over `bins` equal-width bins of [0, 1] (15 as in Guo et al.). Throws std::invalid_argument for
/// mismatched sizes, bins == 0 or a label outside [0, C).
CalibrationReport calibration_report(const xt::xarray<double>& probabilities, const std::vector<std::int64_t>& labels,
                                     std::size_t bins = 15);

}  // namespace tapegrad::train
