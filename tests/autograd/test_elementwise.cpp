// Elementwise ops and broadcasting: gradcheck on broadcast shapes, forward values, edge values, errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "tapegrad/autograd/broadcast.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/autograd/vector_math.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::allclose;
using tapegrad::testing::rand_input;

namespace {

using BinaryOp = std::function<TensorD(const TensorD&, const TensorD&)>;
using UnaryOp = std::function<TensorD(const TensorD&)>;
using Inputs = std::vector<TensorD>;

struct ShapePair {
  Shape a, b;
};

// Same shapes, the broadcast pairs named in the design, a 0-d operand on either side, and a
// lower-rank operand broadcast along new leading dims.
const std::vector<ShapePair> kBinaryShapes = {
    {{3, 4}, {3, 4}}, {{3, 1}, {1, 4}}, {{2, 1, 5}, {5}}, {{}, {2, 3}}, {{2, 3}, {}}, {{4}, {2, 3, 4}}, {{}, {}},
};

// gradcheck of op over every shape pair; b's values are drawn from [b_low, b_high).
void check_binary(const BinaryOp& op, double a_low, double a_high, double b_low, double b_high) {
  std::uint64_t seed = 1;
  for (const auto& shapes : kBinaryShapes) {
    INFO("shapes " << format_shape(shapes.a) << " and " << format_shape(shapes.b));
    auto a = rand_input(shapes.a, seed++, a_low, a_high);
    auto b = rand_input(shapes.b, seed++, b_low, b_high);
    CHECK_GRADCHECK([&](const std::vector<TensorD>& in) { return op(in[0], in[1]); }, (std::vector<TensorD>{a, b}));
    // Only one side requiring grad: the other must receive nothing.
    auto b_const = TensorD(b.data());
    CHECK_GRADCHECK([&](const std::vector<TensorD>& in) { return op(in[0], in[1]); },
                    (std::vector<TensorD>{a, b_const}));
    auto a_const = TensorD(a.data());
    CHECK_GRADCHECK([&](const std::vector<TensorD>& in) { return op(in[0], in[1]); },
                    (std::vector<TensorD>{a_const, b}));
  }
}

const std::vector<Shape> kUnaryShapes = {{}, {5}, {2, 3}, {2, 3, 4}};

void check_unary(const UnaryOp& op, double low, double high) {
  std::uint64_t seed = 100;
  for (const auto& shape : kUnaryShapes) {
    INFO("shape " << format_shape(shape));
    auto x = rand_input(shape, seed++, low, high);
    CHECK_GRADCHECK([&](const std::vector<TensorD>& in) { return op(in[0]); }, std::vector<TensorD>{x});
  }
}

// A random input whose elements are at least `gap` away from 0 (for kinks at 0).
TensorD away_from_zero(const Shape& shape, std::uint64_t seed, double gap) {
  auto x = rand_input(shape, seed);
  for (auto& v : x.mutable_data()) v += v >= 0 ? gap : -gap;
  return x;
}

// A random input in [-1, 1) whose elements are at least `gap` away from each of `kinks` (which must be
// more than 2 gap apart): for ops with kinks elsewhere than at 0, such as clamp's bounds.
TensorD away_from(const Shape& shape, std::uint64_t seed, const std::vector<double>& kinks, double gap = 0.05) {
  auto x = rand_input(shape, seed);
  for (auto& v : x.mutable_data())
    for (double k : kinks)
      if (std::abs(v - k) < gap) v = k + (v >= k ? gap : -gap);
  return x;
}

xt::xarray<double> ones_like(const TensorD& t) { return xt::ones<double>(t.shape()); }

// An array of the given shape from row-major values (nested braces for one column are ambiguous).
xt::xarray<double> arr(const std::vector<double>& values, const Shape& shape) {
  return TensorD::from_vector(values, shape).data();
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// gradcheck

TEST_CASE("gradcheck: add, sub, mul, div over broadcast shapes", "[elementwise]") {
  SECTION("add") {
    check_binary([](const TensorD& a, const TensorD& b) { return a + b; }, -1, 1, -1, 1);
  }
  SECTION("sub") {
    check_binary([](const TensorD& a, const TensorD& b) { return a - b; }, -1, 1, -1, 1);
  }
  SECTION("mul") {
    check_binary([](const TensorD& a, const TensorD& b) { return a * b; }, -1, 1, -1, 1);
  }
  SECTION("div") {
    check_binary([](const TensorD& a, const TensorD& b) { return a / b; }, -1, 1, 0.5, 2);
  }
}

TEST_CASE("gradcheck: pow with a tensor exponent and with a scalar exponent", "[elementwise]") {
  SECTION("tensor exponent") {
    check_binary([](const TensorD& a, const TensorD& b) { return pow(a, b); }, 0.5, 2, -1.5, 2.5);
  }
  SECTION("scalar exponents") {
    for (double e : {2.0, 3.0, 0.5, -1.0, -2.5, 1.0}) {
      INFO("exponent " << e);
      check_unary([e](const TensorD& x) { return pow(x, e); }, 0.5, 2);
    }
    // Integer exponents are fine on negative bases.
    check_unary([](const TensorD& x) { return pow(x, 3.0); }, -2, 2);
  }
}

// The smooth unary ops (neg, exp, log, sqrt, tanh, sigmoid, gelu, log1p, sin, cos, silu) are gradchecked
// on every rank by their entries in the op table (op_registry.cpp); here, the ops with kinks.
TEST_CASE("gradcheck: unary ops", "[elementwise]") {
  SECTION("abs, leaky_relu and clamp away from their kinks") {
    std::uint64_t seed = 210;
    for (const auto& shape : kUnaryShapes) {
      INFO("shape " << format_shape(shape));
      const std::vector<TensorD> at0{away_from(shape, seed++, {0.0})};
      CHECK_GRADCHECK([](const std::vector<TensorD>& in) { return abs(in[0]); }, at0);
      CHECK_GRADCHECK([](const std::vector<TensorD>& in) { return leaky_relu(in[0]); }, at0);
      CHECK_GRADCHECK([](const std::vector<TensorD>& in) { return leaky_relu(in[0], 0.2); }, at0);
      CHECK_GRADCHECK([](const std::vector<TensorD>& in) { return leaky_relu(in[0], -1.5); }, at0);
      CHECK_GRADCHECK([](const std::vector<TensorD>& in) { return clamp(in[0], 0.0); }, at0);
      CHECK_GRADCHECK([](const std::vector<TensorD>& in) { return clamp(in[0], std::nullopt, 0.0); }, at0);
      const std::vector<TensorD> at_bounds{away_from(shape, seed++, {-0.5, 0.25})};
      CHECK_GRADCHECK([](const std::vector<TensorD>& in) { return clamp(in[0], -0.5, 0.25); }, at_bounds);
      CHECK_GRADCHECK([](const std::vector<TensorD>& in) { return clamp(in[0], 0.25, -0.5); }, at_bounds);
    }
  }
  SECTION("relu away from the kink") {
    std::uint64_t seed = 200;
    for (const auto& shape : kUnaryShapes) {
      INFO("shape " << format_shape(shape));
      auto x = away_from_zero(shape, seed++, 0.05);
      CHECK_GRADCHECK([](const std::vector<TensorD>& in) { return relu(in[0]); }, std::vector<TensorD>{x});
    }
  }
}

TEST_CASE("gradcheck: minimum and maximum over broadcast shapes", "[elementwise]") {
  // Random operands never tie, so each output element follows one side.
  SECTION("minimum") {
    check_binary([](const TensorD& a, const TensorD& b) { return minimum(a, b); }, -1, 1, -1, 1);
  }
  SECTION("maximum") {
    check_binary([](const TensorD& a, const TensorD& b) { return maximum(a, b); }, -1, 1, -1, 1);
  }
}

TEST_CASE("gradcheck: every scalar-operand operator", "[elementwise]") {
  const double s = 1.7;
  SECTION("x + s") {
    check_unary([s](const TensorD& x) { return x + s; }, -1, 1);
  }
  SECTION("s + x") {
    check_unary([s](const TensorD& x) { return s + x; }, -1, 1);
  }
  SECTION("x - s") {
    check_unary([s](const TensorD& x) { return x - s; }, -1, 1);
  }
  SECTION("s - x") {
    check_unary([s](const TensorD& x) { return s - x; }, -1, 1);
  }
  SECTION("x * s") {
    check_unary([s](const TensorD& x) { return x * s; }, -1, 1);
  }
  SECTION("s * x") {
    check_unary([s](const TensorD& x) { return s * x; }, -1, 1);
  }
  SECTION("x / s") {
    check_unary([s](const TensorD& x) { return x / s; }, -1, 1);
  }
  SECTION("s / x") {
    check_unary([s](const TensorD& x) { return s / x; }, 0.5, 2);
  }
  SECTION("s / x, negative x") {
    check_unary([s](const TensorD& x) { return s / x; }, -2, -0.5);
  }
}

TEST_CASE("gradcheck: a tensor used twice in one op", "[elementwise]") {
  for (const auto& shape : kUnaryShapes) {
    INFO("shape " << format_shape(shape));
    auto x = rand_input(shape, 300, 0.5, 2);
    const std::vector<TensorD> in{x};
    CHECK_GRADCHECK([](const std::vector<TensorD>& v) { return v[0] * v[0]; }, in);
    CHECK_GRADCHECK([](const std::vector<TensorD>& v) { return v[0] / v[0]; }, in);
    CHECK_GRADCHECK([](const std::vector<TensorD>& v) { return v[0] + v[0]; }, in);
    CHECK_GRADCHECK([](const std::vector<TensorD>& v) { return v[0] - v[0]; }, in);
    CHECK_GRADCHECK([](const std::vector<TensorD>& v) { return pow(v[0], v[0]); }, in);
    CHECK_GRADCHECK([](const std::vector<TensorD>& v) { return exp(v[0]) * tanh(v[0]) / (v[0] + 1.0); }, in);
  }
}

TEST_CASE("the gradient of x * x and x / x has the right values", "[elementwise]") {
  auto x = TensorD::from_vector({1, -2, 3}, {3}, true);
  (x * x).backward(xt::xarray<double>({1.0, 1.0, 1.0}));
  CHECK(x.grad() == xt::xarray<double>({2, -4, 6}));
  x.zero_grad();
  (x / x).backward(xt::xarray<double>({1.0, 1.0, 1.0}));
  CHECK(x.grad() == xt::xarray<double>({0, 0, 0}));
}

// ---------------------------------------------------------------------------------------------------
// forward values

TEST_CASE("binary ops broadcast 3x1 against 1x4 to the right values", "[elementwise]") {
  auto a = TensorD::from_vector({1, 2, 3}, {3, 1});
  auto b = TensorD::from_vector({10, 20, 40, 80}, {1, 4});
  CHECK((a + b).data() == xt::xarray<double>({{11, 21, 41, 81}, {12, 22, 42, 82}, {13, 23, 43, 83}}));
  CHECK((a - b).data() == xt::xarray<double>({{-9, -19, -39, -79}, {-8, -18, -38, -78}, {-7, -17, -37, -77}}));
  CHECK((a * b).data() == xt::xarray<double>({{10, 20, 40, 80}, {20, 40, 80, 160}, {30, 60, 120, 240}}));
  CHECK((b / a).data() ==
        xt::xarray<double>({{10, 20, 40, 80}, {5, 10, 20, 40}, {10.0 / 3, 20.0 / 3, 40.0 / 3, 80.0 / 3}}));
  CHECK(pow(a, TensorD::from_vector({0, 1, 2, 3}, {1, 4})).data() ==
        xt::xarray<double>({{1, 1, 1, 1}, {1, 2, 4, 8}, {1, 3, 9, 27}}));
}

TEST_CASE("broadcasting 2x1x5 with 5, and a 0-d tensor with 2x3", "[elementwise]") {
  auto a = TensorD::from_vector({0, 1, 2, 3, 4, 10, 11, 12, 13, 14}, {2, 1, 5});
  auto b = TensorD::from_vector({100, 200, 300, 400, 500}, {5});
  auto c = a + b;
  CHECK(c.shape() == Shape{2, 1, 5});
  CHECK(c.to_vector() == std::vector<double>{100, 201, 302, 403, 504, 110, 211, 312, 413, 514});
  auto s = TensorD::scalar(2.0);
  auto m = TensorD::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK((s * m).shape() == Shape{2, 3});
  CHECK((s * m).to_vector() == std::vector<double>{2, 4, 6, 8, 10, 12});
  CHECK((m - s).to_vector() == std::vector<double>{-1, 0, 1, 2, 3, 4});
  CHECK((s / m).to_vector() == std::vector<double>{2, 1, 2.0 / 3, 0.5, 0.4, 2.0 / 6});
  auto both = TensorD::scalar(3.0) + TensorD::scalar(4.0);
  CHECK(both.shape() == Shape{});
  CHECK(both.item() == 7.0);
}

TEST_CASE("a broadcast gradient is summed back to each operand's shape", "[elementwise]") {
  auto a = TensorD::from_vector({1, 2, 3}, {3, 1}, true);
  auto b = TensorD::from_vector({10, 20, 40, 80}, {1, 4}, true);
  auto y = a * b;
  y.backward(ones_like(y));
  CHECK(a.grad() == arr({150, 150, 150}, {3, 1}));        // row sums of b
  CHECK(b.grad() == xt::xarray<double>({{6, 6, 6, 6}}));  // column sums of a
  auto s = TensorD::scalar(2.0, true);
  auto m = TensorD::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, true);
  auto z = m - s;
  z.backward(ones_like(z));
  CHECK(s.grad().dimension() == 0);
  CHECK(s.grad()() == -6.0);
  CHECK(m.grad() == xt::xarray<double>(xt::ones<double>({2, 3})));
}

TEST_CASE("scalar-operand operators compute the right values", "[elementwise]") {
  auto x = TensorD::from_vector({1, 2, 4}, {3});
  CHECK((x + 1.5).to_vector() == std::vector<double>{2.5, 3.5, 5.5});
  CHECK((1.5 + x).to_vector() == std::vector<double>{2.5, 3.5, 5.5});
  CHECK((x - 1.0).to_vector() == std::vector<double>{0, 1, 3});
  CHECK((1.0 - x).to_vector() == std::vector<double>{0, -1, -3});
  CHECK((x * 3.0).to_vector() == std::vector<double>{3, 6, 12});
  CHECK((3.0 * x).to_vector() == std::vector<double>{3, 6, 12});
  CHECK((x / 4.0).to_vector() == std::vector<double>{0.25, 0.5, 1});
  CHECK((4.0 / x).to_vector() == std::vector<double>{4, 2, 1});
  CHECK((-x).to_vector() == std::vector<double>{-1, -2, -4});
  CHECK(pow(x, 2.0).to_vector() == std::vector<double>{1, 4, 16});
  CHECK(pow(x, 0.5).to_vector() == std::vector<double>{1, std::sqrt(2.0), 2});
  // Works on float tensors with a double literal.
  auto f = TensorF::from_vector({1, 2}, {2});
  CHECK((f * 2.0).to_vector() == std::vector<float>{2, 4});
  CHECK((2.0 - f).to_vector() == std::vector<float>{1, 0});
}

TEST_CASE("dividing by a scalar is a true division, as in torch", "[elementwise]") {
  // torch.tensor(0.3, dtype=torch.float64) / 0.1 == 2.9999999999999996, whereas 0.3 * (1 / 0.1) == 3.
  auto x = TensorD::scalar(0.3, true);
  auto y = x / 0.1;
  CHECK(y.item() == 2.9999999999999996);
  CHECK(y.grad_fn_name() == "div_scalar");
  y.backward();
  CHECK(x.grad()() == 1 / 0.1);
}

TEST_CASE("unary ops compute the right values", "[elementwise]") {
  // Reference numbers from Python's math module (math.exp(1), math.log(2), math.tanh(1), ...).
  auto x = TensorD::from_vector({0, 1, 2, -0.5}, {4});
  CHECK(
      allclose(exp(x).data(), xt::xarray<double>({1, 2.718281828459045, 7.38905609893065, 0.6065306597126334}), 1e-14));
  CHECK(allclose(log(TensorD::from_vector({1, 2, 2.718281828459045}, {3})).data(),
                 xt::xarray<double>({0, 0.6931471805599453, 1}), 1e-15, 1e-15));
  CHECK(sqrt(TensorD::from_vector({0, 4, 2.25}, {3})).to_vector() == std::vector<double>{0, 2, 1.5});
  CHECK(allclose(tanh(x).data(), xt::xarray<double>({0, 0.7615941559557649, 0.9640275800758169, -0.46211715726000974}),
                 1e-15));
  CHECK(allclose(sigmoid(TensorD::from_vector({0, 2, -3}, {3})).data(),
                 xt::xarray<double>({0.5, 0.8807970779778823, 0.04742587317756678}), 1e-15));
  CHECK(relu(TensorD::from_vector({-2, 0, 3}, {3})).to_vector() == std::vector<double>{0, 0, 3});
}

TEST_CASE("abs, log1p, sin, cos, silu and leaky_relu match torch, values and slopes", "[elementwise]") {
  // Produced with /usr/bin/python3 and torch 1.13, x = torch.tensor([-2, -0.5, 0, 0.25, 1, 3], dtype=torch.float64):
  // f(x).tolist() and x.grad.tolist() after f(x).backward(torch.ones(6)). abs and leaky_relu at 0: the
  // slopes of torch's sgn(0) = 0 and of leaky_relu's negative side.
  const std::vector<double> xs{-2.0, -0.5, 0.0, 0.25, 1.0, 3.0};
  const auto check = [&](const UnaryOp& op, const std::vector<double>& value, const std::vector<double>& slope) {
    auto x = TensorD::from_vector(xs, {6}, true);
    auto y = op(x);
    CHECK(allclose(y.data(), arr(value, {6}), 1e-15, 1e-300));
    y.backward(ones_like(y));
    CHECK(allclose(x.grad(), arr(slope, {6}), 1e-15, 1e-300));
  };
  SECTION("abs") {
    check([](const TensorD& x) { return abs(x); }, {2, 0.5, 0, 0.25, 1, 3}, {-1, -1, 0, 1, 1, 1});
  }
  SECTION("sin") {
    check([](const TensorD& x) { return sin(x); },
          {-0.9092974268256817, -0.479425538604203, 0.0, 0.24740395925452294, 0.8414709848078965, 0.1411200080598672},
          {-0.4161468365471424, 0.8775825618903728, 1.0, 0.9689124217106447, 0.5403023058681398, -0.9899924966004454});
  }
  SECTION("cos") {
    check(
        [](const TensorD& x) { return cos(x); },
        {-0.4161468365471424, 0.8775825618903728, 1.0, 0.9689124217106447, 0.5403023058681398, -0.9899924966004454},
        {0.9092974268256817, 0.479425538604203, -0.0, -0.24740395925452294, -0.8414709848078965, -0.1411200080598672});
  }
  SECTION("silu") {
    check([](const TensorD& x) { return silu(x); },
          {-0.2384058440442351, -0.1887703343990727, 0.0, 0.14054412522144952, 0.7310585786300049, 2.8577223804672998},
          {-0.09078424878489547, 0.2600388126973482, 0.5, 0.6237100215701977, 0.9276705118714869, 1.0881041060151693});
  }
  SECTION("leaky_relu") {
    check([](const TensorD& x) { return leaky_relu(x); }, {-0.02, -0.005, 0, 0.25, 1, 3}, {0.01, 0.01, 0.01, 1, 1, 1});
    check([](const TensorD& x) { return leaky_relu(x, 0.2); }, {-0.4, -0.1, 0, 0.25, 1, 3}, {0.2, 0.2, 0.2, 1, 1, 1});
  }
  SECTION("log1p keeps its precision near 0") {
    // torch: log1p([-0.5, 0, 1e-10, 1, 3]) and its slopes 1 / (1 + x).
    auto x = TensorD::from_vector({-0.5, 0.0, 1e-10, 1.0, 3.0}, {5}, true);
    auto y = log1p(x);
    CHECK(allclose(y.data(),
                   arr({-0.6931471805599453, 0.0, 9.999999999500001e-11, 0.6931471805599453, 1.3862943611198906}, {5}),
                   1e-15, 1e-300));
    y.backward(ones_like(y));
    CHECK(allclose(x.grad(), arr({2.0, 1.0, 0.9999999999, 0.5, 0.25}, {5}), 1e-15));
  }
  SECTION("silu at large |x|: no NaN from the overflowing exp") {
    // torch: silu([-1000, -80, 80, 1000]) = [-0, -1.4438811102763322e-33, 80, 1000], slopes
    // [-0, -1.425832596397878e-33, 1, 1].
    auto x = TensorD::from_vector({-1000, -80, 80, 1000}, {4}, true);
    auto y = silu(x);
    CHECK(allclose(y.data(), arr({0, -1.4438811102763322e-33, 80, 1000}, {4}), 1e-14, 1e-300));
    y.backward(ones_like(y));
    CHECK(allclose(x.grad(), arr({0, -1.425832596397878e-33, 1, 1}, {4}), 1e-14, 1e-300));
  }
}

TEST_CASE("abs, leaky_relu and silu propagate NaN like torch", "[elementwise]") {
  // torch 1.13: abs(nan) = nan with slope 0 (sgn(nan) = 0); leaky_relu(nan) = nan with the negative
  // side's slope; silu(nan) = nan with slope nan.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto x = TensorD::from_vector({nan}, {1}, true);
  auto a = abs(x);
  CHECK(std::isnan(a.item()));
  a.backward(ones_like(a));
  CHECK(x.grad()(0) == 0.0);
  x.zero_grad();
  auto l = leaky_relu(x, 0.1);
  CHECK(std::isnan(l.item()));
  l.backward(ones_like(l));
  CHECK(x.grad()(0) == 0.1);
  x.zero_grad();
  auto s = silu(x);
  CHECK(std::isnan(s.item()));
  s.backward(ones_like(s));
  CHECK(std::isnan(x.grad()(0)));
}

TEST_CASE("clamp follows torch: inclusive bounds, one bound alone, min > max, NaN", "[elementwise]") {
  // torch 1.13 on x = [-2, -0.5, 0, 0.75, 2, nan] (float64), out and x.grad after backward(ones).
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const auto check = [&](std::optional<double> min, std::optional<double> max, const std::vector<double>& value,
                         const std::vector<double>& slope) {
    auto x = TensorD::from_vector({-2, -0.5, 0, 0.75, 2, nan}, {6}, true);
    auto y = clamp(x, min, max);
    CHECK(y.grad_fn_name() == "clamp");
    // Qualified: unqualified, a temporary argument makes xt::allclose (NaN never close) the better match.
    CHECK(tapegrad::testing::allclose(y.data(), arr(value, {6})));
    y.backward(ones_like(y));
    CHECK(x.grad() == arr(slope, {6}));
  };
  SECTION("both bounds: the gradient passes at the bounds themselves") {
    check(-0.5, 0.75, {-0.5, -0.5, 0, 0.75, 0.75, nan}, {0, 1, 1, 1, 0, 0});
  }
  SECTION("min alone and max alone") {
    check(0.0, std::nullopt, {0, 0, 0, 0.75, 2, nan}, {0, 0, 1, 1, 1, 0});
    check(std::nullopt, 0.0, {-2, -0.5, 0, 0, 0, nan}, {1, 1, 1, 0, 0, 0});
  }
  SECTION("min > max gives max everywhere and no gradient") {
    check(0.5, -0.5, {-0.5, -0.5, -0.5, -0.5, -0.5, nan}, {0, 0, 0, 0, 0, 0});
  }
  SECTION("a NaN bound gives NaN everywhere and no gradient") {
    // torch 1.13 fills NaN when both bounds are given and one is NaN; with a NaN bound alone it returns
    // x unchanged but still passes no gradient, which tapegrad does not copy.
    check(-1.0, nan, {nan, nan, nan, nan, nan, nan}, {0, 0, 0, 0, 0, 0});
    check(nan, std::nullopt, {nan, nan, nan, nan, nan, nan}, {0, 0, 0, 0, 0, 0});
    check(std::nullopt, nan, {nan, nan, nan, nan, nan, nan}, {0, 0, 0, 0, 0, 0});
  }
  SECTION("an absent bound is infinite: -inf and inf keep their gradient") {
    // torch: clamp([-inf, inf], max=0) = [-inf, 0] with slopes [1, 0]; clamp(min=0): [0, inf], [0, 1].
    auto x = TensorD::from_vector({-inf, inf}, {2}, true);
    auto y = clamp(x, std::nullopt, 0.0);
    CHECK(y.data() == arr({-inf, 0}, {2}));
    y.backward(ones_like(y));
    CHECK(x.grad() == arr({1, 0}, {2}));
    x.zero_grad();
    clamp(x, 0.0).backward(ones_like(x));
    CHECK(x.grad() == arr({0, 1}, {2}));
  }
  SECTION("float, and the method form") {
    auto xf = TensorF::from_vector({-2, 0.5f, 3}, {3});
    CHECK(clamp(xf, 0.0, 1.0).to_vector() == std::vector<float>{0, 0.5f, 1});
    CHECK(xf.clamp(-1.0f, std::nullopt).to_vector() == std::vector<float>{-1, 0.5f, 3});
  }
}

TEST_CASE("clamp without a bound names the problem", "[elementwise][errors]") {
  auto x = TensorD::zeros({2});
  CHECK_THROWS_AS(clamp(x, std::nullopt, std::nullopt), ShapeError);
  CHECK_THROWS_AS(clamp(x, std::nullopt), std::invalid_argument);
  CHECK_THROWS_WITH(x.clamp(std::nullopt), "clamp: at least one of min and max must be given");
}

TEST_CASE("minimum and maximum split ties in halves and pass NaN's gradient to both sides, as torch 1.13",
          "[elementwise]") {
  // torch 1.13: a = [1, 2, nan, 3, nan], b = [1, 3, 1, nan, nan]; out and both gradients after
  // backward(ones). A side loses its gradient only where it is strictly beaten, so NaN gives both all.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto a = TensorD::from_vector({1, 2, nan, 3, nan}, {5}, true);
  auto b = TensorD::from_vector({1, 3, 1, nan, nan}, {5}, true);
  auto hi = maximum(a, b);
  CHECK(tapegrad::testing::allclose(hi.data(), arr({1, 3, nan, nan, nan}, {5})));  // NaN where torch has it
  hi.backward(ones_like(hi));
  CHECK(a.grad() == arr({0.5, 0, 1, 1, 1}, {5}));
  CHECK(b.grad() == arr({0.5, 1, 1, 1, 1}, {5}));
  a.zero_grad();
  b.zero_grad();
  auto lo = minimum(a, b);
  CHECK(tapegrad::testing::allclose(lo.data(), arr({1, 2, nan, nan, nan}, {5})));
  lo.backward(ones_like(lo));
  CHECK(a.grad() == arr({0.5, 1, 1, 1, 1}, {5}));
  CHECK(b.grad() == arr({0.5, 0, 1, 1, 1}, {5}));
  // A tie under broadcasting: b's one element meets both rows of a, and its halves add up.
  auto c = TensorD::from_vector({2, 2}, {2, 1}, true);
  auto d = TensorD::scalar(2.0, true);
  maximum(c, d).backward(arr({1, 3}, {2, 1}));
  CHECK(c.grad() == arr({0.5, 1.5}, {2, 1}));
  CHECK(d.grad()() == 2.0);
}

TEST_CASE("the new elementwise ops record under their names, and nothing under NoGradGuard", "[elementwise]") {
  const std::vector<std::pair<std::string, UnaryOp>> ops = {
      {"abs", [](const TensorD& x) { return abs(x); }},
      {"log1p", [](const TensorD& x) { return log1p(x); }},
      {"sin", [](const TensorD& x) { return sin(x); }},
      {"cos", [](const TensorD& x) { return cos(x); }},
      {"silu", [](const TensorD& x) { return silu(x); }},
      {"leaky_relu", [](const TensorD& x) { return leaky_relu(x); }},
      {"clamp", [](const TensorD& x) { return clamp(x, 0.0, 0.5); }},
      {"minimum", [](const TensorD& x) { return minimum(x, TensorD::scalar(0.5)); }},
      {"maximum", [](const TensorD& x) { return maximum(TensorD::scalar(0.5), x); }},
  };
  auto x = rand_input({2, 3}, 400, 0, 1);
  for (const auto& [name, op] : ops) {
    INFO(name);
    CHECK(op(x).grad_fn_name() == name);
    CHECK(op(TensorD(x.data())).is_leaf());  // no input requires grad
    NoGradGuard no_grad;
    const auto y = op(x);
    CHECK(y.is_leaf());
    CHECK_FALSE(y.requires_grad());
  }
}

TEST_CASE("gelu matches torch.nn.functional.gelu", "[elementwise]") {
  // Produced with /usr/bin/python3 and torch 1.13:
  //   x = torch.tensor([-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.0, 4.0], dtype=torch.float64)
  //   torch.nn.functional.gelu(x).tolist()
  //   torch.nn.functional.gelu(x, approximate="tanh").tolist()
  const std::vector<double> xs{-3.0, -1.5, -0.5, 0.0, 0.25, 1.0, 2.0, 4.0};
  const xt::xarray<double> exact{-0.00404969409489031, -0.10021080190328704, -0.15426876936299344, 0.0,
                                 0.14967658142073093,  0.841344746068543,    1.9544997361036416,   3.9998733150326675};
  const xt::xarray<double> approx{
      -0.0036373920817729943, -0.10042842301976707, -0.15428599017485606, 0.0,
      0.149675350701685,      0.8411919906082768,   1.954597694087775,    3.9999297540518075};
  auto x = TensorD::from_vector(xs, {8});
  CHECK(allclose(gelu(x).data(), exact, 1e-12, 1e-15));
  CHECK(allclose(gelu(x, GeluApproximate::None).data(), exact, 1e-12, 1e-15));
  CHECK(allclose(gelu(x, GeluApproximate::Tanh).data(), approx, 1e-12, 1e-15));
  auto xf = TensorF::from_vector(std::vector<float>(xs.begin(), xs.end()), {8});
  CHECK(allclose(xt::xarray<double>(xt::cast<double>(gelu(xf).data())), exact, 1e-5, 1e-6));
  CHECK(allclose(xt::xarray<double>(xt::cast<double>(gelu(xf, GeluApproximate::Tanh).data())), approx, 1e-5, 1e-6));
  CHECK(gelu(x).grad_fn_name().empty());  // nothing recorded without requires_grad
  auto xg = TensorD::from_vector(xs, {8}, true);
  CHECK(gelu(xg).grad_fn_name() == "gelu");
  CHECK(gelu(xg, GeluApproximate::Tanh).grad_fn_name() == "gelu_tanh");
}

// float GELU runs on the vectorized fast_erfc_gauss / fast_exp (autograd/vector_math.hpp): on a dense grid it
// must agree with the same functions computed in double without cancellation (erfc rather than
// 1 + erf, which torch's formula and tapegrad's double path lose below x = -8) to a few float ulp of
// what float can resolve: of the result, plus of the input carried through the function's slope (the
// rounding of x / sqrt 2 or of the tanh argument alone costs that much for large |x|), and 1e-34
// absolute (where intermediates are denormal floats: exp(-2 u) of the tanh form at x = -10).
TEST_CASE("gelu in float is within a few ulp of double references in values and gradients", "[elementwise]") {
  std::vector<float> xs;
  for (int i = -140000; i <= 140000; ++i) xs.push_back(static_cast<float>(i) * 1e-4f);  // [-14, 14]
  for (float v : {1e-30f, -1e-30f, 1e-8f, -1e-8f, 30.0f, -30.0f}) xs.push_back(v);
  const double inv_sqrt2 = 1 / std::sqrt(2.0), inv_sqrt2pi = 1 / std::sqrt(2 * M_PI), c = std::sqrt(2 / M_PI);
  const auto exact = [&](double x, bool slope) {
    const double cdf = 0.5 * std::erfc(-x * inv_sqrt2);
    return slope ? cdf + x * inv_sqrt2pi * std::exp(-0.5 * x * x) : x * cdf;
  };
  const auto tanh_form = [&](double x, bool slope) {
    const double s = 1 / (1 + std::exp(-2 * c * (x + 0.044715 * x * x * x)));  // (1 + tanh(u)) / 2
    return slope ? s + 2 * x * s * (1 - s) * c * (1 + 3 * 0.044715 * x * x) : x * s;
  };
  for (auto approximate : {GeluApproximate::None, GeluApproximate::Tanh}) {
    const bool is_exact = approximate == GeluApproximate::None;
    INFO((is_exact ? "exact" : "tanh"));
    const auto ref = [&](double x, bool slope) { return is_exact ? exact(x, slope) : tanh_form(x, slope); };
    auto x = TensorF::from_vector(xs, {xs.size()}, true);
    auto y = gelu(x, approximate);
    y.backward(xt::xarray<float>(xt::ones<float>({xs.size()})));
    double worst[2] = {0, 0};  // error over tolerance, value and gradient
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const double v = xs[i];
      for (int slope = 0; slope < 2; ++slope) {
        const double want = ref(v, slope);
        const double h = 1e-6 * std::max(1.0, std::abs(v));
        const double derivative = (ref(v + h, slope) - ref(v - h, slope)) / (2 * h);
        const double tol = 1e-34 + 5e-7 * (std::abs(want) + std::abs(v * derivative));
        const double got = slope ? x.grad()(i) : y.data()(i);
        const double err = std::abs(got - want) / tol;
        worst[slope] = std::isnan(err) ? HUGE_VAL : std::max(worst[slope], err);
      }
    }
    INFO("worst error over tolerance: value " << worst[0] << ", gradient " << worst[1]);
    CHECK(worst[0] <= 1.0);
    CHECK(worst[1] <= 1.0);
  }
  // As torch 1.13: gelu(inf) = inf, gelu(-inf) = NaN (-inf * 0), NaN stays NaN, in both forms.
  const float inf = std::numeric_limits<float>::infinity();
  for (auto approximate : {GeluApproximate::None, GeluApproximate::Tanh}) {
    const auto y = gelu(TensorF::from_vector({inf, -inf, std::nanf("")}, {3}), approximate).to_vector();
    CHECK(y[0] == inf);
    CHECK(std::isnan(y[1]));
    CHECK(std::isnan(y[2]));
  }
}

