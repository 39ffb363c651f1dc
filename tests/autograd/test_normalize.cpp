// normalize and cosine_similarity: torch 1.13's clamping, values and gradients.
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

TEST_CASE("normalize divides by max(norm, eps), with torch's gradient at a zero row", "[normalize]") {
  auto x = Tensor<double>::from_vector({3, 4, 0, 0}, {2, 2}, true);
  const auto y = normalize(x);
  CHECK(y.data() == xt::xarray<double>({{0.6, 0.8}, {0, 0}}));
  y.backward(xt::xarray<double>({{1, 1}, {1, 1}}));
  // torch: 1 / eps = 1e12 at the zero row (the norm's own gradient is 0 there; docs/gradients.md).
  CHECK(x.grad()(1, 0) == Approx(1e12).epsilon(1e-12));
  CHECK(x.grad()(1, 1) == Approx(1e12).epsilon(1e-12));
  CHECK_GRADCHECK([](const Inputs& in) { return normalize(in[0]); }, (Inputs{rand_input({3, 4}, 303)}));
  CHECK_GRADCHECK([](const Inputs& in) { return normalize(in[0], 1, 0); }, (Inputs{rand_input({3, 4}, 304)}));
  CHECK_GRADCHECK([](const Inputs& in) { return normalize(in[0], 3, -1); }, (Inputs{rand_input({2, 2, 3}, 305)}));
  CHECK_THROWS_WITH(normalize(Tensor<double>::zeros({3})), Catch::Contains("normalize") && Catch::Contains("dim 1"));
  CHECK_THROWS_WITH(normalize(x, -2, 1), Catch::Contains("normalize") && Catch::Contains("-2"));
}

TEST_CASE("cosine_similarity: torch 1.13's clamped squared norms, values and gradients", "[normalize]") {
  const auto a = Tensor<double>::from_vector({1, 0, 0, 0, 0, 0}, {2, 3}, true);
  const auto b = Tensor<double>::from_vector({1, 1, 0, 1, 1, 1}, {2, 3}, true);
  const auto c = cosine_similarity(a, b);
  CHECK(c.data()(0) == Approx(1 / std::sqrt(2.0)).epsilon(1e-15));
  CHECK(c.data()(1) == 0.0);
  c.backward(xt::xarray<double>({1.0, 1.0}));
  // At the zero row: g x2 / (eps |x2|) = 1 / (1e-8 sqrt 3) each, as torch (docs/gradients.md).
  CHECK(a.grad()(1, 0) == Approx(1 / (1e-8 * std::sqrt(3.0))).epsilon(1e-12));
  CHECK(b.grad()(1, 2) == 0.0);
  // Below eps the clamp is not differentiated: g (x2 - w12 x1 / max(|x1|^2, eps^2)) / sqrt(...).
  auto tiny = Tensor<double>::from_vector({1e-9, 0}, {1, 2}, true);
  auto other = Tensor<double>::from_vector({1, 1}, {1, 2});
  cosine_similarity(tiny, other, 1, 1e-8).backward(xt::xarray<double>({1.0}));
  const double denom = 1 / std::sqrt(1e-16 * 2), w12 = 1e-9;
  CHECK(tiny.grad()(0, 0) == Approx(denom * (1 - w12 * 1e-9 / 1e-16)).epsilon(1e-12));
  CHECK(tiny.grad()(0, 1) == Approx(denom).epsilon(1e-12));
  CHECK_GRADCHECK([](const Inputs& in) { return cosine_similarity(in[0], in[1]); },
                  (Inputs{rand_input({3, 4}, 306), rand_input({3, 4}, 307)}));
  CHECK_GRADCHECK([](const Inputs& in) { return cosine_similarity(in[0], in[1], -1); },
                  (Inputs{rand_input({2, 1, 3}, 308), rand_input({4, 3}, 309)}));
  CHECK_GRADCHECK([](const Inputs& in) { return cosine_similarity(in[0], in[1], 0); },
                  (Inputs{rand_input({3, 2}, 310), rand_input({3, 1}, 311)}));
  CHECK_THROWS_WITH(cosine_similarity(a, Tensor<double>::zeros({4})),
                    Catch::Contains("cosine_similarity") && Catch::Contains("[2, 3]") && Catch::Contains("[4]"));
  CHECK_THROWS_WITH(cosine_similarity(a, b, 2), Catch::Contains("cosine_similarity") && Catch::Contains("dim 2"));
}
