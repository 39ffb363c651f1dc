// dropout: identity in eval, the kept fraction and scale, reproducibility, the mask rule, gradcheck and errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <type_traits>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/ops.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("dropout in eval or with p = 0 is the identity and draws nothing", "[dropout]") {
  Generator gen(3);
  const auto before = gen.state();
  auto x = Tensor<double>::from_vector({1, 2, 3}, {3}, true);
  auto eval = dropout(x, 0.5, /*training=*/false, gen);
  CHECK(eval.same_as(x));
  auto zero = dropout(x, 0.0, /*training=*/true, gen);
  CHECK(zero.same_as(x));
  CHECK(gen.state().s == before.s);
  (zero * 2.0).backward(values({1, 1, 1}, {3}));
  CHECK(allclose(x.grad(), values({2, 2, 2}, {3})));
}

TEST_CASE("dropout zeroes about p of the elements and scales the rest by 1 / (1 - p)", "[dropout]") {
  Generator gen(17);
  const double p = 0.3;
  const std::size_t n = 100000;
  auto x = Tensor<double>::ones({n}, true);
  auto y = dropout(x, p, true, gen);
  std::size_t zeros = 0, badly_scaled = 0;
  double total = 0;
  for (double v : y.data()) {
    if (v == 0)
      ++zeros;
    else if (std::abs(v - 1 / (1 - p)) > 1e-12)
      ++badly_scaled;
    total += v;
  }
  CHECK(badly_scaled == 0);
  // Binomial(100000, 0.3) has standard deviation ~145: 0.3 +- 0.006 is ~4 sigma.
  CHECK(std::abs(static_cast<double>(zeros) / n - p) < 0.006);
  CHECK(std::abs(total / n - 1.0) < 0.01);
  // The backward applies the same scaled mask: with x = 1 and g = 1, the gradient equals y.
  y.backward(xt::xarray<double>(xt::ones<double>({n})));
  CHECK(x.grad() == y.data());
}

TEST_CASE("dropout is reproducible from a seed and differs across seeds", "[dropout]") {
  auto x = Tensor<float>::ones({64});
  Generator a(99), b(99), c(100);
  const auto ya = dropout(x, 0.5, true, a).data();
  CHECK(ya == dropout(x, 0.5, true, b).data());
  CHECK_FALSE(ya == dropout(x, 0.5, true, c).data());
  // The next call continues the stream: a new mask.
  CHECK_FALSE(ya == dropout(x, 0.5, true, a).data());
}

TEST_CASE("dropout follows the documented mask rule: one seed per call, element i by DropoutMask", "[dropout]") {
  Generator gen(21), copy(21);
  const double p = 0.25;
  auto x = Tensor<float>::arange(1, 1001);
  const auto y = dropout(x, p, true, gen).data();
  const detail::DropoutMask mask(copy.next_u64(), p);
  CHECK(gen.state().s == copy.state().s);  // exactly one draw
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < 1000; ++i) {
    const float expected = mask.keep(i) ? x.data()(i) * static_cast<float>(1 / (1 - p)) : 0.0f;
    mismatches += y(i) != expected;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("dropout passes gradcheck with a fixed mask", "[dropout][gradcheck]") {
  CHECK_GRADCHECK(
      [](const Inputs& in) {
        Generator gen(7);  // the same mask on every evaluation
        return dropout(in[0], 0.4, true, gen);
      },
      (Inputs{rand_input({3, 5}, 61)}));
}

TEST_CASE("dropout with p = 1 passes gradcheck", "[dropout][gradcheck]") {
  CHECK_GRADCHECK(
      [](const Inputs& in) {
        Generator gen(7);
        return dropout(in[0], 1.0, true, gen);
      },
      (Inputs{rand_input({3, 5}, 62)}));
}

TEST_CASE("dropout with p = 1 is x * 0 as in torch: zeros, NaN where x is not finite, no draw", "[dropout]") {
  Generator gen(5);
  const auto before = gen.state();
  auto x = Tensor<double>::from_vector({1, -2, std::numeric_limits<double>::infinity()}, {3}, true);
  auto y = dropout(x, 1.0, /*training=*/true, gen);
  CHECK(y.data()(0) == 0.0);
  CHECK(y.data()(1) == 0.0);
  CHECK(std::isnan(y.data()(2)));
  CHECK(gen.state().s == before.s);
  y.backward(values({1, 1, 1}, {3}));
  CHECK(x.grad() == values({0, 0, 0}, {3}));
  CHECK(dropout(x, 1.0, /*training=*/false, gen).same_as(x));
}

TEST_CASE("dropout rejects p outside 0 <= p <= 1, naming p", "[dropout][errors]") {
  Generator gen(0);
  auto x = Tensor<double>::ones({2});
  for (double p : {-0.1, 1.0000001, 1.5, std::nan("")}) {
    CHECK_THROWS_AS(dropout(x, p, true, gen), std::invalid_argument);
    CHECK_THROWS_AS(dropout(x, p, false, gen), std::invalid_argument);
  }
  CHECK_THROWS_WITH(dropout(x, 1.5, true, gen), Catch::Contains("dropout") && Catch::Contains("got 1.5"));
  CHECK_THROWS_WITH(dropout(x, -0.1, true, gen), Catch::Contains("got -0.1"));
}
