// softmax and log_softmax: known values, torch's values along any dim, overflow and precision at the
// edges, fully masked rows, gradcheck and errors.
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
// sin(0.37 * i) for i = 0..23 as [2, 3, 4]: the input of the torch reference values below.
Tensor<double> wave_2x3x4(bool requires_grad = false) {
  std::vector<double> v(24);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37 * static_cast<double>(i));
  return Tensor<double>::from_vector(v, {2, 3, 4}, requires_grad);
}
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("softmax and log_softmax of [1, 2, 3] match the known values", "[softmax]") {
  auto x = Tensor<double>::from_vector({1, 2, 3}, {3});
  CHECK(allclose(softmax(x, 0).data(), values({0.09003057317038046, 0.24472847105479764, 0.6652409557748219}, {3}),
                 1e-12));
  CHECK(allclose(log_softmax(x, -1).data(), values({-2.40760596444438, -1.40760596444438, -0.40760596444438}, {3}),
                 1e-12));
  // Along dim 0 of a matrix: each column is normalized. 1 / (1 + e^2) and 1 / (1 + e^3).
  auto m = Tensor<double>::from_vector({1, 2, 3, 5}, {2, 2});
  const double a = 1 / (1 + std::exp(2.0)), b = 1 / (1 + std::exp(3.0));
  CHECK(allclose(softmax(m, 0).data(), values({a, b, 1 - a, 1 - b}, {2, 2}), 1e-12));
  // A 0-d tensor is a slice of one element.
  CHECK(softmax(Tensor<double>::scalar(3.0), -1).item() == 1.0);
}

TEST_CASE("softmax along a middle and a leading dim matches torch", "[softmax]") {
  const auto x = wave_2x3x4();
  const auto expected_softmax_dim1 =
      values({0.20387196611325123, 0.29419743153561767, 0.41151884887124385, 0.5339195729209903,  0.5519033962984332,
              0.5358803179893432,  0.4650441675022357,  0.36818696680406365, 0.24422463758831567, 0.16992225047503912,
              0.12343698362652042, 0.09789346027494604, 0.10785054875273939, 0.09048163852677286, 0.09174091727948196,
              0.10911123749329603, 0.19807065916796035, 0.24646041855058382, 0.32362216497141955, 0.42027631958504436,
              0.6940787920793002,  0.6630579429226433,  0.5846369177490985,  0.4706124429216595},
             {2, 3, 4});
  CHECK(allclose(softmax(x, 1).data(), expected_softmax_dim1, 1e-12));
  CHECK(allclose(softmax(x, -2).data(), expected_softmax_dim1, 1e-12));
  const auto expected_log_softmax_dim0 = values(
      {-0.3233116936671358, -0.229101113259404,   -0.1895319126782515,  -0.189876995364802,  -0.23027513625304577,
       -0.325714422929965,  -0.5016338363035874,  -0.7737875346447326,  -1.1153244418132755, -1.4508330210462035,
       -1.6926011467463773, -1.7781581200628482,  -1.2864426242404523,  -1.5859563709935287, -1.7564675037346313,
       -1.7548155383211117, -1.5814095407787285,  -1.2801749858304947,  -0.9302387979672895, -0.6185272241871939,
       -0.3972126138958816, -0.26706274276269965, -0.20339017194501982, -0.18506416797850214},
      {2, 3, 4});
  CHECK(allclose(log_softmax(x, 0).data(), expected_log_softmax_dim0, 1e-12));
}

TEST_CASE("softmax subtracts the max: huge logits do not overflow, in float too", "[softmax]") {
  auto x = Tensor<float>::from_vector({1000.f, 1000.f, -1000.f, 2000.f, 2001.f, 1999.f}, {2, 3});
  const auto y = softmax(x, 1).data();
  CHECK(y(0, 0) == Approx(0.5f));
  CHECK(y(0, 1) == Approx(0.5f));
  CHECK(y(0, 2) == 0.f);
  CHECK(y(1, 1) == Approx(1 / (1 + std::exp(-1.f) + std::exp(-2.f))));
  const auto ly = log_softmax(x, 1).data();
  CHECK(std::isfinite(ly(0, 2)));
  CHECK(ly(0, 2) == Approx(-2000.f - std::log(2.f)));
}

