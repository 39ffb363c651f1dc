/// @file
/// Calibration of a classifier's probabilities: temperature scaling fitted on held-out data (Guo et
/// al. 2017, "On Calibration of Modern Neural Networks"), the expected calibration error and the
/// reliability curve it is read from.
#pragma once

#include <cstdint>
#include <vector>
#include <xtensor/xarray.hpp>

namespace tapegrad::train {

/// The temperature T > 0 that minimizes the mean negative log-likelihood of softmax(logits / T) on
/// (logits [N, C], labels [N]): the NLL is convex in 1/T, so its derivative is bisected on a log scale
/// over 1/T in [1e-3, 1e3]. Returns 1 for N = 0. Throws std::invalid_argument for mismatched sizes,
/// a label outside [0, C) or a non-finite logit.
double fit_temperature(const xt::xarray<double>& logits, const std::vector<std::int64_t>& labels);

/// softmax(logits / temperature) row by row: [N, C] -> [N, C].
xt::xarray<double> softmax_with_temperature(const xt::xarray<double>& logits, double temperature);

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
