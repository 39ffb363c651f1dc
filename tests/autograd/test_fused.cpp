// The fused ops: linear_activation (a linear layer with its bias and activation) and add_layer_norm
// (the residual add and the layer norm after it). Each must give what the composed ops give, value and
// every gradient, bit for bit and for any thread count, and pass gradcheck in double.
#include <catch2/catch.hpp>
#include <vector>

#include "tapegrad/autograd/ops.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::testing;

namespace {

// A fresh leaf of t's value (float or double) that requires grad.
template <typename T>
Tensor<T> leaf(const Tensor<double>& t) {
  const auto& v = t.data();
  return Tensor<T>::from_vector(std::vector<T>(v.begin(), v.end()), t.shape(), true);
}

const char* name(Activation a) { return a == Activation::ReLU ? "relu" : a == Activation::GELU ? "gelu" : "gelu tanh"; }

// The activation by the elementwise ops.
template <typename T>
Tensor<T> activate(Activation a, const Tensor<T>& z) {
  if (a == Activation::ReLU) return relu(z);
  return gelu(z, a == Activation::GELUTanh ? GeluApproximate::Tanh : GeluApproximate::None);
}

// y = f(inputs) and the gradients of sum(y * g) for each input, for the fused or the composed form.
template <typename T, typename F>
std::vector<xt::xarray<T>> value_and_grads(F f, const std::vector<Tensor<double>>& values, std::uint64_t seed) {
  std::vector<Tensor<T>> in;
  for (const auto& v : values) in.push_back(leaf<T>(v));
  auto y = f(in);
  const auto g = leaf<T>(rand_input(y.shape(), seed));
  y.backward(g.data());
  std::vector<xt::xarray<T>> out{y.data()};
  for (auto& t : in) out.push_back(t.grad());
  return out;
}

template <typename T>
void check_same(const std::vector<xt::xarray<T>>& a, const std::vector<xt::xarray<T>>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("result " << i << " (0: the value, then the gradient of each input)");
    CHECK(a[i] == b[i]);
  }
}
}  // namespace

TEMPLATE_TEST_CASE("linear_activation equals the activation of linear, values and gradients, at 1 and 2 threads",
                   "[fused][linear]", float, double) {
  using T = TestType;
  // 2100 rows of 48 outputs: several of the op's row blocks (32768 elements each), and a ragged last one.
  const Inputs values{rand_input({3, 700, 16}, 1, -2, 2), rand_input({48, 16}, 2), rand_input({48}, 3)};
  for (auto activation : {Activation::ReLU, Activation::GELU, Activation::GELUTanh}) {
    INFO(name(activation));
    const auto composed = [activation](const std::vector<Tensor<T>>& in) {
      const auto z = linear(in[0], in[1], in[2]);
      return activate(activation, z);
    };
    const auto fused = [activation](const std::vector<Tensor<T>>& in) {
      return linear_activation(in[0], in[1], in[2], activation);
    };
    at_thread_counts(
        {1, 2}, [&] { check_same(value_and_grads<T>(fused, values, 4), value_and_grads<T>(composed, values, 4)); });
    // Without a bias, and with a single row.
    const auto no_bias = [activation](const std::vector<Tensor<T>>& in) {
      return linear_activation(in[0], in[1], Tensor<T>(), activation);
    };
    const auto no_bias_composed = [activation](const std::vector<Tensor<T>>& in) {
      const auto z = linear(in[0], in[1]);
      return activate(activation, z);
    };
    const Inputs row{rand_input({16}, 5, -2, 2), rand_input({48, 16}, 6)};
    check_same(value_and_grads<T>(no_bias, row, 7), value_and_grads<T>(no_bias_composed, row, 7));
  }
}

TEST_CASE("linear_activation passes gradcheck with every activation, with and without bias", "[fused][gradcheck]") {
  for (auto activation : {Activation::ReLU, Activation::GELU, Activation::GELUTanh}) {
    INFO(name(activation));
    CHECK_GRADCHECK([activation](const Inputs& in) { return linear_activation(in[0], in[1], in[2], activation); },
                    (Inputs{rand_input({2, 3, 4}, 11, -2, 2), rand_input({5, 4}, 12), rand_input({5}, 13)}));
    CHECK_GRADCHECK(
        [activation](const Inputs& in) { return linear_activation(in[0], in[1], Tensor<double>(), activation); },
        (Inputs{rand_input({3, 4}, 14, -2, 2), rand_input({2, 4}, 15)}));
  }
}

