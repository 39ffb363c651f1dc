// masked_fill, where, tril and triu: values, gradients with broadcasting, and errors.
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
// 0, 1, ..., 11 as [3, 4].
Tensor<double> count_3x4(bool requires_grad = false) {
  return Tensor<double>::from_vector({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4}, requires_grad);
}
BoolArray mask(const std::vector<bool>& v, const Shape& shape) {
  BoolArray a = BoolArray::from_shape(shape);
  std::copy(v.begin(), v.end(), a.begin());
  return a;
}
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("masked_fill fills where a broadcast mask is true and passes no gradient there", "[masking]") {
  auto x = Tensor<double>::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, true);
  auto rows = masked_fill(x, mask({true, false}, {2, 1}), -1.0);
  CHECK(allclose(rows.data(), values({-1, -1, -1, 4, 5, 6}, {2, 3})));
  auto cols = masked_fill(x, mask({false, true, false}, {3}), 9.0);
  CHECK(allclose(cols.data(), values({1, 9, 3, 4, 9, 6}, {2, 3})));
  CHECK(allclose(masked_fill(x, mask({true}, {}), 0.0).data(), values({0, 0, 0, 0, 0, 0}, {2, 3})));
  (rows + cols).backward(values({1, 1, 1, 1, 1, 1}, {2, 3}));
  CHECK(allclose(x.grad(), values({1, 0, 1, 2, 1, 2}, {2, 3})));  // rows' plus cols' pass-through
  // The usual attention mask: -inf at masked keys, then softmax.
  auto scores = Tensor<double>::from_vector({1, 2, 3, 1, 2, 3}, {2, 3});
  auto probs = softmax(masked_fill(scores, mask({false, false, true, false, true, true}, {2, 3}), -kInf), -1);
  CHECK(probs.data()(0, 2) == 0.0);
  CHECK(probs.data()(1, 0) == 1.0);
  CHECK(probs.data()(0, 0) == Approx(1 / (1 + std::exp(1.0))));
}

TEST_CASE("masked_fill passes gradcheck with broadcast masks", "[masking][gradcheck]") {
  for (const auto& m : {mask({true, false, true, false}, {4}), mask({false, true, true}, {3, 1}),
                        mask({true, false, false, true}, {1, 1, 4}), mask({false}, {}),
                        mask({true, false, true, false, false, true, false, true, true, false, true, true}, {3, 4})}) {
    CHECK_GRADCHECK([&](const Inputs& in) { return masked_fill(in[0], m, 0.5); }, (Inputs{rand_input({2, 3, 4}, 81)}));
  }
}

TEST_CASE("where selects elementwise with all three operands broadcast", "[masking]") {
  // torch.where(tensor([True, False]), tensor([[1.], [2.]]), tensor(5.)) == [[1, 5], [2, 5]].
  auto a = Tensor<double>::from_vector({1, 2}, {2, 1}, true);
  auto b = Tensor<double>::scalar(5.0, true);
  auto y = tapegrad::where(mask({true, false}, {2}), a, b);
  CHECK(y.shape() == Shape{2, 2});
  CHECK(allclose(y.data(), values({1, 5, 2, 5}, {2, 2})));
  y.backward(values({1, 2, 3, 4}, {2, 2}));
  CHECK(allclose(a.grad(), values({1, 3}, {2, 1})));
  CHECK(b.grad()() == 6.0);
  // The condition alone can set the output shape.
  auto z = tapegrad::where(mask({true, false, false, true}, {2, 2}), Tensor<double>::scalar(1.0),
                           Tensor<double>::scalar(0.0));
  CHECK(allclose(z.data(), values({1, 0, 0, 1}, {2, 2})));
}

TEST_CASE("where passes gradcheck with broadcasting", "[masking][gradcheck]") {
  const BoolArray c1 = mask({true, false, true, true, false, false}, {2, 1, 3});
  CHECK_GRADCHECK([&](const Inputs& in) { return tapegrad::where(c1, in[0], in[1]); },
                  (Inputs{rand_input({4, 3}, 91), rand_input({}, 92)}));
  const BoolArray c2 = mask({true, false, false, true}, {4});
  CHECK_GRADCHECK([&](const Inputs& in) { return tapegrad::where(c2, in[0], in[1]); },
                  (Inputs{rand_input({3, 1}, 93), rand_input({3, 4}, 94)}));
  // Only one side requires grad.
  auto constant = Tensor<double>(rand_input({3, 4}, 95).data());
  CHECK_GRADCHECK([&](const Inputs& in) { return tapegrad::where(c2, constant, in[0]); },
                  (Inputs{rand_input({4}, 96)}));
}