TEST_CASE("sigmoid, tanh and gelu stay finite at large |x|", "[elementwise]") {
  auto check = [](auto x) {
    using T = typename decltype(x)::value_type;
    auto y = sigmoid(x);
    const auto v = y.to_vector();
    for (T e : v) CHECK(std::isfinite(e));
    CHECK(v[0] == T(0));
    CHECK(v[1] >= T(0));
    CHECK(v[1] < T(1e-30));
    CHECK(v[2] == T(1));
    CHECK(v[3] == T(1));
    y.backward(xt::xarray<T>(xt::ones<T>(x.shape())));
    for (T g : std::vector<T>(x.grad().begin(), x.grad().end())) {
      CHECK(std::isfinite(g));
      CHECK(g >= T(0));
    }
    const auto t = tanh(x).to_vector();
    CHECK(t[0] == T(-1));
    CHECK(t[3] == T(1));
    const auto g = gelu(x).to_vector();
    CHECK(g[0] == T(0));
    CHECK(g[3] == T(1000));
  };
  check(TensorD::from_vector({-1000, -80, 80, 1000}, {4}, true));
  check(TensorF::from_vector({-1000, -80, 80, 1000}, {4}, true));
}

TEST_CASE("pow's gradient at a zero base is 0 where torch says so, not NaN", "[elementwise]") {
  // torch 1.13: a = [0, 2], b = [2, 3]: (a ** b).sum().backward() gives a.grad = [0, 12],
  // b.grad = [0, 8 ln 2 = 5.545177444479562]; with b = [0, 0]: a.grad = [0, 0], b.grad = [0, ln 2].
  auto a = TensorD::from_vector({0, 2}, {2}, true);
  auto b = TensorD::from_vector({2, 3}, {2}, true);
  pow(a, b).backward(xt::xarray<double>({1.0, 1.0}));
  CHECK(allclose(a.grad(), xt::xarray<double>({0, 12}), 1e-15));
  CHECK(allclose(b.grad(), xt::xarray<double>({0, 5.545177444479562}), 1e-15));
  a.zero_grad();
  auto b0 = TensorD::from_vector({0, 0}, {2}, true);
  auto y = pow(a, b0);
  CHECK(y.to_vector() == std::vector<double>{1, 1});
  y.backward(xt::xarray<double>({1.0, 1.0}));
  CHECK(allclose(a.grad(), xt::xarray<double>({0, 0})));
  CHECK(allclose(b0.grad(), xt::xarray<double>({0, 0.6931471805599453}), 1e-15));
  a.zero_grad();
  pow(a, 0.0).backward(xt::xarray<double>({1.0, 1.0}));
  CHECK(allclose(a.grad(), xt::xarray<double>({0, 0})));
  a.zero_grad();
  pow(a, 2.0).backward(xt::xarray<double>({1.0, 1.0}));
  CHECK(allclose(a.grad(), xt::xarray<double>({0, 4})));
}

