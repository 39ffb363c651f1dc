// jacobian(): the full Jacobian row by row through reverse mode, checked against central finite
// differences and against softmax's closed form diag(y) - y y^T.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/jacobian.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::allclose;
using tapegrad::testing::rand_input;

namespace {

// d f / d inputs[i] by central differences, laid out as jacobian() lays it out: [out..., in...].
xt::xarray<double> numeric_jacobian(const JacobianFunction<double>& f, std::vector<Tensor<double>> inputs,
                                    std::size_t i, double eps = 1e-6) {
  NoGradGuard no_grad;
  for (auto& x : inputs) x = Tensor<double>(x.data());
  const Shape out_shape = f(inputs).shape();
  const std::size_t out_n = f(inputs).numel(), in_n = inputs[i].numel();
  xt::xarray<double> jac = xt::zeros<double>({out_n, in_n});
  double* values = inputs[i].mutable_data().data();
  for (std::size_t j = 0; j < in_n; ++j) {
    const double original = values[j];
    values[j] = original + eps;
    const xt::xarray<double> plus = f(inputs).data();
    values[j] = original - eps;
    const xt::xarray<double> minus = f(inputs).data();
    values[j] = original;
    for (std::size_t r = 0; r < out_n; ++r) jac(r, j) = (plus.data()[r] - minus.data()[r]) / (2 * eps);
  }
  Shape shape = out_shape;
  shape.insert(shape.end(), inputs[i].shape().begin(), inputs[i].shape().end());
  jac.reshape(shape);
  return jac;
}

// diag(y) - y y^T for a vector y.
xt::xarray<double> softmax_jacobian(const xt::xarray<double>& y) {
  const std::size_t n = y.size();
  xt::xarray<double> jac = xt::zeros<double>({n, n});
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b) jac(a, b) = (a == b ? y(a) : 0.0) - y(a) * y(b);
  return jac;
}

}  // namespace

TEST_CASE("jacobian matches central finite differences for every input", "[jacobian]") {
  const JacobianFunction<double> f = [](const std::vector<Tensor<double>>& in) {
    return add(tanh(matmul(in[0], in[1])), mul(in[2], in[2]));  // [2, 3] @ [3, 4] + [4]^2 -> [2, 4]
  };
  const std::vector<Tensor<double>> inputs = {rand_input({2, 3}, 1), rand_input({3, 4}, 2), rand_input({4}, 3)};
  const auto jac = jacobian(f, inputs);
  REQUIRE(jac.size() == 3);
  CHECK(jac[0].shape() == Shape{2, 4, 2, 3});
  CHECK(jac[1].shape() == Shape{2, 4, 3, 4});
  CHECK(jac[2].shape() == Shape{2, 4, 4});
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    INFO("input " << i);
    CHECK(allclose(jac[i].data(), numeric_jacobian(f, inputs, i), 1e-6, 1e-8));
    CHECK_FALSE(jac[i].requires_grad());
  }
}

TEST_CASE("jacobian of softmax equals diag(y) - y y^T", "[jacobian]") {
  SECTION("a vector") {
    const auto x = rand_input({6}, 4, -3.0, 3.0);
    const auto y = softmax(x, 0).data();
    const auto jac = jacobian([](const Tensor<double>& v) { return softmax(v, 0); }, x);
    REQUIRE(jac.shape() == Shape{6, 6});
    CHECK(allclose(jac.data(), softmax_jacobian(y), 0.0, 1e-12));
  }
  SECTION("rows of a matrix: one block per row, zero across rows") {
    const auto x = rand_input({3, 5}, 5, -3.0, 3.0);
    const auto y = softmax(x, 1).data();
    const auto jac = jacobian([](const Tensor<double>& v) { return softmax(v, 1); }, x);
    REQUIRE(jac.shape() == Shape{3, 5, 3, 5});
    for (std::size_t r = 0; r < 3; ++r)
      for (std::size_t s = 0; s < 3; ++s) {
        const xt::xarray<double> block = xt::view(jac.data(), r, xt::all(), s, xt::all());
        const xt::xarray<double> expected = r == s ? softmax_jacobian(xt::xarray<double>(xt::view(y, r, xt::all())))
                                                   : xt::xarray<double>(xt::zeros<double>({5, 5}));
        INFO("rows " << r << ", " << s);
        CHECK(allclose(block, expected, 0.0, 1e-12));
      }
  }
}

TEST_CASE("jacobian leaves its inputs alone and records even under NoGradGuard", "[jacobian]") {
  auto x = rand_input({3}, 6);
  NoGradGuard no_grad;
  const auto jac = jacobian([](const Tensor<double>& v) { return mul(v, v); }, x);
  // d (x * x) / dx = diag(2x)
  xt::xarray<double> expected = xt::zeros<double>({3, 3});
  for (std::size_t i = 0; i < 3; ++i) expected(i, i) = 2 * x.data()(i);
  CHECK(allclose(jac.data(), expected, 0.0, 1e-15));
  CHECK_FALSE(x.has_grad());
  CHECK_FALSE(is_grad_enabled());
}

TEST_CASE("jacobian: a scalar output, an unused input, a constant output, float", "[jacobian]") {
  const auto x = rand_input({2, 3}, 7);
  const auto unused = rand_input({4}, 8);
  const auto jac = jacobian<double>([](const std::vector<Tensor<double>>& in) { return sum(exp(in[0])); }, {x, unused});
  CHECK(jac[0].shape() == Shape{2, 3});
  CHECK(allclose(jac[0].data(), xt::xarray<double>(xt::exp(x.data())), 1e-15, 0.0));
  CHECK(jac[1].shape() == Shape{4});
  CHECK(xt::all(xt::equal(jac[1].data(), 0.0)));

  const auto constant = jacobian([](const Tensor<double>&) { return Tensor<double>::ones({2}); }, x);
  CHECK(constant.shape() == Shape{2, 2, 3});
  CHECK(xt::all(xt::equal(constant.data(), 0.0)));

  const auto xf = Tensor<float>::from_vector({1.0f, 2.0f}, {2});
  const auto jf = jacobian([](const Tensor<float>& v) { return mul(v, 3.0f); }, xf);
  CHECK(jf.data() == xt::xarray<float>({{3.0f, 0.0f}, {0.0f, 3.0f}}));
}

TEST_CASE("jacobian: errors name the problem", "[jacobian]") {
  CHECK_THROWS_WITH(jacobian<double>([](const std::vector<Tensor<double>>& in) { return in[0]; }, {}),
                    "jacobian: no inputs to differentiate with respect to");
  CHECK_THROWS_WITH(jacobian([](const Tensor<double>& v) { return v; }, Tensor<double>()),
                    "jacobian: input 0 is undefined");
  CHECK_THROWS_WITH(jacobian([](const Tensor<double>&) { return Tensor<double>(); }, rand_input({2}, 9)),
                    "jacobian: the function returned an undefined tensor");
}
