// index and index_put, Python's x[0, 1:3, ..., None] as LibTorch writes it: the elements read and
// written, the gradients (gradcheck), and errors that name the index, the dim and its size.
#include <catch2/catch.hpp>
#include <stdexcept>
#include <vector>

#include "tapegrad/autograd/ops.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::indexing;
using Catch::Contains;
using tapegrad::testing::rand_input;

namespace {
using TD = Tensor<double>;
using Inputs = std::vector<TD>;

// 0, 1, 2, ... in row-major order.
TD iota(const Shape& shape) {
  std::vector<double> v(numel(shape));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return TD::from_vector(v, shape);
}
}  // namespace

TEST_CASE("index reads what Python's x[...] reads", "[indexing]") {
  const TD x = iota({2, 3, 4});
  // x[1]: the second block; x[1, 2]: its last row; x[1, 2, -1]: a 0-d tensor.
  CHECK(index(x, {1}).to_vector() == select(x, 0, 1).to_vector());
  CHECK(index(x, {1}).shape() == Shape{3, 4});
  CHECK(index(x, {1, 2}).to_vector() == std::vector<double>{20, 21, 22, 23});
  CHECK(index(x, {1, 2, -1}).shape() == Shape{});
  CHECK(index(x, {1, 2, -1}).item() == 23);
  // x[:, 1]: dims after the last entry are taken whole.
  CHECK(index(x, {Slice(), 1}).to_vector() == std::vector<double>{4, 5, 6, 7, 16, 17, 18, 19});
  // x[..., 0] and x[0, ..., 1:3].
  CHECK(index(x, {Ellipsis, 0}).to_vector() == std::vector<double>{0, 4, 8, 12, 16, 20});
  CHECK(index(x, {"...", 0}).to_vector() == index(x, {Ellipsis, 0}).to_vector());
  CHECK(index(x, {0, Ellipsis, Slice(1, 3)}).to_vector() == std::vector<double>{1, 2, 5, 6, 9, 10});
  // x[None, 1] and x[:, None]: new dims of size 1.
  CHECK(index(x, {None, 1}).shape() == Shape{1, 3, 4});
  CHECK(index(x, {Slice(), None, Slice(), None}).shape() == Shape{2, 1, 3, 1, 4});
  CHECK(index(x, {None, 1}).to_vector() == index(x, {1}).to_vector());
  // Steps and Python's clamping of bounds: x[0, ::2, -3:], x[0, 1:100], x[0, 2:1] (empty).
  CHECK(index(x, {0, Slice(None, None, 2), Slice(-3, None)}).to_vector() == std::vector<double>{1, 2, 3, 9, 10, 11});
  CHECK(index(x, {0, Slice(1, 100)}).shape() == Shape{2, 4});
  CHECK(index(x, {0, Slice(2, 1)}).shape() == Shape{0, 4});
  CHECK(index(x, {0, Slice(-100, 1)}).to_vector() == std::vector<double>{0, 1, 2, 3});
  // An empty list, or a lone Ellipsis, copies the whole tensor; so does any index of a 0-d tensor's one element.
  CHECK(index(x, {}).to_vector() == x.to_vector());
  CHECK(index(x, {Ellipsis}).shape() == x.shape());
  CHECK(index(TD::scalar(4), {None}).to_vector() == std::vector<double>{4});
  // The method form, as LibTorch's.
  CHECK(x.index({1, Slice(0, 2)}).to_vector() == index(x, {1, Slice(0, 2)}).to_vector());
}

TEST_CASE("index returns a copy: writing it leaves x as it was", "[indexing]") {
  const TD x = iota({2, 3});
  TD row = x.index({0});
  row.fill_(-1);
  CHECK(x.to_vector() == std::vector<double>{0, 1, 2, 3, 4, 5});
  CHECK(row.to_vector() == std::vector<double>{-1, -1, -1});
}