TEST_CASE("relu propagates NaN like torch and passes no gradient at 0", "[elementwise]") {
  // torch 1.13: x = [nan, -1, 2, 0]: relu(x) = [nan, 0, 2, 0]; relu(x).sum().backward() gives [1, 0, 1, 0].
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto x = TensorD::from_vector({nan, -1, 2, 0}, {4}, true);
  auto y = relu(x);
  CHECK(std::isnan(y.to_vector()[0]));
  CHECK(y.to_vector()[1] == 0);
  CHECK(y.to_vector()[2] == 2);
  CHECK(y.to_vector()[3] == 0);
  y.backward(xt::xarray<double>({1.0, 1.0, 1.0, 1.0}));
  CHECK(x.grad() == xt::xarray<double>({1, 0, 1, 0}));
}

TEST_CASE("elementwise ops on float tensors agree with double", "[elementwise]") {
  Generator gen(5);
  auto xd = TensorD::uniform({3, 4}, 0.5, 2.0, gen);
  auto yd = TensorD::uniform({4}, 0.5, 2.0, gen);
  TensorF xf(xt::xarray<float>(xt::cast<float>(xd.data())));
  TensorF yf(xt::xarray<float>(xt::cast<float>(yd.data())));
  auto to_double = [](const TensorF& t) { return xt::xarray<double>(xt::cast<double>(t.data())); };
  CHECK(allclose(to_double(xf * yf + xf / yf - yf), (xd * yd + xd / yd - yd).data(), 1e-5, 1e-6));
  CHECK(allclose(to_double(pow(xf, yf)), pow(xd, yd).data(), 1e-5, 1e-6));
  CHECK(allclose(to_double(sigmoid(log(xf)) * sqrt(xf) + tanh(exp(yf))),
                 (sigmoid(log(xd)) * sqrt(xd) + tanh(exp(yd))).data(), 1e-5, 1e-6));
}

