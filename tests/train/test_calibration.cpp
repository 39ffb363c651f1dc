// Temperature scaling and the expected calibration error: hand-computed values, the fitted
// temperature's optimality, and errors.
#include <catch2/catch.hpp>
#include <cmath>

#include "tapegrad/train/calibration.hpp"

using namespace tapegrad::train;

namespace {

double mean_nll(const xt::xarray<double>& logits, const std::vector<std::int64_t>& labels, double t) {
  const auto p = softmax_with_temperature(logits, t);
  double total = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) total -= std::log(p(i, static_cast<std::size_t>(labels[i])));
  return total / double(labels.size());
}

}  // namespace

TEST_CASE("calibration_report: bins, accuracy, confidence and ECE by hand", "[train][calibration]") {
  // Confidences 0.95 (right), 0.9 (wrong), 0.6 (right), 0.55 (wrong) with 2 bins (0, 0.5] and (0.5, 1].
  const xt::xarray<double> p = {{0.05, 0.95}, {0.9, 0.1}, {0.4, 0.6}, {0.55, 0.45}};
  const std::vector<std::int64_t> labels = {1, 1, 1, 1};
  const auto r = calibration_report(p, labels, 2);
  REQUIRE(r.bins.size() == 2);
  CHECK(r.bins[0].count == 0);
  CHECK(r.bins[1].count == 4);
  CHECK(r.bins[1].accuracy == Approx(0.5));
  CHECK(r.bins[1].mean_confidence == Approx(0.75));
  CHECK(r.expected_calibration_error == Approx(0.25));
  // 15 bins: 0.95 -> (14/15, 1], 0.9 -> (13/15, 14/15], 0.6 -> (8/15, 9/15], 0.55 -> (8/15, 9/15].
  const auto fine = calibration_report(p, labels, 15);
  CHECK(fine.bins[14].count == 1);
  CHECK(fine.bins[13].count == 1);
  CHECK(fine.bins[8].count == 2);
  CHECK(fine.expected_calibration_error == Approx((0.05 + 0.9 + std::abs(0.5 - 0.575) * 2) / 4));
  CHECK_THROWS_WITH(calibration_report(p, {1, 1}, 15), Catch::Contains("N = 2 labels"));
  CHECK_THROWS_WITH(calibration_report(p, {1, 1, 2, 1}, 15), Catch::Contains("label 2 of row 2 is outside [0, 2)"));
  CHECK_THROWS_WITH(calibration_report(p, labels, 0), Catch::Contains("bins must be positive"));
}

TEST_CASE("fit_temperature minimizes the validation NLL and softens overconfident logits", "[train][calibration]") {
  // Overconfident: logits of +-6 but only 3 of 4 right.
  const xt::xarray<double> logits = {{-6, 6}, {-6, 6}, {-6, 6}, {6, -6}, {-6, 6}, {6, -6}, {6, -6}, {-6, 6}};
  const std::vector<std::int64_t> labels = {1, 1, 1, 1, 1, 0, 0, 0};
  const double t = fit_temperature(logits, labels);
  CHECK(t > 1.0);
  // At the optimum, the probability of the predicted class equals the accuracy (0.75): 12 / T = log 3.
  CHECK(t == Approx(12.0 / std::log(3.0)).epsilon(1e-9));
  for (const double other : {0.5 * t, 0.9 * t, 1.1 * t, 2.0 * t})
    CHECK(mean_nll(logits, labels, t) < mean_nll(logits, labels, other));
  CHECK(fit_temperature(xt::xarray<double>::from_shape({0, 2}), {}) == 1.0);
  CHECK_THROWS_WITH(fit_temperature(xt::xarray<double>({{0.0, NAN}}), {0}), Catch::Contains("not finite"));
  CHECK_THROWS_WITH(softmax_with_temperature(logits, 0.0), Catch::Contains("temperature 0 must be positive"));
}
