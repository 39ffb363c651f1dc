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

TEST_CASE("fit_logit_weights: one part is temperature scaling, a useless part gets no weight", "[train][calibration]") {
  const xt::xarray<double> logits = {{-6, 6}, {-6, 6}, {-6, 6}, {6, -6}, {-6, 6}, {6, -6}, {6, -6}, {-6, 6}};
  const std::vector<std::int64_t> labels = {1, 1, 1, 1, 1, 0, 0, 0};
  const auto one = fit_logit_weights({logits}, labels);
  REQUIRE(one.size() == 1);
  CHECK(one[0] == Approx(1.0 / fit_temperature(logits, labels)).epsilon(1e-7));  // bisection vs Newton

  // Two models: an informative one whose logit is the label's sign plus noise, and pure noise. The
  // fitted mixture minimizes the NLL (every nearby point is worse) and leans on the informative part.
  const std::size_t n = 400;
  xt::xarray<double> good = xt::zeros<double>({n, std::size_t{2}}), noise = good;
  std::vector<std::int64_t> y(n);
  std::uint64_t state = 12345;
  const auto uniform = [&] {  // a small LCG, so the test needs nothing else
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / 9007199254740992.0;
  };
  for (std::size_t i = 0; i < n; ++i) {
    y[i] = uniform() < 0.5 ? 0 : 1;
    good(i, 1) = (y[i] == 1 ? 1.5 : -1.5) + 2.0 * (uniform() - 0.5) * 3.0;
    noise(i, 1) = 8.0 * (uniform() - 0.5);
  }
  const auto w = fit_logit_weights({good, noise}, y);
  REQUIRE(w.size() == 2);
  CHECK(w[0] > 0.3);
  CHECK(std::abs(w[1]) < 0.1 * w[0]);
  const auto nll = [&](double a, double b) {
    xt::xarray<double> mix = a * good + b * noise;
    return mean_nll(mix, y, 1.0);
  };
  for (const auto& [da, db] : {std::pair{0.01, 0.0}, {-0.01, 0.0}, {0.0, 0.01}, {0.0, -0.01}, {0.01, 0.01}}) {
    CHECK(nll(w[0], w[1]) < nll(w[0] + da, w[1] + db));
  }
  CHECK(nll(w[0], w[1]) < nll(1.0, 1.0));

  CHECK(fit_logit_weights({xt::xarray<double>::from_shape({0, 2})}, {}) == std::vector<double>{1.0});
  CHECK_THROWS_WITH(fit_logit_weights({}, labels), Catch::Contains("no parts"));
  CHECK_THROWS_WITH(fit_logit_weights({logits, xt::xarray<double>(xt::zeros<double>({8, 3}))}, labels),
                    Catch::Contains("part 1 is [8, 3] but part 0 is [8, 2]"));
  CHECK_THROWS_WITH(fit_logit_weights({logits}, {1, 1}), Catch::Contains("N = 2 labels"));
}