TEST_CASE("zero-size operands give zero-size results and gradients", "[elementwise]") {
  auto a = TensorD::zeros({0, 3}, true);
  auto b = TensorD::ones({1, 3}, true);
  auto y = a * b + exp(a);
  CHECK(y.shape() == Shape{0, 3});
  y.backward(xt::xarray<double>(xt::zeros<double>({0, 3})));
  CHECK(a.grad().size() == 0);
  CHECK(b.grad() == xt::xarray<double>({{0, 0, 0}}));
  CHECK((TensorD::zeros({2, 0}) + TensorD::zeros({1})).shape() == Shape{2, 0});
}

// ---------------------------------------------------------------------------------------------------
// broadcast helpers and errors

TEST_CASE("broadcast_shapes follows NumPy/PyTorch rules", "[elementwise]") {
  CHECK(broadcast_shapes("t", {3, 1}, {1, 4}) == Shape{3, 4});
  CHECK(broadcast_shapes("t", {2, 1, 5}, {5}) == Shape{2, 1, 5});
  CHECK(broadcast_shapes("t", {}, {2, 3}) == Shape{2, 3});
  CHECK(broadcast_shapes("t", {1}, {0}) == Shape{0});
  CHECK(broadcast_shapes("t", {4, 1, 3}, {2, 1}) == Shape{4, 2, 3});
}

