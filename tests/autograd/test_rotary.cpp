// rotary_embedding: the rotation by position, relative positions, gradcheck and errors.
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

namespace {
// The rows of x [B, H, L, D] rotated by the formula, with angles from rotary_tables' definition.
xt::xarray<double> rotated_by_formula(const xt::xarray<double>& x, std::size_t offset, double base) {
  xt::xarray<double> y = x;
  const std::size_t rows = x.size() / x.shape()[3], length = x.shape()[2], d = x.shape()[3], h = d / 2;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < h; ++j) {
      const double angle = static_cast<double>(offset + r % length) * std::pow(base, -2.0 * j / d);
      const double a = x.data()[r * d + j], b = x.data()[r * d + j + h];
      y.data()[r * d + j] = a * std::cos(angle) - b * std::sin(angle);
      y.data()[r * d + j + h] = b * std::cos(angle) + a * std::sin(angle);
    }
  return y;
}
}  // namespace

TEST_CASE("rotary_embedding rotates each pair (j, j + D/2) by position times base^(-2j/D)", "[rotary]") {
  const auto [cos, sin] = rotary_tables<double>(8, 50, 100.0);
  CHECK(cos.shape()[0] == 50);
  CHECK(cos.shape()[1] == 4);
  CHECK(cos(0, 3) == 1.0);
  CHECK(sin(7, 0) == std::sin(7.0));
  CHECK(sin(7, 2) == Approx(std::sin(7.0 / 10.0)).epsilon(1e-15));  // 100^(-4/8) = 1/10
  const Tensor<double> c(cos), s(sin);
  const auto x = rand_input({2, 3, 5, 8}, 90);
  CHECK(allclose(rotary_embedding(x, c, s).data(), rotated_by_formula(x.data(), 0, 100.0), 1e-14, 1e-15));
  CHECK(allclose(rotary_embedding(x, c, s, 40).data(), rotated_by_formula(x.data(), 40, 100.0), 1e-14, 1e-15));
  // A rotation keeps each pair's length, so each row's norm.
  const auto y = rotary_embedding(x, c, s, 13).data();
  CHECK(
      allclose(xt::xarray<double>(xt::sum(y * y, {3})), xt::xarray<double>(xt::sum(x.data() * x.data(), {3})), 1e-13));
  // offset = the positions already cached: rotating the last rows alone equals the rows of the whole.
  const auto whole = rotary_embedding(x, c, s).data();
  const xt::xarray<double> tail = xt::view(x.data(), xt::all(), xt::all(), xt::range(3, 5), xt::all());
  const xt::xarray<double> whole_tail = xt::view(whole, xt::all(), xt::all(), xt::range(3, 5), xt::all());
  CHECK(rotary_embedding(Tensor<double>(tail), c, s, 3).data() == whole_tail);
}

TEST_CASE("rotary_embedding: the dot product of q at m and k at n depends on m - n only", "[rotary]") {
  const auto [cos, sin] = rotary_tables<double>(16, 300);
  const Tensor<double> c(cos), s(sin);
  const auto q = rand_input({1, 1, 1, 16}, 91), k = rand_input({1, 1, 1, 16}, 92);
  const auto dot = [&](std::size_t m, std::size_t n) {
    return xt::sum(rotary_embedding(q, c, s, m).data() * rotary_embedding(k, c, s, n).data())();
  };
  for (std::size_t shift : {0, 1, 5, 100, 250}) {
    INFO("m - n = 3 at n = " << shift);
    CHECK(dot(3 + shift, shift) == Approx(dot(3, 0)).epsilon(1e-12));
    INFO("m - n = -7 at n = " << 7 + shift);
    CHECK(dot(shift, 7 + shift) == Approx(dot(0, 7)).epsilon(1e-12));
  }
  // ... and does depend on it.
  CHECK(std::abs(dot(3, 0) - dot(4, 0)) > 1e-3);
}

TEST_CASE("rotary_embedding passes gradcheck, its backward the inverse rotation", "[rotary][gradcheck]") {
  const auto [cos, sin] = rotary_tables<double>(6, 20, 10.0);
  const Tensor<double> c(cos), s(sin);
  CHECK_GRADCHECK([&](const Inputs& in) { return rotary_embedding(in[0], c, s); },
                  (Inputs{rand_input({2, 2, 3, 6}, 93)}));
  CHECK_GRADCHECK([&](const Inputs& in) { return rotary_embedding(in[0], c, s, 17); },
                  (Inputs{rand_input({1, 3, 3, 6}, 94)}));
  // Rotating the gradient back: the backward of a rotation by the angle is a rotation by minus the angle,
  // so the gradient of sum(g * rope(x)) is the inverse rotation of g, which undoes rope.
  auto x = rand_input({1, 2, 4, 6}, 95);
  const auto g = rand_input({1, 2, 4, 6}, 96).data();
  rotary_embedding(x, c, s, 5).backward(g);
  CHECK(allclose(rotary_embedding(Tensor<double>(x.grad()), c, s, 5).data(), g, 1e-13, 1e-15));
  NoGradGuard no_grad;
  CHECK_FALSE(rotary_embedding(x, c, s).requires_grad());
}

TEST_CASE("rotary_embedding errors name the shapes and the positions", "[rotary][errors]") {
  const auto [cos, sin] = rotary_tables<double>(8, 10);
  const Tensor<double> c(cos), s(sin);
  CHECK_THROWS_WITH(rotary_embedding(Tensor<double>::zeros({2, 5, 8}), c, s),
                    Catch::Contains("[batch, heads, length, head_dim]") && Catch::Contains("[2, 5, 8]"));
  CHECK_THROWS_WITH(rotary_embedding(Tensor<double>::zeros({1, 1, 2, 7}), c, s),
                    Catch::Contains("head_dim must be even") && Catch::Contains("got 7"));
  CHECK_THROWS_WITH(rotary_embedding(Tensor<double>::zeros({1, 1, 2, 6}), c, s),
                    Catch::Contains("head_dim / 2 = 3") && Catch::Contains("cos [10, 4]"));
  CHECK_THROWS_WITH(rotary_embedding(Tensor<double>::zeros({1, 1, 4, 8}), c, s, 7),
                    Catch::Contains("positions 7 to 10") && Catch::Contains("10 positions"));
  CHECK_THROWS_WITH(rotary_embedding(Tensor<double>::zeros({1, 1, 11, 8}), c, s),
                    Catch::Contains("positions 0 to 10") && Catch::Contains("10 positions"));
  CHECK_THROWS_WITH(rotary_embedding(Tensor<double>::zeros({1, 1, 2, 8}), Tensor<double>(cos, true), s),
                    Catch::Contains("constants"));
  CHECK_THROWS_WITH(rotary_tables<float>(7, 10), Catch::Contains("head_dim") && Catch::Contains("got 7"));
  CHECK_THROWS_WITH(rotary_tables<float>(8, 10, 0.0), Catch::Contains("base") && Catch::Contains("got 0"));
}
