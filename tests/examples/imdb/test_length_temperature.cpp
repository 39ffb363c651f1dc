// The length-dependent temperature: its fit (each length gets the confidence its accuracy earns), the
// softmax it scales, times_log_length, and its text form.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>
#include <xtensor/xarray.hpp>

#include "examples/imdb/length_temperature.hpp"
#include "tapegrad/train/calibration.hpp"

using namespace imdb;

TEST_CASE("fit_length_temperature: each length gets the confidence its accuracy earns", "[imdb][calibration]") {
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
  const double plain = tapegrad::train::fit_temperature(logits, labels);
  CHECK(nll(p) < nll(tapegrad::train::softmax_with_temperature(logits, plain)) - 0.01);
  const auto constant = LengthTemperature::constant(plain);
  CHECK(constant.b == 0.0);
  CHECK(constant.temperature(7) == Approx(plain));
  CHECK(xt::allclose(softmax_with_temperature(logits, constant, lengths),
                     tapegrad::train::softmax_with_temperature(logits, plain)));
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

TEST_CASE("times_log_length: each row times ln of its length, a length of 0 counting as 1", "[imdb][calibration]") {
  const xt::xarray<double> logits = {{1.0, -2.0}, {3.0, 0.5}, {4.0, 4.0}};
  const auto scaled = times_log_length(logits, {10, 1, 0});
  CHECK(scaled(0, 0) == Approx(std::log(10.0)));
  CHECK(scaled(0, 1) == Approx(-2.0 * std::log(10.0)));
  CHECK(scaled(1, 0) == 0.0);
  CHECK(scaled(2, 1) == 0.0);
  CHECK_THROWS_WITH(times_log_length(logits, {1, 2}), Catch::Contains("logits must be [N, C] for N = 2 lengths"));
}

TEST_CASE("LengthTemperature: to_string and parse round-trip, parse names what is wrong", "[imdb][calibration]") {
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