TEST_CASE("unbroadcast sums over stretched and added dims", "[elementwise]") {
  const xt::xarray<double> g{{1, 2, 3}, {4, 5, 6}};
  CHECK((unbroadcast(g, {2, 3}) == g));
  CHECK((unbroadcast(g, {3}) == arr({5, 7, 9}, {3})));
  CHECK((unbroadcast(g, {1, 3}) == arr({5, 7, 9}, {1, 3})));
  CHECK((unbroadcast(g, {2, 1}) == arr({6, 15}, {2, 1})));
  CHECK((unbroadcast(g, {1}) == arr({21}, {1})));
  CHECK((unbroadcast(g, {}) == arr({21}, {})));
  xt::xarray<double> g3 = arr({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 2, 3});
  CHECK((unbroadcast(g3, {2, 1, 3}) == arr({3, 5, 7, 15, 17, 19}, {2, 1, 3})));
  CHECK((unbroadcast(g3, {2, 2, 1}) == arr({3, 12, 21, 30}, {2, 2, 1})));
  CHECK_THROWS_AS(unbroadcast(g, {4}), std::invalid_argument);
  CHECK_THROWS_WITH(unbroadcast(g, {4}), "unbroadcast: a gradient of shape [2, 3] cannot be reduced to shape [4]");
  CHECK_THROWS_AS(unbroadcast(g, {1, 2, 3}), std::invalid_argument);
}

