// fit_logit_weights: with one part it is temperature scaling; with two, the fitted mixture minimizes
// the NLL and leans on the informative part; errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <utility>
#include <vector>
#include <xtensor/xarray.hpp>

#include "examples/imdb/logit_weights.hpp"
#include "tapegrad/train/calibration.hpp"

using namespace imdb;

namespace {

double mean_nll(const xt::xarray<double>& logits, const std::vector<std::int64_t>& labels, double t) {
  const auto p = tapegrad::train::softmax_with_temperature(logits, t);
  double total = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) total -= std::log(p(i, static_cast<std::size_t>(labels[i])));
  return total / double(labels.size());
}

}  // namespace

TEST_CASE("fit_logit_weights: one part is temperature scaling, a useless part gets no weight", "[imdb][calibration]") {
  const xt::xarray<double> logits = {{-6, 6}, {-6, 6}, {-6, 6}, {6, -6}, {-6, 6}, {6, -6}, {6, -6}, {-6, 6}};
  const std::vector<std::int64_t> labels = {1, 1, 1, 1, 1, 0, 0, 0};
  const auto one = fit_logit_weights({logits}, labels);
  REQUIRE(one.size() == 1);
  CHECK(one[0] == Approx(1.0 / tapegrad::train::fit_temperature(logits, labels)).epsilon(1e-7));  // bisection vs Newton

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
