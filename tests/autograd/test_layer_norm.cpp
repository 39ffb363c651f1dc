// layer_norm and rms_norm: hand-computed and torch values, gradients, thread counts and errors.
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

TEST_CASE("layer_norm of [1, 2, 4] matches a hand computation with the biased variance", "[layer_norm]") {
  auto x = Tensor<double>::from_vector({1, 2, 4}, {1, 3});
  const double mean = 7.0 / 3, var = 14.0 / 9;  // ((4/3)^2 + (1/3)^2 + (5/3)^2) / 3
  const double s = 1 / std::sqrt(var + 1e-5);
  CHECK(allclose(layer_norm(x, {3}).data(), values({(1 - mean) * s, (2 - mean) * s, (4 - mean) * s}, {1, 3}), 1e-12));
  CHECK(layer_norm(x, {3}).data()(0, 0) == Approx(-1.069041531450298).epsilon(1e-12));  // torch
  CHECK(layer_norm(x, {3}, {}, {}, 0.5).data()(0, 2) == Approx((4 - mean) / std::sqrt(var + 0.5)));
}

TEST_CASE("layer_norm with weight and bias matches torch, values and gradients", "[layer_norm]") {
  auto x = Tensor<double>::from_vector({1, 2, 4, -1, 0.5, 0.25}, {2, 3}, true);
  auto w = Tensor<double>::from_vector({0.5, 2, -1}, {3}, true);
  auto b = Tensor<double>::from_vector({0.1, 0, -0.2}, {3}, true);
  auto y = layer_norm(x, {3}, w, b);
  CHECK(allclose(y.data(),
                 values({-0.43452076572514897, -0.5345207657251492, -1.5363019143128718, -0.5984925870213293,
                         1.7779811305997475, -0.7079946087427851},
                        {2, 3}),
                 1e-10));
  y.backward(values({1, 0, 2, -1, 1, 0.5}, {2, 3}));
  CHECK(allclose(x.grad(),
                 values({-0.11453427348481893, 0.17181171877572599, -0.0572774452909075, 0.30721817182412114,
                         1.5362973295532356, -1.8435155013773565},
                        {2, 3}),
                 1e-8, 1e-12));
  CHECK(allclose(w.grad(), values({0.32794364259236075, 0.8889905652998737, 2.926601132997136}, {3}), 1e-8));
  CHECK(allclose(b.grad(), values({0, 1, 2.5}, {3})));
}

TEST_CASE("layer_norm output rows have zero mean and unit variance, in float", "[layer_norm]") {
  Generator gen(5);
  auto x = Tensor<float>::normal({4, 64}, 3.f, 10.f, gen);
  const auto y = layer_norm(x, {64}).data();
  for (std::size_t r = 0; r < 4; ++r) {
    double m = 0, v = 0;
    for (std::size_t j = 0; j < 64; ++j) m += y(r, j);
    m /= 64;
    for (std::size_t j = 0; j < 64; ++j) v += (y(r, j) - m) * (y(r, j) - m);
    CHECK(std::abs(m) < 1e-5);
    CHECK(v / 64 == Approx(1.0).epsilon(1e-4));
  }
}

TEST_CASE("layer_norm passes gradcheck with and without weight and bias, over 1 and 2 trailing dims",
          "[layer_norm][gradcheck]") {
  CHECK_GRADCHECK([](const Inputs& in) { return layer_norm(in[0], {4}); }, (Inputs{rand_input({3, 4}, 41, -2, 2)}));
  CHECK_GRADCHECK([](const Inputs& in) { return layer_norm(in[0], {5}, in[1], in[2]); },
                  (Inputs{rand_input({2, 3, 5}, 42, -2, 2), rand_input({5}, 43), rand_input({5}, 44)}));
  CHECK_GRADCHECK([](const Inputs& in) { return layer_norm(in[0], {5}, in[1]); },
                  (Inputs{rand_input({3, 5}, 45, -2, 2), rand_input({5}, 46)}));
  CHECK_GRADCHECK([](const Inputs& in) { return layer_norm(in[0], {5}, Tensor<double>(), in[1]); },
                  (Inputs{rand_input({3, 5}, 47, -2, 2), rand_input({5}, 48)}));
  CHECK_GRADCHECK(
      [](const Inputs& in) {
        return layer_norm(in[0], {3, 4}, in[1], in[2], 1e-3);
      },
      (Inputs{rand_input({2, 3, 4}, 49, -2, 2), rand_input({3, 4}, 50), rand_input({3, 4}, 51)}));
  CHECK_GRADCHECK([](const Inputs& in) { return layer_norm(in[0], {2, 3}); }, (Inputs{rand_input({2, 3}, 52, -2, 2)}));
  // Only the affine parameters require grad.
  auto x = Tensor<double>(rand_input({4, 3}, 53).data());
  CHECK_GRADCHECK([x](const Inputs& in) { return layer_norm(x, {3}, in[0], in[1]); },
                  (Inputs{rand_input({3}, 54), rand_input({3}, 55)}));
}

TEST_CASE("layer_norm errors name both shapes", "[layer_norm][errors]") {
  auto x = Tensor<double>::zeros({2, 3});
  CHECK_THROWS_AS(layer_norm(x, {4}), std::invalid_argument);
  CHECK_THROWS_WITH(layer_norm(x, {4}),
                    Catch::Contains("layer_norm") && Catch::Contains("[2, 3]") && Catch::Contains("[4]"));
  CHECK_THROWS_WITH(layer_norm(x, {1, 2, 3}), Catch::Contains("[2, 3]") && Catch::Contains("[1, 2, 3]"));
  CHECK_THROWS_WITH(layer_norm(x, {}), Catch::Contains("normalized_shape") && Catch::Contains("[2, 3]"));
  CHECK_THROWS_WITH(layer_norm(x, {3}, Tensor<double>::ones({4})),
                    Catch::Contains("weight") && Catch::Contains("[4]") && Catch::Contains("[3]"));
  CHECK_THROWS_WITH(layer_norm(x, {3}, Tensor<double>::ones({3}), Tensor<double>::zeros({1, 3})),
                    Catch::Contains("bias") && Catch::Contains("[1, 3]") && Catch::Contains("[3]"));
}

