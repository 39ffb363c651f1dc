// The tape itself: accumulation, reuse, detach, retain_grad, retain_graph, NoGradGuard, gradcheck.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>

#include "tapegrad/autograd/ops.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::rand_input;

TEST_CASE("a leaf's gradient accumulates across backward passes", "[tape]") {
  auto x = Tensor<double>::from_vector({1, 2, 3}, {3}, true);
  auto y = x * x;
  y.backward(xt::xarray<double>({1.0, 1.0, 1.0}));
  CHECK(x.grad() == xt::xarray<double>({2, 4, 6}));
  auto z = x * 3.0;
  z.backward(xt::xarray<double>({1.0, 1.0, 1.0}));
  CHECK(x.grad() == xt::xarray<double>({5, 7, 9}));
}

TEST_CASE("a tensor used several times gets the sum of its gradients", "[tape]") {
  auto x = Tensor<double>::scalar(2.0, true);
  auto y = x * x + x * 3.0 + exp(x) * x;  // dy/dx = 2x + 3 + e^x (1 + x)
  y.backward();
  CHECK(x.grad()() == Approx(2 * 2.0 + 3 + std::exp(2.0) * 3.0));
}

TEST_CASE("detach cuts the graph and shares the value", "[tape]") {
  auto x = Tensor<double>::scalar(3.0, true);
  auto d = x.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.is_leaf());
  auto y = x * d;  // d is a constant: dy/dx = d = 3
  y.backward();
  CHECK(x.grad()() == Approx(3.0));
  x.mutable_data()() = 5.0;
  CHECK(d.item() == 5.0);
}

TEST_CASE("retain_grad keeps a non-leaf gradient, others are not kept", "[tape]") {
  auto x = Tensor<double>::from_vector({1, 2}, {2}, true);
  auto h = x * 2.0;
  auto k = h + 1.0;
  h.retain_grad();
  auto y = k * k;
  y.backward(xt::xarray<double>({1.0, 1.0}));
  CHECK(h.has_grad());
  CHECK(h.grad() == xt::xarray<double>({6.0, 10.0}));  // 2k, k = 2x + 1
  CHECK_FALSE(k.has_grad());
  CHECK_THROWS_WITH(k.grad(), Catch::Contains("retain_grad"));
  CHECK(x.grad() == xt::xarray<double>({12.0, 20.0}));
}

TEST_CASE("a second backward over a freed graph throws, retain_graph allows it", "[tape]") {
  auto x = Tensor<double>::scalar(1.5, true);
  auto y = exp(x);
  y.backward(/*retain_graph=*/true);
  y.backward();
  CHECK(x.grad()() == Approx(2 * std::exp(1.5)));
  CHECK_THROWS_WITH(y.backward(), Catch::Contains("second time") && Catch::Contains("retain_graph"));
}

TEST_CASE("saved values are freed after backward", "[tape]") {
  auto x = Tensor<double>::from_vector({1, 2, 3}, {3}, true);
  std::weak_ptr<const xt::xarray<double>> saved_output;
  auto y = exp(x);
  saved_output = y.saved();
  auto s = y * 2.0;
  y = Tensor<double>();  // the user no longer holds exp's output; only its backward does
  CHECK_FALSE(saved_output.expired());
  s.backward(xt::xarray<double>({1.0, 1.0, 1.0}));
  CHECK(saved_output.expired());
}

TEST_CASE("NoGradGuard records nothing", "[tape]") {
  auto x = Tensor<double>::scalar(2.0, true);
  {
    NoGradGuard guard;
    CHECK_FALSE(is_grad_enabled());
    auto y = x * x;
    CHECK_FALSE(y.requires_grad());
    CHECK(y.is_leaf());
  }
  CHECK(is_grad_enabled());
  CHECK((x * x).requires_grad());
}