TEST_CASE("tril and triu keep a triangle of the last two dims, as torch", "[masking]") {
  // torch 1.13: x = torch.arange(24.).reshape(2, 3, 4); tril(x, 1), then backward(2 * ones).
  std::vector<double> v(24);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  auto x = Tensor<double>::from_vector(v, {2, 3, 4}, true);
  auto lower = tril(x, 1);
  CHECK(lower.data() ==
        values({0, 1, 0, 0, 4, 5, 6, 0, 8, 9, 10, 11, 12, 13, 0, 0, 16, 17, 18, 0, 20, 21, 22, 23}, {2, 3, 4}));
  CHECK(lower.grad_fn_name() == "tril");
  lower.backward(xt::xarray<double>(xt::ones<double>({2, 3, 4}) * 2.0));
  CHECK(x.grad() == values({2, 2, 0, 0, 2, 2, 2, 0, 2, 2, 2, 2, 2, 2, 0, 0, 2, 2, 2, 0, 2, 2, 2, 2}, {2, 3, 4}));
  auto m = count_3x4();
  CHECK(tril(m).data() == values({0, 0, 0, 0, 4, 5, 0, 0, 8, 9, 10, 0}, {3, 4}));
  CHECK(tril(m, -1).data() == values({0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0}, {3, 4}));
  CHECK(triu(m).data() == values({0, 1, 2, 3, 0, 5, 6, 7, 0, 0, 10, 11}, {3, 4}));
  CHECK(triu(m, 2).data() == values({0, 0, 2, 3, 0, 0, 0, 7, 0, 0, 0, 0}, {3, 4}));
  CHECK(triu(m, -1).data() == values({0, 1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11}, {3, 4}));
  // Diagonals past the matrix keep all or nothing, however far (no overflow at the extremes).
  CHECK(tril(m, 5).data() == m.data());
  CHECK(triu(m, -5).data() == m.data());
  CHECK(tril(m, -3).data() == values(std::vector<double>(12, 0.0), {3, 4}));
  CHECK(triu(m, 4).data() == values(std::vector<double>(12, 0.0), {3, 4}));
  CHECK(tril(m, std::numeric_limits<std::int64_t>::max()).data() == m.data());
  CHECK(triu(m, std::numeric_limits<std::int64_t>::min()).data() == m.data());
  CHECK(tril(m, std::numeric_limits<std::int64_t>::min()).data() == values(std::vector<double>(12, 0.0), {3, 4}));
  // Zeroed means zero: a NaN outside the triangle is gone, as in torch.
  auto n = Tensor<double>::from_vector({1, std::nan(""), 3, 4}, {2, 2});
  CHECK(tril(n).data() == values({1, 0, 3, 4}, {2, 2}));
  CHECK(tril(Tensor<double>::zeros({2, 0, 3})).shape() == Shape{2, 0, 3});
  CHECK(triu(Tensor<float>::ones({2, 2})).to_vector() == std::vector<float>{1, 1, 0, 1});
}

TEST_CASE("tril and triu pass gradcheck, and record nothing under NoGradGuard", "[masking][gradcheck]") {
  for (std::int64_t diagonal : {0, 1, -1, 3, -4}) {
    INFO("diagonal " << diagonal);
    CHECK_GRADCHECK([&](const Inputs& in) { return tril(in[0], diagonal); }, (Inputs{rand_input({2, 3, 4}, 71)}));
    CHECK_GRADCHECK([&](const Inputs& in) { return triu(in[0], diagonal); }, (Inputs{rand_input({4, 3}, 72)}));
  }
  auto x = rand_input({3, 3}, 73);
  NoGradGuard no_grad;
  CHECK(tril(x).is_leaf());
  CHECK_FALSE(triu(x).requires_grad());
}

TEST_CASE("masking errors name the shapes", "[masking][errors]") {
  auto x = Tensor<double>::zeros({3});
  CHECK_THROWS_AS(masked_fill(x, mask({true, false}, {2, 1}), 0.0), std::invalid_argument);
  CHECK_THROWS_WITH(masked_fill(x, mask({true, false}, {2, 1}), 0.0),
                    Catch::Contains("masked_fill") && Catch::Contains("[2, 1]") && Catch::Contains("[3]"));
  CHECK_THROWS_WITH(masked_fill(x, mask({true, false}, {2}), 0.0), Catch::Contains("[2]") && Catch::Contains("[3]"));
  CHECK_THROWS_AS(tapegrad::where(mask({true, false}, {2}), x, x), std::invalid_argument);
  CHECK_THROWS_AS(tril(x), ShapeError);
  CHECK_THROWS_WITH(tril(x), "tril: expects a tensor with at least 2 dims, got 1-D [3]");
  CHECK_THROWS_WITH(triu(Tensor<double>::scalar(1), 1), "triu: expects a tensor with at least 2 dims, got 0-D []");
  CHECK_THROWS_WITH(
      tapegrad::where(mask({true, false}, {2}), x, Tensor<double>::zeros({4, 1})),
      Catch::Contains("where") && Catch::Contains("[2]") && Catch::Contains("[3]") && Catch::Contains("[4, 1]"));
}