TEST_CASE("rms_norm of [1, 2, 4] matches a hand computation, eps defaulting to the dtype's epsilon", "[rms_norm]") {
  auto x = Tensor<double>::from_vector({1, 2, 4, -3, 0, 0}, {2, 3});
  const double eps = std::numeric_limits<double>::epsilon();
  const double s0 = 1 / std::sqrt(21.0 / 3 + eps), s1 = 1 / std::sqrt(9.0 / 3 + eps);
  CHECK(allclose(rms_norm(x, {3}).data(), values({s0, 2 * s0, 4 * s0, -3 * s1, 0, 0}, {2, 3}), 1e-15, 0));
  CHECK(rms_norm(x, {3}, {}, 0.5).data()(0, 2) == Approx(4 / std::sqrt(7.5)).epsilon(1e-14));
  auto w = Tensor<double>::from_vector({0.5, 2, -1}, {3});
  CHECK(rms_norm(x, {3}, w).data()(0, 1) == Approx(4 * s0).epsilon(1e-14));
  // In float the default eps is float's: a zero row gives zeros, its gradient g * w / sqrt(eps).
  auto zero = Tensor<float>::zeros({1, 4}, true);
  auto y = rms_norm(zero, {4});
  CHECK(y.data() == xt::xarray<float>(xt::zeros<float>({1, 4})));
  y.backward(xt::xarray<float>{{1, 2, 3, 4}});
  const float inv = 1 / std::sqrt(std::numeric_limits<float>::epsilon());
  CHECK(allclose(zero.grad(), xt::xarray<float>{{inv, 2 * inv, 3 * inv, 4 * inv}}, 1e-6, 0));
  CHECK(y.grad_fn_name() == "rms_norm");
}

TEST_CASE("rms_norm passes gradcheck with and without weight, over 1 and 2 trailing dims, at a zero row",
          "[rms_norm][gradcheck]") {
  CHECK_GRADCHECK([](const Inputs& in) { return rms_norm(in[0], {4}); }, (Inputs{rand_input({3, 4}, 141, -2, 2)}));
  CHECK_GRADCHECK([](const Inputs& in) { return rms_norm(in[0], {5}, in[1], 1e-5); },
                  (Inputs{rand_input({2, 3, 5}, 142, -2, 2), rand_input({5}, 143)}));
  CHECK_GRADCHECK(
      [](const Inputs& in) {
        return rms_norm(in[0], {3, 4}, in[1], 1e-3);
      },
      (Inputs{rand_input({2, 3, 4}, 144, -2, 2), rand_input({3, 4}, 145)}));
  // A row of zeros (eps keeps it finite and differentiable) beside ordinary rows.
  Tensor<double> with_zero(values({0, 0, 0, 0.5, -1, 2}, {2, 3}), true);
  CHECK_GRADCHECK([](const Inputs& in) { return rms_norm(in[0], {3}, in[1], 1e-2); },
                  (Inputs{with_zero, rand_input({3}, 146)}));
  // Only the weight requires grad.
  auto x = Tensor<double>(rand_input({4, 3}, 147).data());
  CHECK_GRADCHECK([x](const Inputs& in) { return rms_norm(x, {3}, in[0]); }, (Inputs{rand_input({3}, 148)}));
}

TEMPLATE_TEST_CASE("rms_norm: the same values and gradients at 1 and 2 threads", "[rms_norm]", float, double) {
  using T = TestType;
  Generator gen(149);
  // 3000 rows of 64: many row blocks for the weight's gradient, and a ragged last one.
  const auto run = [&](int threads) {
    const int before = get_num_threads();
    set_num_threads(threads);
    Generator g(150);
    auto x = Tensor<T>::normal({3000, 64}, T(0), T(2), g, true);
    auto w = Tensor<T>::normal({64}, T(1), T(0.1), g, true);
    auto y = rms_norm(x, {64}, w);
    y.backward(Tensor<T>::normal({3000, 64}, T(0), T(1), g).data());
    set_num_threads(before);
    return std::vector<xt::xarray<T>>{y.data(), x.grad(), w.grad()};
  };
  const auto one = run(1), two = run(2);
  for (std::size_t i = 0; i < one.size(); ++i) CHECK(one[i] == two[i]);
}

TEST_CASE("rms_norm errors name the shapes and eps", "[rms_norm][errors]") {
  auto x = Tensor<double>::zeros({2, 3});
  CHECK_THROWS_AS(rms_norm(x, {4}), ShapeError);
  CHECK_THROWS_WITH(rms_norm(x, {4}),
                    Catch::Contains("rms_norm") && Catch::Contains("[2, 3]") && Catch::Contains("[4]"));
  CHECK_THROWS_WITH(rms_norm(x, {}), Catch::Contains("normalized_shape") && Catch::Contains("[2, 3]"));
  CHECK_THROWS_WITH(rms_norm(x, {3}, Tensor<double>::ones({2, 3})),
                    Catch::Contains("weight") && Catch::Contains("[2, 3]") && Catch::Contains("[3]"));
  CHECK_THROWS_WITH(rms_norm(x, {3}, {}, -1e-5), Catch::Contains("eps") && Catch::Contains("-1e-05"));
}