TEST_CASE("broadcasting errors name the op and both shapes", "[elementwise]") {
  auto a = TensorD::zeros({2, 3});
  auto b = TensorD::zeros({4});
  CHECK_THROWS_AS(a + b, ShapeError);
  CHECK_THROWS_AS(a + b, std::invalid_argument);
  CHECK_THROWS_WITH(a + b, "add: shapes [2, 3] and [4] cannot be broadcast (dim 1: 3 vs 4)");
  CHECK_THROWS_WITH(a - b, "sub: shapes [2, 3] and [4] cannot be broadcast (dim 1: 3 vs 4)");
  CHECK_THROWS_WITH(a * b, "mul: shapes [2, 3] and [4] cannot be broadcast (dim 1: 3 vs 4)");
  CHECK_THROWS_WITH(a / b, "div: shapes [2, 3] and [4] cannot be broadcast (dim 1: 3 vs 4)");
  CHECK_THROWS_WITH(pow(a, b), "pow: shapes [2, 3] and [4] cannot be broadcast (dim 1: 3 vs 4)");
  CHECK_THROWS_WITH(minimum(a, b), "minimum: shapes [2, 3] and [4] cannot be broadcast (dim 1: 3 vs 4)");
  CHECK_THROWS_WITH(maximum(a, b), "maximum: shapes [2, 3] and [4] cannot be broadcast (dim 1: 3 vs 4)");
  CHECK_THROWS_WITH(TensorF::zeros({2, 1, 5}) + TensorF::zeros({3, 4}),
                    "add: shapes [2, 1, 5] and [3, 4] cannot be broadcast (dim 2: 5 vs 4)");
}