TEST_CASE("index sends the gradient back to the positions read", "[indexing][gradcheck]") {
  TD x = iota({2, 3});
  x.requires_grad_();
  auto y = x.index({Slice(), Slice(None, None, 2)});
  CHECK(y.grad_fn_name() == "index");
  y.sum().backward();
  CHECK(x.grad() == xt::xarray<double>({{1, 0, 1}, {1, 0, 1}}));
  CHECK_GRADCHECK(
      [](const Inputs& in) {
        return index(in[0], {1, None, Slice(1, None), Ellipsis});
      },
      (Inputs{rand_input({3, 4, 2}, 1)}));
  CHECK_GRADCHECK(
      [](const Inputs& in) {
        return index(in[0], {Ellipsis, -1}) * index(in[0], {Slice(None, -1)}).sum();
      },
      (Inputs{rand_input({3, 2}, 2)}));
}

TEST_CASE("index_put replaces the part index reads", "[indexing][gradcheck]") {
  const TD x = iota({2, 3});
  // x[:, 1] = [10, 20]; x[1] = 7 (broadcast); x[0, 1:] = [[8, 9]] (a leading 1 broadcasts).
  CHECK(index_put(x, {Slice(), 1}, TD::from_vector({10, 20}, {2})).to_vector() ==
        std::vector<double>{0, 10, 2, 3, 20, 5});
  CHECK(index_put(x, {1}, 7.0).to_vector() == std::vector<double>{0, 1, 2, 7, 7, 7});
  CHECK(index_put(x, {0, Slice(1, None)}, TD::from_vector({8, 9}, {1, 2})).to_vector() ==
        std::vector<double>{0, 8, 9, 3, 4, 5});
  CHECK(x.to_vector() == std::vector<double>{0, 1, 2, 3, 4, 5});  // out of place
  // x gets the gradient where it was not replaced; values get it summed over the broadcast.
  TD a = iota({2, 3});
  a.requires_grad_();
  const TD v = TD::from_vector({1}, {1}, true);
  index_put(a, {Slice(), 2}, v).sum().backward();
  CHECK(a.grad() == xt::xarray<double>({{1, 1, 0}, {1, 1, 0}}));
  CHECK(v.grad() == xt::xarray<double>({2.0}));
  CHECK_GRADCHECK(
      [](const Inputs& in) {
        return index_put(in[0], {Slice(1, None), None, 0}, in[1]) * in[0];
      },
      (Inputs{rand_input({3, 4}, 3), rand_input({2, 1}, 4)}));
}

TEST_CASE("index and index_put errors name the index, the dim and the shape", "[indexing][errors]") {
  const TD x = iota({2, 3});
  CHECK_THROWS_AS(index(x, {0, 3}), std::invalid_argument);
  CHECK_THROWS_WITH(index(x, {0, 3}), Contains("index 3 is out of range for dim 1 of size 3") && Contains("[2, 3]"));
  CHECK_THROWS_WITH(index(x, {-3}), Contains("index -3") && Contains("dim 0 of size 2"));
  CHECK_THROWS_WITH(index(x, {0, 0, 0}), Contains("too many indices") && Contains("2 dims") && Contains("3"));
  CHECK_THROWS_WITH(index(x, {Slice(None, None, 0)}), Contains("step must be positive") && Contains("0"));
  CHECK_THROWS_WITH(index(x, {Ellipsis, 0, "..."}), Contains("one Ellipsis") && Contains("2"));
  CHECK_THROWS_WITH(index(x, {"::"}), Contains("\"...\"") && Contains("\"::\""));
  CHECK_THROWS_WITH(index_put(x, {0}, TD::zeros({2})),
                    Contains("index_put") && Contains("[2]") && Contains("indexed shape [3]"));
  CHECK_THROWS_WITH(index_put(x, {0}, TD::zeros({2, 3})), Contains("[2, 3]") && Contains("[3]"));
}
