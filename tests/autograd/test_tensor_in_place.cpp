// The in-place ops of Tensor (x += y, fill_, zero_, copy_, masked_fill_, index_put_): the values they
// write, torch's autograd rules (a leaf that requires grad refuses them under grad mode; on the tape
// they are recorded and their gradients pass gradcheck), and values saved for backward staying right.
#include <catch2/catch.hpp>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "tapegrad/autograd/ops.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::indexing;
using tapegrad::testing::rand_input;

namespace {
using TD = Tensor<double>;
using Inputs = std::vector<TD>;

TD vec(std::vector<double> v, const Shape& shape) { return TD::from_vector(v, shape); }
}  // namespace

TEST_CASE("+=, -=, *= and /= change the tensor for every handle of it", "[tensor][in_place]") {
  TD x = vec({1, 2, 3, 4, 5, 6}, {2, 3});
  const TD alias = x;           // a copy of the handle, as a Python reference
  x += vec({10, 20, 30}, {3});  // the operand broadcasts to x's shape
  CHECK(alias.to_vector() == std::vector<double>{11, 22, 33, 14, 25, 36});
  x -= 1.0;
  x *= vec({2, 1, 1, 1, 1, 1}, {2, 3});
  x /= 2.0;
  CHECK(alias.to_vector() == std::vector<double>{10, 10.5, 16, 6.5, 12, 17.5});
  CHECK(x.is_leaf());
  CHECK_FALSE(x.requires_grad());
  // Chained as in torch: the operators return the tensor itself.
  TD y = vec({1, 2}, {2});
  (y += 1.0) *= 3.0;
  CHECK(y.to_vector() == std::vector<double>{6, 9});
}

TEST_CASE("an in-place op keeps the shape: an operand that would enlarge it is refused", "[tensor][in_place]") {
  TD x = vec({1, 2, 3}, {3});
  CHECK_THROWS_AS(x += TD::zeros({2, 3}), ShapeError);
  CHECK_THROWS_WITH(x += TD::zeros({2, 3}), Catch::Contains("add_") && Catch::Contains("[2, 3]") &&
                                                Catch::Contains("keeps the tensor's shape [3]"));
  CHECK(x.to_vector() == std::vector<double>{1, 2, 3});
}

TEST_CASE("a leaf that requires grad refuses in-place ops under grad mode, as in torch", "[tensor][in_place]") {
  TD w = TD::from_vector({1, 2}, {2}, /*requires_grad=*/true);
  CHECK_THROWS_AS(w += 1.0, std::logic_error);
  CHECK_THROWS_WITH(w.fill_(0), Catch::Contains("fill_") && Catch::Contains("leaf") &&
                                    Catch::Contains("requires grad") && Catch::Contains("NoGradGuard"));
  CHECK(w.to_vector() == std::vector<double>{1, 2});
  // Under NoGradGuard it is a plain write, as torch's `with torch.no_grad(): w -= lr * w.grad`; the
  // parameter stays a leaf that requires grad and keeps its gradient.
  (w * w).sum().backward();
  {
    NoGradGuard no_grad;
    w -= TD(w.grad()) * 0.5;
  }
  CHECK(w.to_vector() == std::vector<double>{0, 0});
  CHECK(w.is_leaf());
  CHECK(w.requires_grad());
  CHECK(w.grad() == xt::xarray<double>({2.0, 4.0}));
}