TEST_CASE("log-probabilities near 0 keep their precision for logits far from 0, in float", "[softmax][loss]") {
  // log p = -log(1 + e^-10) = -4.54e-5. Folding the max into the log-sum first, 1000 + 4.54e-5,
  // would round it to a multiple of ulp(1000) = 6.1e-5, i.e. 34% or 100% off. What remains is the
  // rounding of 1 + e^-10 in the sum (0.13% at most).
  const float expected = -std::log1p(std::exp(-10.f));
  const auto rows = Tensor<float>::from_vector({1000.f, 990.f}, {1, 2});
  CHECK(log_softmax(rows, 1).data()(0, 0) == Approx(expected).epsilon(1e-2));
  const auto strided = Tensor<float>::from_vector({1000.f, 1000.f, 990.f, 990.f}, {2, 2});
  CHECK(log_softmax(strided, 0).data()(0, 1) == Approx(expected).epsilon(1e-2));
  CHECK(cross_entropy(rows, ids({0}, {1})).item() == Approx(-expected).epsilon(1e-2));
}

TEST_CASE("a fully masked (all -inf) softmax row gives NaN as in torch, and other rows are unaffected", "[softmax]") {
  auto x = Tensor<double>::from_vector({1, 2, 3, -kInf, -kInf, -kInf, 0, -kInf, 0}, {3, 3}, true);
  auto y = softmax(x, 1);
  for (std::size_t j = 0; j < 3; ++j) CHECK(std::isnan(y.data()(1, j)));
  CHECK(y.data()(0, 2) == Approx(0.6652409557748219));
  CHECK(y.data()(2, 0) == 0.5);
  CHECK(y.data()(2, 1) == 0.0);  // a partly masked row is fine
  y.backward(values({1, 2, 3, 1, 2, 3, 1, 2, 3}, {3, 3}));
  for (std::size_t j = 0; j < 3; ++j) {
    CHECK(std::isnan(x.grad()(1, j)));
    CHECK(std::isfinite(x.grad()(0, j)));
  }
  // torch: softmax backward of [1, 2, 3] with g = [1, 2, 3] is [-0.1418, -0.1408, 0.2826].
  CHECK(x.grad()(0, 0) == Approx(0.09003057317038046 * (1 - 2.5752103826044214)));
  // log_softmax of a masked row is NaN too, even for one-element slices (torch gives NaN as well).
  auto lx = Tensor<double>::from_vector({-kInf, -kInf}, {1, 2});
  for (std::int64_t dim : {0, 1}) {
    const auto ly = log_softmax(lx, dim).data();
    CHECK(std::isnan(ly(0, 0)));
    CHECK(std::isnan(ly(0, 1)));
  }
}

TEST_CASE("softmax and log_softmax pass gradcheck along every dim", "[softmax][gradcheck]") {
  for (std::int64_t dim : {0, 1, 2, -1, -2, -3}) {
    INFO("dim " << dim);
    CHECK_GRADCHECK([dim](const Inputs& in) { return softmax(in[0], dim); },
                    (Inputs{rand_input({2, 3, 4}, 11, -2, 2)}));
    CHECK_GRADCHECK([dim](const Inputs& in) { return log_softmax(in[0], dim); },
                    (Inputs{rand_input({2, 3, 4}, 12, -2, 2)}));
  }
  CHECK_GRADCHECK([](const Inputs& in) { return softmax(in[0], 0); }, (Inputs{rand_input({5}, 13)}));
  CHECK_GRADCHECK([](const Inputs& in) { return log_softmax(in[0], -1); }, (Inputs{rand_input({4, 7}, 14)}));
  CHECK_GRADCHECK([](const Inputs& in) { return softmax(in[0], 1); }, (Inputs{rand_input({3, 1, 2}, 15)}));
}

TEST_CASE("softmax errors name the dim and the rank", "[softmax][errors]") {
  auto x = Tensor<double>::zeros({2, 3});
  CHECK_THROWS_AS(softmax(x, 2), std::invalid_argument);
  CHECK_THROWS_WITH(softmax(x, 2), Catch::Contains("softmax") && Catch::Contains("dim 2") && Catch::Contains("rank 2"));
  CHECK_THROWS_WITH(log_softmax(x, -3), Catch::Contains("log_softmax") && Catch::Contains("dim -3"));
  CHECK_THROWS_WITH(softmax(Tensor<double>::scalar(1.0), 1), Catch::Contains("dim 1"));
}