TEST_CASE("softplus and elu: values, torch's threshold and slope at 0, gradcheck", "[elementwise]") {
  auto x = TensorD::from_vector({-2, 0, 1, 20, 20.5, -1e-4}, {6}, true);
  const auto s = softplus(x);
  CHECK(s.data()(0) == Approx(std::log1p(std::exp(-2.0))).epsilon(1e-15));
  CHECK(s.data()(3) == Approx(std::log1p(std::exp(20.0))).epsilon(1e-15));  // at the threshold: still log1p
  CHECK(s.data()(4) == 20.5);                                               // past it: x itself
  CHECK(softplus(x, 2, 5).data()(2) == Approx(std::log1p(std::exp(2.0)) / 2).epsilon(1e-15));
  s.backward(xt::xarray<double>(xt::ones<double>({6})));
  CHECK(x.grad()(1) == 0.5);
  CHECK(x.grad()(4) == 1.0);
  CHECK(s.grad_fn_name() == "softplus");
  auto e = TensorD::from_vector({-1, 0, 2, -1e-8}, {4}, true);
  const auto y = elu(e, 0.5);
  CHECK(y.data()(0) == Approx(0.5 * std::expm1(-1.0)).epsilon(1e-15));
  CHECK(y.data()(2) == 2.0);
  CHECK(y.data()(3) == Approx(0.5 * -1e-8).epsilon(1e-7));  // expm1, not exp - 1
  y.backward(xt::xarray<double>(xt::ones<double>({4})));
  CHECK(e.grad()(1) == 0.5);  // x <= 0 takes alpha exp(x), as torch
  CHECK(e.grad()(2) == 1.0);
  const double nan = std::nan("");
  CHECK(std::isnan(softplus(TensorD::from_vector({nan}, {1})).data()(0)));
  CHECK(std::isnan(elu(TensorD::from_vector({nan}, {1})).data()(0)));
  CHECK_GRADCHECK([](const Inputs& in) { return softplus(in[0]); }, (Inputs{rand_input({3, 4}, 400, -5, 5)}));
  CHECK_GRADCHECK([](const Inputs& in) { return softplus(in[0], 0.5, 1.0); }, (Inputs{rand_input({3, 4}, 401, -5, 5)}));
  CHECK_GRADCHECK([](const Inputs& in) { return elu(in[0]); }, (Inputs{rand_input({3, 4}, 402, -3, 3)}));
  CHECK_GRADCHECK([](const Inputs& in) { return elu(in[0], 1.7); }, (Inputs{rand_input({3, 4}, 403, -3, 3)}));
}