TEST_CASE("on the tape an in-place op becomes the tensor's history", "[tensor][in_place][gradcheck]") {
  const TD x = rand_input({2, 3}, 1), y = rand_input({3}, 2, 0.5, 1.5);
  TD h = x * 2.0;
  h += y;
  CHECK(h.grad_fn_name() == "add");
  h *= y;
  CHECK(h.grad_fn_name() == "mul");
  h.sum().backward();
  // h = (2x + y) * y: dh/dx = 2y, dh/dy = 2x + 2y summed over the rows.
  for (std::size_t j = 0; j < 3; ++j) {
    const double yj = y.data()(j);
    CHECK(x.grad()(0, j) == Approx(2 * yj));
    CHECK(x.grad()(1, j) == Approx(2 * yj));
    CHECK(y.grad()(j) == Approx(2 * x.data()(0, j) + 2 * x.data()(1, j) + 4 * yj));
  }

  CHECK_GRADCHECK(
      [](const Inputs& in) {
        TD t = in[0] * 1.5;
        t *= in[1];
        t += in[0];
        t -= 0.5;
        t /= in[1];
        t *= 2.0;
        t /= 3.0;
        t -= in[0];
        return t;
      },
      (Inputs{rand_input({2, 3}, 3), rand_input({3}, 4, 0.5, 1.5)}));
  // A tensor that needs no gradient joins the tape when the operand requires grad, as in torch.
  const auto joined = [](const Inputs& in) {
    TD t = TD::ones({2, 3});
    t += in[0];
    return t;
  };
  CHECK(joined({rand_input({2, 3}, 5)}).grad_fn_name() == "add");
  CHECK_GRADCHECK([&](const Inputs& in) { return joined(in) * joined(in); }, (Inputs{rand_input({2, 3}, 5)}));
}

TEST_CASE("values a backward still needs stay as they were", "[tensor][in_place]") {
  // out = a * w saves a for w's gradient; torch would refuse the backward after a += 1, here the
  // tensor takes new storage and the gradient is still the one of the values used.
  TD a = vec({1, 2, 3}, {3});
  const TD w = TD::from_vector({1, 1, 1}, {3}, true);
  const TD before = a.detach();
  const TD out = (a * w).sum();
  a += 10.0;
  CHECK(a.to_vector() == std::vector<double>{11, 12, 13});
  CHECK(before.to_vector() == std::vector<double>{1, 2, 3});  // the detach() taken before keeps them
  out.backward();
  CHECK(w.grad() == xt::xarray<double>({1.0, 2.0, 3.0}));
  // Once nothing holds the storage, writes go into it and every detach() sees them, as in torch.
  const TD shared = a.detach();
  a.zero_();
  CHECK(shared.to_vector() == std::vector<double>{0, 0, 0});
  TD b = shared;
  b.fill_(7);
  CHECK(a.to_vector() == std::vector<double>{7, 7, 7});
}

TEST_CASE("an op that saves its output keeps it when the result is written back", "[tensor][in_place]") {
  // Division saves its output for the divisor's gradient; the quotient written into t must not take it.
  const TD d = TD::from_vector({2, 4}, {2}, true);
  TD t = vec({8, 8}, {2});
  t /= d;
  CHECK(t.to_vector() == std::vector<double>{4, 2});
  t.sum().backward();
  // d(8 / d)/dd = -8 / d^2.
  CHECK(testing::allclose(d.grad(), xt::xarray<double>({-2.0, -0.5})));
}

TEST_CASE("fill_, zero_ and copy_ write values and pass torch's gradients", "[tensor][in_place][gradcheck]") {
  TD x = vec({1, 2, 3, 4, 5, 6}, {2, 3});
  x.fill_(2.5);
  CHECK(x.to_vector() == std::vector<double>(6, 2.5));
  x.zero_();
  CHECK(x.to_vector() == std::vector<double>(6, 0.0));
  x.copy_(vec({1, 2, 3}, {3}));  // broadcast to x's shape
  CHECK(x.to_vector() == std::vector<double>{1, 2, 3, 1, 2, 3});
  CHECK_THROWS_WITH(x.copy_(vec({1, 2}, {2})),
                    Catch::Contains("copy_") && Catch::Contains("[2]") && Catch::Contains("[2, 3]"));

  // On the tape: the former values get a zero gradient (torch's FillBackward and CopyBackwards), src
  // the gradient summed over the broadcast.
  const TD a = rand_input({2, 3}, 6);
  TD h = a * 3.0;
  h.fill_(2.0);
  CHECK(h.grad_fn_name() == "fill");
  CHECK(h.requires_grad());
  (h * a).sum().backward();
  CHECK(TD(a.grad()).to_vector() == std::vector<double>(6, 2.0));
  CHECK_GRADCHECK(
      [](const Inputs& in) {
        TD t = in[0] * in[0];
        t.fill_(2.0);
        return t * in[0];
      },
      (Inputs{rand_input({2, 3}, 7)}));
  const auto copied = [](const Inputs& in) {
    TD t = in[0] * 1.0;
    t.copy_(in[1]);
    return t;
  };
  CHECK(copied({rand_input({2, 3}, 8), rand_input({3}, 9)}).grad_fn_name() == "copy");
  CHECK_GRADCHECK([&](const Inputs& in) { return copied(in) * in[0]; },
                  (Inputs{rand_input({2, 3}, 8), rand_input({3}, 9)}));
}