TEST_CASE("EnableGradGuard records inside a NoGradGuard, and each guard restores what it found", "[tape]") {
  auto x = Tensor<double>::scalar(2.0, true);
  NoGradGuard no_grad;
  {
    EnableGradGuard enable_grad;
    CHECK(is_grad_enabled());
    CHECK((x * x).requires_grad());
    {
      NoGradGuard inner;
      CHECK_FALSE((x * x).requires_grad());
    }
    CHECK(is_grad_enabled());
  }
  CHECK_FALSE(is_grad_enabled());
  CHECK_FALSE((x * x).requires_grad());
}

TEST_CASE("backward errors name the problem", "[tape][errors]") {
  auto c = Tensor<double>::from_vector({1, 2}, {2});
  CHECK_THROWS_WITH(c.backward(xt::xarray<double>({1.0, 1.0})), Catch::Contains("does not require grad"));
  auto x = Tensor<double>::from_vector({1, 2}, {2}, true);
  auto y = x * 2.0;
  CHECK_THROWS_WITH(y.backward(), Catch::Contains("one-element") && Catch::Contains("[2]"));
  CHECK_THROWS_AS(y.backward(xt::xarray<double>({1.0, 1.0, 1.0})), std::invalid_argument);
  CHECK_THROWS_WITH(Tensor<double>().shape(), Catch::Contains("undefined"));
}

TEST_CASE("a chain of 20 ops passes gradcheck", "[tape][gradcheck]") {
  auto f = [](const std::vector<Tensor<double>>& in) {
    Tensor<double> h = in[0];
    for (int i = 0; i < 5; ++i) h = tanh(h * in[1] + 0.1) * sigmoid(h) + in[1];  // 4 ops + ... per round
    return h;
  };
  CHECK_GRADCHECK(f, (std::vector<Tensor<double>>{rand_input({2, 3}, 1), rand_input({3}, 2)}));
}

TEST_CASE("gradcheck reports a wrong gradient with the input, element and values", "[gradcheck]") {
  // An op with a deliberately wrong backward (factor 3 instead of 2).
  auto bad_square = [](const std::vector<Tensor<double>>& in) {
    Tensor<double> out(in[0].data() * in[0].data());
    record(out, "bad_square", {in[0]}, [x = in[0].saved()](const xt::xarray<double>& g, GradInputs<double>& gi) {
      gi.accumulate(0, xt::xarray<double>(3.0 * g * *x));
    });
    return out;
  };
  auto result = gradcheck(bad_square, {rand_input({2, 2}, 3, 0.5, 1.0)});
  CHECK_FALSE(result.ok);
  CHECK_THAT(result.message, Catch::Contains("input 0") && Catch::Contains("element [0, 0]") &&
                                 Catch::Contains("analytic") && Catch::Contains("numeric"));
}

TEST_CASE("Generator: same seed, same numbers, and the state round-trips", "[generator]") {
  Generator a(42), b(42);
  for (int i = 0; i < 10; ++i) CHECK(a.next_u64() == b.next_u64());
  // A fixed value pins the stream across machines and compilers.
  CHECK(Generator(0).next_u64() == Generator(0).next_u64());
  Generator c(7);
  c.normal();
  const auto state = c.state();
  const double n1 = c.normal(), u1 = c.uniform();
  c.set_state(state);
  CHECK(c.normal() == n1);
  CHECK(c.uniform() == u1);
  auto p = Generator(1).permutation(10);
  std::sort(p.begin(), p.end());
  for (std::size_t i = 0; i < 10; ++i) CHECK(p[i] == i);
}

TEST_CASE("detect_anomaly: a NaN in an op's output names the op, the shape and its tape position", "[tape][anomaly]") {
  auto x = Tensor<double>::from_vector({1, -1, 2, 3}, {2, 2}, true);
  {
    auto y = log(x);  // off: NaN passes silently, as in torch
    CHECK(std::isnan(y.data()(0, 1)));
  }
  DetectAnomalyGuard guard;
  CHECK(is_anomaly_enabled());
  try {
    log(x);
    FAIL("no AnomalyError");
  } catch (const AnomalyError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("the forward of 'log'") &&
                                          Catch::Contains("recorded at tape position") &&
                                          Catch::Contains("NaN in its output of shape [2, 2] (first at flat index 1)"));
  }
  // Ops that record nothing (no input requires grad) are not on the tape and are not checked.
  CHECK_NOTHROW(log(x.detach()));
  // -inf is how masks are written: allowed in a forward output.
  const BoolArray mask = BoolArray({{false, true}, {false, false}});
  CHECK_NOTHROW(masked_fill(x, mask, -std::numeric_limits<double>::infinity()));
}