TEST_CASE("linear_activation errors name the op and the shapes", "[fused][errors]") {
  const auto x = Tensor<double>::zeros({2, 3});
  CHECK_THROWS_AS(linear_activation(x, Tensor<double>::zeros({4, 5}), {}, Activation::ReLU), ShapeError);
  CHECK_THROWS_WITH(linear_activation(x, Tensor<double>::zeros({4, 5}), {}, Activation::ReLU),
                    Catch::Contains("linear_activation") && Catch::Contains("[2, 3]") && Catch::Contains("[4, 5]"));
  CHECK_THROWS_WITH(linear_activation(x, Tensor<double>::zeros({4, 3}), Tensor<double>::zeros({3}), Activation::GELU),
                    Catch::Contains("linear_activation") && Catch::Contains("bias [3]"));
}

TEMPLATE_TEST_CASE("add_layer_norm equals layer_norm of the sum, values and gradients, at 1 and 2 threads",
                   "[fused][layer_norm]", float, double) {
  using T = TestType;
  // 4096 rows of 64: the normalization's row blocks split over the threads.
  const Inputs values{rand_input({8, 512, 64}, 21, -3, 3), rand_input({8, 512, 64}, 22), rand_input({64}, 23),
                      rand_input({64}, 24)};
  const auto composed = [](const std::vector<Tensor<T>>& in) { return layer_norm(in[0] + in[1], {64}, in[2], in[3]); };
  const auto fused = [](const std::vector<Tensor<T>>& in) { return add_layer_norm(in[0], in[1], {64}, in[2], in[3]); };
  at_thread_counts(
      {1, 2}, [&] { check_same(value_and_grads<T>(fused, values, 25), value_and_grads<T>(composed, values, 25)); });
  // No affine parameters, two normalized dims, and eps.
  const Inputs plain{rand_input({5, 3, 4}, 26), rand_input({5, 3, 4}, 27)};
  check_same(value_and_grads<T>(
                 [](const auto& in) {
                   return add_layer_norm(in[0], in[1], {3, 4}, {}, {}, 1e-3);
                 },
                 plain, 28),
             value_and_grads<T>(
                 [](const auto& in) {
                   return layer_norm(in[0] + in[1], {3, 4}, {}, {}, 1e-3);
                 },
                 plain, 28));
}

TEST_CASE("add_layer_norm passes gradcheck with and without weight and bias", "[fused][gradcheck]") {
  CHECK_GRADCHECK(
      [](const Inputs& in) { return add_layer_norm(in[0], in[1], {5}, in[2], in[3]); },
      (Inputs{rand_input({2, 3, 5}, 31, -2, 2), rand_input({2, 3, 5}, 32), rand_input({5}, 33), rand_input({5}, 34)}));
  CHECK_GRADCHECK(
      [](const Inputs& in) {
        return add_layer_norm(in[0], in[1], {2, 3});
      },
      (Inputs{rand_input({4, 2, 3}, 35, -2, 2), rand_input({4, 2, 3}, 36)}));
  // Only the residual requires grad (x is a constant), and the same tensor on both sides.
  const auto x = Tensor<double>(rand_input({3, 4}, 37).data());
  CHECK_GRADCHECK([x](const Inputs& in) { return add_layer_norm(x, in[0], {4}); }, (Inputs{rand_input({3, 4}, 38)}));
  CHECK_GRADCHECK([](const Inputs& in) { return add_layer_norm(in[0], in[0], {4}); }, (Inputs{rand_input({3, 4}, 39)}));
}

TEST_CASE("add_layer_norm errors name the op and the shapes", "[fused][errors]") {
  const auto x = Tensor<double>::zeros({2, 3});
  CHECK_THROWS_AS(add_layer_norm(x, Tensor<double>::zeros({2, 4}), {3}), ShapeError);
  CHECK_THROWS_WITH(add_layer_norm(x, Tensor<double>::zeros({1, 3}), {3}),
                    Catch::Contains("add_layer_norm") && Catch::Contains("[1, 3]") && Catch::Contains("[2, 3]"));
  CHECK_THROWS_WITH(add_layer_norm(x, x, {4}), Catch::Contains("add_layer_norm") && Catch::Contains("[4]"));
  CHECK_THROWS_WITH(add_layer_norm(x, x, {3}, Tensor<double>::ones({4})),
                    Catch::Contains("add_layer_norm") && Catch::Contains("weight"));
}