TEST_CASE("masked_fill_ and index_put_ write where they are told", "[tensor][in_place][gradcheck]") {
  TD x = vec({1, 2, 3, 4, 5, 6}, {2, 3});
  x.masked_fill_(xt::xarray<bool>({true, false, true}), -1.0);
  CHECK(x.to_vector() == std::vector<double>{-1, 2, -1, -1, 5, -1});
  // Python's x[1] = [7, 8, 9], x[:, 1] = 0 and x[0, -1] = 5.
  x.index_put_({1}, vec({7, 8, 9}, {3}));
  x.index_put_({Slice(), 1}, 0.0);
  x.index_put_({0, -1}, 5.0);
  CHECK(x.to_vector() == std::vector<double>{-1, 0, 5, 7, 0, 9});
  // Row by row into a tensor that needs no gradient: each write goes into the same storage.
  TD table = TD::zeros({3, 2});
  const double* storage = table.data().data();
  for (int i = 0; i < 3; ++i) table.index_put_({i}, vec({double(i), double(10 * i)}, {2}));
  CHECK(table.data().data() == storage);
  CHECK(table.to_vector() == std::vector<double>{0, 0, 1, 10, 2, 20});
  CHECK_THROWS_WITH(table.index_put_({0}, vec({1, 2, 3}, {3})),
                    Catch::Contains("index_put_") && Catch::Contains("[3]") && Catch::Contains("[2]"));

  CHECK_GRADCHECK(
      [](const Inputs& in) {
        TD t = in[0] * 1.0;
        t.masked_fill_(xt::xarray<bool>({{true, false, false}, {false, false, true}}), 0.5);
        return t * in[0];
      },
      (Inputs{rand_input({2, 3}, 10)}));
  const auto put = [](const Inputs& in) {
    TD t = in[0] * 1.0;
    t.index_put_({Slice(), Slice(1, None)}, in[1]);
    return t;
  };
  CHECK(put({rand_input({3, 4}, 11), rand_input({3}, 12)}).grad_fn_name() == "index_put");
  CHECK_GRADCHECK([&](const Inputs& in) { return put(in) * put(in); },
                  (Inputs{rand_input({3, 4}, 11), rand_input({3}, 12)}));
}

TEST_CASE("in-place ops and assignment need a named tensor", "[tensor][in_place]") {
  // `x[0] += 1`, `x.select(0, 1).fill_(0)` and `x[0] = y` would change a temporary copy and leave x as
  // it was, so none of them compiles; on a named tensor they do.
  STATIC_REQUIRE(std::is_assignable_v<TD&, const TD&>);
  STATIC_REQUIRE_FALSE(std::is_assignable_v<TD, const TD&>);
  STATIC_REQUIRE_FALSE(std::is_assignable_v<TD, TD>);
  STATIC_REQUIRE(std::is_same_v<decltype(std::declval<TD&>() += 1.0), TD&>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<TD>);
}

namespace {
template <typename X, typename = void>
struct can_fill : std::false_type {};
template <typename X>
struct can_fill<X, std::void_t<decltype(std::declval<X>().fill_(0.0))>> : std::true_type {};
template <typename X, typename = void>
struct can_add_assign : std::false_type {};
template <typename X>
struct can_add_assign<X, std::void_t<decltype(std::declval<X>() += 1.0)>> : std::true_type {};
}  // namespace

TEST_CASE("an in-place op on a temporary does not compile", "[tensor][in_place]") {
  STATIC_REQUIRE(can_fill<TD&>::value);
  STATIC_REQUIRE_FALSE(can_fill<TD>::value);
  STATIC_REQUIRE(can_add_assign<TD&>::value);
  STATIC_REQUIRE_FALSE(can_add_assign<TD>::value);
}