TEST_CASE("fast_log1p and fast_expm1 in float stay within a few ulp of std::log1p and std::expm1", "[elementwise]") {
  // log1p at floats spaced by a ratio of 1.0001 from 1e-30 to 3e38 and in steps of 1e-4 over (-1, 0);
  // expm1 in steps of 0.0137 over [-100, 88) and at ratios of 1.01 toward 0 from both sides.
  double worst_log = 0, worst_exp = 0;
  const auto ulps = [](float got, float want) {
    return std::abs(static_cast<double>(got) - want) / (std::nextafter(std::abs(want), HUGE_VALF) - std::abs(want));
  };
  for (float z = 0; z < 3e38f; z = std::nextafter(z, HUGE_VALF) * 1.0001f + 1e-30f)
    worst_log = std::max(worst_log, ulps(detail::fast_log1p(z), std::log1p(z)));
  for (float z = -0.999f; z < 0; z += 1e-4f)
    worst_log = std::max(worst_log, ulps(detail::fast_log1p(z), std::log1p(z)));
  for (float v = -100; v < 88; v += 0.0137f) {  // fast_exp saturates to inf from 88, short of float's 88.7
    const float want = std::expm1(v);
    if (want == -1.0f || std::isinf(want)) continue;
    worst_exp = std::max(worst_exp, ulps(detail::fast_expm1(v), want));
  }
  for (float v = 1e-30f; v < 1; v *= 1.01f) {
    worst_exp = std::max(worst_exp, ulps(detail::fast_expm1(-v), std::expm1(-v)));
    worst_exp = std::max(worst_exp, ulps(detail::fast_expm1(v), std::expm1(v)));
  }
  CHECK(worst_log <= 4);
  CHECK(worst_exp <= 4);
  CHECK(detail::fast_log1p(HUGE_VALF) == HUGE_VALF);
  CHECK(detail::fast_log1p(-1.0f) == -HUGE_VALF);
  CHECK(std::isnan(detail::fast_log1p(-2.0f)));
  CHECK(std::isnan(detail::fast_log1p(std::nanf(""))));
  CHECK(detail::fast_log1p(0.0f) == 0.0f);
  CHECK(detail::fast_expm1(0.0f) == 0.0f);
  CHECK(detail::fast_expm1(-HUGE_VALF) == -1.0f);
  INFO("log1p " << worst_log << " ulp, expm1 " << worst_exp << " ulp");
}

TEST_CASE("softplus and elu in float (the fast paths) agree with double", "[elementwise]") {
  const auto xd = rand_input({64, 33}, 404, -30, 30);
  Tensor<float> xf(xt::cast<float>(xd.data()), true);
  const auto check = [&](const Tensor<float>& yf, const TensorD& yd) {
    CHECK(allclose(xt::xarray<double>(xt::cast<double>(yf.data())), yd.data(), 2e-6, 1e-30));
  };
  check(softplus(xf), softplus(TensorD(xt::cast<double>(xf.data()))));
  check(softplus(xf, 3, 10), softplus(TensorD(xt::cast<double>(xf.data())), 3, 10));
  check(elu(xf, 0.3), elu(TensorD(xt::cast<double>(xf.data())), 0.3));
}
