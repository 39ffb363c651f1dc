// The ops of indexing.cpp. index and index_put, Python's x[0, 1:3, ..., None] as LibTorch writes it: the
// elements read and written, the gradients (gradcheck), and errors that name the index, the dim and its
// size; gather, index_select, topk, sort and one_hot.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/ops.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::testing;
using namespace tapegrad::indexing;
using Catch::Contains;

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

// gather, index_select, topk, sort and one_hot.

namespace {
// 0, 1, ..., 11 as [3, 4].
Tensor<double> count_3x4(bool requires_grad = false) {
  return Tensor<double>::from_vector({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4}, requires_grad);
}
}  // namespace

TEST_CASE("gather reads along dim at index's positions, with index's shape, as torch.gather", "[indexing]") {
  // torch 1.13 on x = torch.arange(12.).reshape(3, 4).
  auto x = count_3x4(true);
  auto y = gather(x, 1, ids({0, 0, 1, 3, 2, 2}, {3, 2}));
  CHECK(y.data() == values({0, 0, 5, 7, 10, 10}, {3, 2}));
  CHECK(y.grad_fn_name() == "gather");
  y.backward(xt::xarray<double>(xt::ones<double>({3, 2})));
  CHECK(x.grad() == values({2, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 0}, {3, 4}));  // repeated positions add up
  // index may be smaller than x in the other dims, and larger along dim; dim may be negative.
  CHECK(gather(x, 0, ids({0, 2}, {1, 2})).data() == values({0, 9}, {1, 2}));
  CHECK(gather(x, -1, ids({3}, {1, 1})).data() == values({3}, {1, 1}));
  CHECK(gather(x, 1, ids({0, 1, 2, 3, 0, 1}, {1, 6})).data() == values({0, 1, 2, 3, 0, 1}, {1, 6}));
  auto z = Tensor<double>::from_vector({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  CHECK(gather(z, 1, ids({1, 0, 0, 0}, {2, 1, 2})).data() == values({2, 1, 4, 5}, {2, 1, 2}));
  // A 0-d tensor counts as one dim: torch.gather(tensor(5.), 0, tensor([0, 0])) = [5, 5].
  auto five = Tensor<double>::scalar(5);
  CHECK(gather(five, 0, ids({0}, {})).shape() == Shape{});
  CHECK(gather(five, 0, ids({0, 0}, {2})).data() == values({5, 5}, {2}));
  CHECK(gather(Tensor<double>::from_vector({5, 6}, {2}), 0, ids({1}, {})).item() == 6);
  // An empty index gives an empty result, whatever its other sizes (torch checks them only when non-empty).
  CHECK(gather(x, 1, IndexArray::from_shape({3, 0})).shape() == Shape{3, 0});
  CHECK(gather(x, 0, IndexArray::from_shape({0, 5})).shape() == Shape{0, 5});
  CHECK(gather(Tensor<float>::from_vector({1, 2, 3}, {3}), 0, ids({2, 2, 0}, {3})).to_vector() ==
        std::vector<float>{3, 3, 1});
}

TEST_CASE("index_select picks whole slices in index's order, as torch.index_select", "[indexing]") {
  auto x = count_3x4(true);
  auto y = index_select(x, 0, ids({2, 0, 2}, {3}));
  CHECK(y.data() == values({8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}, {3, 4}));
  CHECK(y.grad_fn_name() == "index_select");
  y.backward(xt::xarray<double>(xt::ones<double>({3, 4})));
  CHECK(x.grad() == values({1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 2, 2}, {3, 4}));  // row 2 picked twice
  CHECK(index_select(x, -1, ids({3, 3, 0}, {3})).data() == values({3, 3, 0, 7, 7, 4, 11, 11, 8}, {3, 3}));
  auto z = Tensor<double>::from_vector({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  CHECK(index_select(z, 1, ids({1}, {1})).data() == values({2, 3, 6, 7}, {2, 1, 2}));
  // A 0-d index picks one slice and keeps the dim, as torch; an empty index leaves the dim empty.
  CHECK(index_select(x, 0, ids({1}, {})).data() == values({4, 5, 6, 7}, {1, 4}));
  CHECK(index_select(x, 1, IndexArray::from_shape({0})).shape() == Shape{3, 0});
  CHECK(index_select(Tensor<double>::zeros({0, 3}), 1, ids({2}, {1})).shape() == Shape{0, 1});
  // A 0-d x takes one position and stays 0-d.
  CHECK(index_select(Tensor<double>::scalar(5), 0, ids({0}, {1})).shape() == Shape{});
  CHECK(index_select(Tensor<double>::scalar(5), -1, ids({0}, {})).item() == 5);
}

TEST_CASE("gather and index_select pass gradcheck with repeated indices", "[indexing][gradcheck]") {
  const IndexArray g1 = ids({0, 0, 3, 1, 1, 1, 2, 0, 2}, {3, 3});
  CHECK_GRADCHECK([&](const Inputs& in) { return gather(in[0], 1, g1); }, (Inputs{rand_input({3, 4}, 61)}));
  CHECK_GRADCHECK([&](const Inputs& in) { return gather(in[0], 0, g1); }, (Inputs{rand_input({4, 3}, 62)}));
  const IndexArray g3 = ids({2, 0, 2, 1, 1, 1, 0, 2, 2, 2, 0, 1}, {2, 2, 3});
  CHECK_GRADCHECK([&](const Inputs& in) { return gather(in[0], -2, g3); }, (Inputs{rand_input({2, 3, 4}, 63)}));
  const IndexArray rows = ids({3, 0, 3, 3, 1}, {5});
  CHECK_GRADCHECK([&](const Inputs& in) { return index_select(in[0], 0, rows); }, (Inputs{rand_input({4, 3}, 64)}));
  CHECK_GRADCHECK([&](const Inputs& in) { return index_select(in[0], 1, rows); }, (Inputs{rand_input({2, 4, 3}, 65)}));
  CHECK_GRADCHECK([&](const Inputs& in) { return index_select(in[0], -1, rows); }, (Inputs{rand_input({2, 3, 4}, 66)}));
  // Used twice: gradients of both uses add up.
  CHECK_GRADCHECK(
      [&](const Inputs& in) {
        return gather(in[0], 1, g1) * index_select(in[0], 1, ids({1, 1, 2}, {3}));
      },
      (Inputs{rand_input({3, 4}, 67)}));
}

TEST_CASE("gather and index_select record nothing under NoGradGuard", "[indexing]") {
  auto x = rand_input({3, 4}, 68);
  NoGradGuard no_grad;
  for (const auto& y : {gather(x, 1, ids({0, 1}, {1, 2})), index_select(x, 0, ids({1}, {1}))}) {
    CHECK(y.is_leaf());
    CHECK_FALSE(y.requires_grad());
  }
}

TEST_CASE("indexing errors name the index, its position, the dim and its size", "[indexing][errors]") {
  auto x = count_3x4();
  // Out of range, negative ones too (as torch): the first bad one, where it is, the dim as written.
  CHECK_THROWS_AS(gather(x, 1, ids({0, 4}, {1, 2})), ShapeError);
  CHECK_THROWS_AS(gather(x, 1, ids({0, 4}, {1, 2})), std::invalid_argument);
  CHECK_THROWS_WITH(gather(x, 1, ids({0, 1, 4, 9}, {2, 2})),
                    "gather: index 4 at position [1, 0] is out of range for dim 1 of size 4 (expected 0 to 3)");
  CHECK_THROWS_WITH(gather(x, -2, ids({-1}, {1, 1})),
                    "gather: index -1 at position [0, 0] is out of range for dim -2 of size 3 (expected 0 to 2)");
  CHECK_THROWS_WITH(gather(Tensor<double>::zeros({2, 0}), 1, ids({0}, {1, 1})),
                    "gather: index 0 at position [0, 0] is out of range for dim 1 of size 0");
  CHECK_THROWS_WITH(gather(x, 1, ids({0, 1}, {2})),
                    "gather: index of shape [2] has 1 dims but the input of shape [3, 4] has 2");
  CHECK_THROWS_WITH(gather(x, 1, ids({0, 0, 0, 0}, {4, 1})),
                    "gather: index of shape [4, 1] is larger than the input of shape [3, 4] in dim 0 (4 > 3); only "
                    "dim 1 may be larger");
  CHECK_THROWS_WITH(gather(x, 2, ids({0}, {1, 1})), Catch::Contains("gather: dim 2") && Catch::Contains("rank 2"));
  CHECK_THROWS_WITH(index_select(x, 1, ids({3, -2}, {2})),
                    "index_select: index -2 at position [1] is out of range for dim 1 of size 4 (expected 0 to 3)");
  CHECK_THROWS_WITH(index_select(x, 0, ids({3}, {})),
                    "index_select: index 3 at position [] is out of range for dim 0 of size 3 (expected 0 to 2)");
  CHECK_THROWS_WITH(index_select(x, 0, ids({0, 1}, {1, 2})),
                    "index_select: index must be 1-D or 0-d, got shape [1, 2]");
  CHECK_THROWS_WITH(index_select(Tensor<double>::scalar(5), 0, ids({0, 0}, {2})),
                    "index_select: a 0-d input takes one index, got 2");
  CHECK_THROWS_WITH(index_select(x, -3, ids({0}, {1})),
                    Catch::Contains("index_select: dim -3") && Catch::Contains("rank 2"));
}

TEST_CASE("topk and sort return values and int64 indices, ties in position order", "[indexing]") {
  const double nan = std::nan("");
  auto x = Tensor<double>::from_vector({1, 3, 1, 3, 2, nan, 1}, {7}, true);
  const auto s = sort(x);
  CHECK((s.indices == IndexArray{0, 2, 6, 4, 1, 3, 5}));  // torch.sort(stable=True): NaN last
  CHECK(std::isnan(s.values.data()(6)));
  const auto d = sort(x, 0, true);
  CHECK((d.indices == IndexArray{5, 1, 3, 4, 0, 2, 6}));  // NaN first, ties still by position
  // topk orders ties like the stable sort: the 3 smallest are positions [0, 2, 6] (torch 1.13 gives
  // [6, 0, 2]: its partial sort's order, which it does not specify).
  const auto small = topk(x, 3, -1, false);
  CHECK((small.indices == IndexArray{0, 2, 6}));
  const auto big = x.topk(3);
  CHECK((big.indices == IndexArray{5, 1, 3}));
  for (std::int64_t k = 0; k <= 7; ++k) {  // topk(k) is the first k of the stable sort, both ways
    INFO("k " << k);
    CHECK((topk(x, k).indices == IndexArray(xt::view(d.indices, xt::range(0, k)))));
    CHECK((topk(x, k, 0, false).indices == IndexArray(xt::view(s.indices, xt::range(0, k)))));
  }
  // The gradient goes back to the picked positions.
  auto [values, indices] = topk(x, 2, 0, false);
  values.backward(xt::xarray<double>({10.0, 20.0}));
  CHECK(x.grad()(0) == 10.0);
  CHECK(x.grad()(2) == 20.0);
  CHECK(x.grad()(6) == 0.0);
  CHECK(values.grad_fn_name() == "topk");
  // Along a middle dim, and 0-d.
  auto m = Tensor<double>::from_vector({1, 5, 4, 2, 3, 6}, {1, 3, 2});
  CHECK((topk(m, 1, 1).indices == IndexArray{{{1, 2}}}));
  CHECK(sort(m, 1).values.data() == xt::xarray<double>({{{1, 2}, {3, 5}, {4, 6}}}));
  CHECK((sort(Tensor<double>::scalar(3)).indices == IndexArray(0)));
}

TEST_CASE("topk of few among many (its one-pass selection) equals the stable sort's first k", "[indexing]") {
  // Sizes where k * 16 <= size take the selection path; values drawn from 8 levels give many ties, and
  // NaN and infinities sit among them. Along the last and a middle dim, largest and smallest.
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  Generator gen(11);
  const std::vector<std::pair<Shape, std::int64_t>> cases = {{{3, 200}, 1}, {{2, 97, 3}, 1}, {{1, 1000}, -1}};
  for (const auto& [shape, dim] : cases) {
    xt::xarray<double> v = xt::floor(Tensor<double>::uniform(shape, 0.0, 8.0, gen).data());
    v.data()[5] = nan;
    v.data()[17] = inf;
    v.data()[40] = -inf;
    v.data()[v.size() - 1] = nan;
    const Tensor<double> x(v);
    for (const bool largest : {true, false})
      for (const std::int64_t k : {1, 2, 5, 6}) {
        INFO("shape " << format_shape(shape) << " dim " << dim << " largest " << largest << " k " << k);
        const auto sorted = sort(x, dim, largest);
        const auto top = topk(x, k, dim, largest);
        const auto d = static_cast<std::size_t>(dim < 0 ? static_cast<std::int64_t>(shape.size()) + dim : dim);
        xt::xstrided_slice_vector first(shape.size(), xt::all());
        first[d] = xt::range(0, k);
        CHECK((top.indices == IndexArray(xt::strided_view(sorted.indices, first))));
        const xt::xarray<double> expected = xt::strided_view(sorted.values.data(), first);
        CHECK(xt::all(xt::equal(top.values.data(), expected) || (xt::isnan(top.values.data()) && xt::isnan(expected))));
      }
  }
}

TEST_CASE("topk and sort pass gradcheck, and their errors name k, the dim and its size", "[indexing][gradcheck]") {
  CHECK_GRADCHECK([](const Inputs& in) { return topk(in[0], 2, 1).values; }, (Inputs{rand_input({3, 4}, 300)}));
  CHECK_GRADCHECK([](const Inputs& in) { return topk(in[0], 3, 0, false).values; },
                  (Inputs{rand_input({4, 2, 3}, 301)}));
  CHECK_GRADCHECK([](const Inputs& in) { return sort(in[0], 1, true).values; }, (Inputs{rand_input({2, 5}, 302)}));
  const auto x = Tensor<double>::zeros({2, 3});
  CHECK_THROWS_WITH(topk(x, 4), Catch::Contains("topk") && Catch::Contains("k 4") && Catch::Contains("dim -1") &&
                                    Catch::Contains("size 3") && Catch::Contains("0 to 3"));
  CHECK_THROWS_WITH(topk(x, -1, 0), Catch::Contains("topk") && Catch::Contains("k -1") && Catch::Contains("size 2"));
  CHECK_THROWS_WITH(topk(x, 1, 2), Catch::Contains("topk") && Catch::Contains("dim 2"));
  CHECK_THROWS_WITH(topk(Tensor<double>::scalar(1), 0), Catch::Contains("topk") && Catch::Contains("0-d"));
  CHECK_THROWS_WITH(sort(x, -3), Catch::Contains("sort") && Catch::Contains("dim -3"));
}

TEST_CASE("one_hot: 0/1 rows of num_classes, inferred from the max when -1", "[indexing]") {
  const auto h = one_hot(IndexArray{0, 2, 1});
  static_assert(std::is_same_v<decltype(h), const Tensor<float>>);
  CHECK(h.data() == xt::xarray<float>({{1, 0, 0}, {0, 0, 1}, {0, 1, 0}}));
  CHECK_FALSE(h.requires_grad());
  const auto h2 = one_hot<double>(IndexArray{{1}, {3}}, 5);
  CHECK(h2.shape() == Shape{2, 1, 5});
  CHECK(h2.data()(1, 0, 3) == 1.0);
  CHECK(h2.data()(1, 0, 2) == 0.0);
  CHECK(one_hot(IndexArray(xt::zeros<std::int64_t>({0})), 3).shape() == Shape{0, 3});
  CHECK(one_hot(IndexArray(2), 4).data() == xt::xarray<float>({0, 0, 1, 0}));
  CHECK_THROWS_WITH(one_hot(IndexArray{0, -1}),
                    Catch::Contains("one_hot") && Catch::Contains("index -1 at position [1]"));
  CHECK_THROWS_WITH(one_hot(IndexArray{0, 3}, 2), Catch::Contains("one_hot") && Catch::Contains("index 3") &&
                                                      Catch::Contains("2 classes") && Catch::Contains("0 to 1"));
  CHECK_THROWS_WITH(one_hot(IndexArray(xt::zeros<std::int64_t>({0}))),
                    Catch::Contains("one_hot") && Catch::Contains("empty"));
  CHECK_THROWS_WITH(one_hot(IndexArray{0}, -2), Catch::Contains("one_hot") && Catch::Contains("-2"));
}