TEST_CASE("detect_anomaly: a non-finite gradient names the backward's op and input", "[tape][anomaly]") {
  // sqrt at 0 is finite forward, infinite backward: d sqrt(x) / dx = 1 / (2 sqrt(x)).
  auto x = Tensor<double>::from_vector({4, 0, 1}, {3}, true);
  auto y = sum(sqrt(x) * 2.0);
  {
    DetectAnomalyGuard guard;
    try {
      y.backward(/*retain_graph=*/true);
      FAIL("no AnomalyError");
    } catch (const AnomalyError& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains("the backward of 'sqrt'") &&
                                            Catch::Contains("inf in the gradient for input 0 of shape [3]") &&
                                            Catch::Contains("(first at flat index 1)"));
    }
  }
  CHECK_FALSE(is_anomaly_enabled());  // the guard restored the previous mode
  x.zero_grad();
  y.backward();  // off again: the infinity goes through as in torch
  CHECK(std::isinf(x.grad()(1)));
  // The positions name the order of recording: a later op has a larger one.
  set_detect_anomaly(true);
  auto a = Tensor<double>::from_vector({-1}, {1}, true);
  std::string first, second;
  try {
    log(a);
  } catch (const AnomalyError& e) {
    first = e.what();
  }
  try {
    log(a);
  } catch (const AnomalyError& e) {
    second = e.what();
  }
  set_detect_anomaly(false);
  const auto position = [](const std::string& m) {
    const auto at = m.find("tape position ") + 14;
    return std::stoull(m.substr(at, m.find(')', at) - at));
  };
  REQUIRE_FALSE(first.empty());
  REQUIRE_FALSE(second.empty());
  CHECK(position(second) > position(first));
}

TEST_CASE("a closure may take the gradient it is handed: the engine's buffer, or a copy of the caller's seed",
          "[tape]") {
  // double_it(x) = 2 x, whose backward writes 2 g over the buffer take_grad_output gives it.
  std::vector<bool> given_in_place;
  std::vector<bool> retained;
  const auto double_it = [&](const Tensor<double>& x) {
    Tensor<double> out(x.data() * 2.0);
    record(out, "double_it", {x}, [&](const xt::xarray<double>& g, GradInputs<double>& in) {
      const double* handed = g.data();
      xt::xarray<double> d = in.take_grad_output(g);
      given_in_place.push_back(d.data() == handed);
      retained.push_back(in.retain_graph());
      d *= 2.0;
      in.accumulate(0, std::move(d));
    });
    return out;
  };
  auto x = Tensor<double>::from_vector({1, 2, 3}, {3}, true);
  const xt::xarray<double> seed{1.0, 10.0, 100.0};
  double_it(double_it(x)).backward(seed);
  CHECK(x.grad() == xt::xarray<double>({4, 40, 400}));
  CHECK(seed == xt::xarray<double>({1.0, 10.0, 100.0}));  // the root's closure got a copy
  CHECK(given_in_place == std::vector<bool>{false, true});
  CHECK(retained == std::vector<bool>{false, false});

  x.zero_grad();
  given_in_place.clear(), retained.clear();
  auto y = double_it(double_it(x) * 1.0);
  y.backward(seed, /*retain_graph=*/true);
  CHECK(retained == std::vector<bool>{true, true});
  y.backward(seed);  // the graph was kept: the second pass gives the same gradient again
  CHECK(x.grad() == xt::xarray<double>({8, 80, 800}));
}