TEST_CASE("fit_length_temperature: each length gets the confidence its accuracy earns", "[train][calibration]") {
  // Short inputs (10 tokens) with logits +-1 and long ones (1000 tokens) with logits +-8, each right 4
  // times in 5: the best inverse temperature makes both say 0.8, s(10) = ln 4 and s(1000) = ln 4 / 8,
  // which a + b ln n fits exactly through two lengths.
  xt::xarray<double> logits = xt::zeros<double>({std::size_t{20}, std::size_t{2}});
  std::vector<std::int64_t> labels(20);
  std::vector<std::size_t> lengths(20);
  for (std::size_t i = 0; i < 20; ++i) {
    const bool is_long = i >= 10, right = i % 5 != 0;
    logits(i, 1) = is_long ? 8.0 : 1.0;
    labels[i] = right ? 1 : 0;
    lengths[i] = is_long ? 1000 : 10;
  }
  const LengthTemperature t = fit_length_temperature(logits, labels, lengths);
  CHECK(t.shortest == 10.0);
  CHECK(t.longest == 1000.0);
  CHECK(t.problem().empty());
  CHECK(t.inverse(10) == Approx(std::log(4.0)).epsilon(1e-6));
  CHECK(t.inverse(1000) == Approx(std::log(4.0) / 8.0).epsilon(1e-6));
  CHECK(t.b < 0.0);
  // Lengths outside the fitted ones are clamped to them; 0 counts as 1.
  CHECK(t.inverse(3) == t.inverse(10));
  CHECK(t.inverse(0) == t.inverse(10));
  CHECK(t.inverse(5000) == t.inverse(1000));
  const auto p = softmax_with_temperature(logits, t, lengths);
  CHECK(p(0, 1) == Approx(0.8).epsilon(1e-6));
  CHECK(p(19, 1) == Approx(0.8).epsilon(1e-6));
  // One temperature cannot do both: it is a plain fit_temperature, and its NLL is higher.
  const auto nll = [&](const xt::xarray<double>& q) {
    double total = 0;
    for (std::size_t i = 0; i < 20; ++i) total -= std::log(q(i, static_cast<std::size_t>(labels[i])));
    return total / 20.0;
  };
  const double plain = fit_temperature(logits, labels);
  CHECK(nll(p) < nll(softmax_with_temperature(logits, plain)) - 0.01);
  const auto constant = LengthTemperature::constant(plain);
  CHECK(constant.b == 0.0);
  CHECK(constant.temperature(7) == Approx(plain));
  CHECK(xt::allclose(softmax_with_temperature(logits, constant, lengths), softmax_with_temperature(logits, plain)));
  // The same lengths everywhere leave b nothing to fit: it stays at the plain temperature.
  const LengthTemperature flat = fit_length_temperature(logits, labels, std::vector<std::size_t>(20, 50));
  CHECK(flat.inverse(50) == Approx(1.0 / plain).epsilon(1e-6));

  CHECK(fit_length_temperature(xt::xarray<double>::from_shape({0, 2}), {}, {}).temperature(9) == 1.0);
  CHECK_THROWS_WITH(fit_length_temperature(logits, labels, {1, 2}), Catch::Contains("2 lengths for 20 rows"));
  CHECK_THROWS_WITH(softmax_with_temperature(logits, t, {1, 2}), Catch::Contains("for N = 2 lengths"));
  LengthTemperature bad = t;
  bad.b = -1.0;
  CHECK_THROWS_WITH(softmax_with_temperature(logits, bad, lengths), Catch::Contains("is not positive"));
  bad = t;
  bad.shortest = 0.5;
  CHECK_THAT(bad.problem(), Catch::Contains("not a range from at least 1"));
  bad.a = NAN;
  CHECK_THAT(bad.problem(), Catch::Contains("not finite"));
}

TEST_CASE("times_log_length: each row times ln of its length, a length of 0 counting as 1", "[train][calibration]") {
  const xt::xarray<double> logits = {{1.0, -2.0}, {3.0, 0.5}, {4.0, 4.0}};
  const auto scaled = times_log_length(logits, {10, 1, 0});
  CHECK(scaled(0, 0) == Approx(std::log(10.0)));
  CHECK(scaled(0, 1) == Approx(-2.0 * std::log(10.0)));
  CHECK(scaled(1, 0) == 0.0);
  CHECK(scaled(2, 1) == 0.0);
  CHECK_THROWS_WITH(times_log_length(logits, {1, 2}), Catch::Contains("logits must be [N, C] for N = 2 lengths"));
}

TEST_CASE("LengthTemperature: to_string and parse round-trip, parse names what is wrong", "[train][calibration]") {
  LengthTemperature t;
  t.a = 0.48761234567891234;
  t.b = -0.061808;
  t.shortest = 11;
  t.longest = 1024;
  const LengthTemperature back = LengthTemperature::parse(t.to_string());
  CHECK(back.a == t.a);
  CHECK(back.b == t.b);
  CHECK(back.shortest == t.shortest);
  CHECK(back.longest == t.longest);
  CHECK_THROWS_WITH(LengthTemperature::parse("1 2 3"), Catch::Contains("not four numbers"));
  CHECK_THROWS_WITH(LengthTemperature::parse("1 0 1 2 5"), Catch::Contains("not four numbers"));
  CHECK_THROWS_WITH(LengthTemperature::parse("one 0 1 2"), Catch::Contains("not four numbers"));
  CHECK_THROWS_WITH(LengthTemperature::parse("1 -1 1 100"), Catch::Contains("is not positive"));
}
