// Shape ops (clone, transpose ... expand, pad, repeat) and reductions (sum, mean, var, std, norm, cumsum,
// logsumexp, max, min, argmax, argmin): values, gradients, ties and error messages.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/autograd/strided_copy.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using Catch::Contains;
using namespace tapegrad::testing;

namespace {

// 0, 1, 2, ... in row-major order.
template <typename T = double>
Tensor<T> iota(const Shape& shape, bool requires_grad = false) {
  std::vector<T> v(numel(shape));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(i);
  return Tensor<T>::from_vector(v, shape, requires_grad);
}

}  // namespace

// The op's error is a std::invalid_argument whose text matches.
#define CHECK_OP_ERROR(expr, matcher)               \
  do {                                              \
    CHECK_THROWS_AS((expr), std::invalid_argument); \
    CHECK_THROWS_WITH((expr), matcher);             \
  } while (0)

// ---------------------------------------------------------------------------------------------------
// Shape ops

TEST_CASE("transpose and permute move elements", "[shape]") {
  auto x = iota({2, 3});
  auto t = transpose(x, 0, 1);
  CHECK(t.shape() == Shape{3, 2});
  CHECK(t.data() == values({0, 3, 1, 4, 2, 5}, {3, 2}));
  CHECK(transpose(x, -1, -2).data() == t.data());
  CHECK(transpose(x, 1, 1).data() == x.data());
  CHECK(transpose(Tensor<double>::scalar(7), 0, -1).item() == 7);
  CHECK_FALSE(t.requires_grad());  // nothing recorded for a constant input
  CHECK(t.is_leaf());

  auto y = iota({2, 3, 4});
  auto p = permute(y, {2, 0, -2});
  CHECK(p.shape() == Shape{4, 2, 3});
  for (std::size_t a = 0; a < 4; ++a)
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t c = 0; c < 3; ++c) CHECK(p.data()(a, b, c) == y.data()(b, c, a));
}

TEST_CASE("a large transpose (tiled copy) matches index math, in float too", "[shape]") {
  auto x = iota<float>({3, 70, 45});
  auto t = transpose(x, 1, 2);
  REQUIRE(t.shape() == Shape{3, 45, 70});
  bool same = true;
  for (std::size_t b = 0; b < 3; ++b)
    for (std::size_t i = 0; i < 45; ++i)
      for (std::size_t j = 0; j < 70; ++j) same = same && t.data()(b, i, j) == x.data()(b, j, i);
  CHECK(same);
  auto back = permute(t, {0, 2, 1});
  CHECK(back.data() == x.data());
}

TEST_CASE("strided_copy broadcasts with stride 0 and merges contiguous dims", "[shape]") {
  const std::vector<double> src{1, 2, 3};
  std::vector<double> dst(6, 0);
  strided_copy<double>({2, 3}, src.data(), {0, 1}, dst.data(), {3, 1});
  CHECK(dst == std::vector<double>{1, 2, 3, 1, 2, 3});
  strided_copy<double>({3, 2}, src.data(), {1, 0}, dst.data(), {2, 1});
  CHECK(dst == std::vector<double>{1, 1, 2, 2, 3, 3});
}

TEST_CASE("transpose and permute gradients", "[shape][gradcheck]") {
  CHECK_GRADCHECK([](const Inputs& in) { return transpose(in[0], 0, 1); }, (Inputs{rand_input({3, 4}, 1)}));
  CHECK_GRADCHECK([](const Inputs& in) { return transpose(in[0], -1, 0); }, (Inputs{rand_input({2, 3, 4}, 2)}));
  CHECK_GRADCHECK([](const Inputs& in) { return permute(in[0], {1, 2, 0}); }, (Inputs{rand_input({2, 3, 4}, 3)}));
  CHECK_GRADCHECK(
      [](const Inputs& in) {
        return permute(in[0], {-1, 0, 2, 1});
      },
      (Inputs{rand_input({2, 1, 3, 2}, 4)}));
}

TEST_CASE("reshape, flatten, squeeze, unsqueeze", "[shape]") {
  auto x = iota({2, 3, 4});
  auto r = reshape(x, {4, -1});
  CHECK(r.shape() == Shape{4, 6});
  CHECK(r.to_vector() == x.to_vector());
  CHECK(reshape(x, {-1}).shape() == Shape{24});
  CHECK(reshape(Tensor<double>::zeros({0, 3}), {-1, 3, 1}).shape() == Shape{0, 3, 1});
  CHECK(reshape(Tensor<double>::scalar(2), {1, 1}).shape() == Shape{1, 1});

  CHECK(flatten(x).shape() == Shape{24});
  CHECK(flatten(x, 1).shape() == Shape{2, 12});
  CHECK(flatten(x, 0, -2).shape() == Shape{6, 4});
  CHECK(flatten(x, 1, 1).shape() == Shape{2, 3, 4});
  CHECK(flatten(Tensor<double>::scalar(5)).shape() == Shape{1});

  auto s = iota({1, 3, 1, 2});
  CHECK(squeeze(s).shape() == Shape{3, 2});
  CHECK(squeeze(s, 0).shape() == Shape{3, 1, 2});
  CHECK(squeeze(s, -2).shape() == Shape{1, 3, 2});
  CHECK(squeeze(s, 1).shape() == Shape{1, 3, 1, 2});  // not of size 1: a no-op, as in torch
  CHECK(squeeze(Tensor<double>::scalar(1), 0).shape() == Shape{});
  CHECK(squeeze(s).to_vector() == s.to_vector());

  auto v = iota({2, 3});
  CHECK(unsqueeze(v, 0).shape() == Shape{1, 2, 3});
  CHECK(unsqueeze(v, 2).shape() == Shape{2, 3, 1});
  CHECK(unsqueeze(v, -1).shape() == Shape{2, 3, 1});
  CHECK(unsqueeze(v, -3).shape() == Shape{1, 2, 3});
  CHECK(unsqueeze(Tensor<double>::scalar(1), 0).shape() == Shape{1});
}

TEST_CASE("reshape-family gradients, one node per op", "[shape][gradcheck]") {
  CHECK_GRADCHECK(
      [](const Inputs& in) {
        return reshape(in[0], {3, -1}) * in[1];
      },
      (Inputs{rand_input({2, 6}, 5), rand_input({4}, 6)}));
  CHECK_GRADCHECK([](const Inputs& in) { return flatten(in[0], 1, -1); }, (Inputs{rand_input({2, 3, 2}, 7)}));
  CHECK_GRADCHECK([](const Inputs& in) { return squeeze(in[0]); }, (Inputs{rand_input({1, 3, 1}, 8)}));
  CHECK_GRADCHECK([](const Inputs& in) { return squeeze(in[0], -1); }, (Inputs{rand_input({2, 1}, 9)}));
  CHECK_GRADCHECK([](const Inputs& in) { return unsqueeze(in[0], -2); }, (Inputs{rand_input({2, 3}, 10)}));
  auto x = rand_input({2, 3}, 11);
  CHECK(reshape(x, {6}).grad_fn_name() == "reshape");
  CHECK(flatten(x).grad_fn_name() == "flatten");
  CHECK(squeeze(x).grad_fn_name() == "squeeze");
  CHECK(unsqueeze(x, 0).grad_fn_name() == "unsqueeze");
  CHECK(transpose(x, 0, 1).grad_fn_name() == "transpose");
  CHECK(permute(x, {1, 0}).grad_fn_name() == "permute");
}

TEST_CASE("narrow, slice and select pick elements", "[shape]") {
  auto x = iota({3, 4});
  CHECK(narrow(x, 1, 1, 2).data() == values({1, 2, 5, 6, 9, 10}, {3, 2}));
  CHECK(narrow(x, 0, -1, 1).data() == values({8, 9, 10, 11}, {1, 4}));
  CHECK(narrow(x, -1, 4, 0).shape() == Shape{3, 0});

  CHECK(slice(x, 1, 0, 4, 2).data() == values({0, 2, 4, 6, 8, 10}, {3, 2}));
  CHECK(slice(x, 1, -3, 100, 2).data() == values({1, 3, 5, 7, 9, 11}, {3, 2}));  // Python clamping
  CHECK(slice(x, 0, -100, -1).data() == values({0, 1, 2, 3, 4, 5, 6, 7}, {2, 4}));
  CHECK(slice(x, 0, 2, 1).shape() == Shape{0, 4});  // start past end: empty
  CHECK(slice(x, 1, 1, 4, 5).data() == values({1, 5, 9}, {3, 1}));

  CHECK(select(x, 0, 1).data() == values({4, 5, 6, 7}, {4}));
  CHECK(select(x, 1, -1).data() == values({3, 7, 11}, {3}));
  CHECK(select(iota({3}), 0, 2).shape() == Shape{});
  CHECK(select(iota({3}), 0, 2).item() == 2);
}

TEST_CASE("narrow, slice and select gradients", "[shape][gradcheck]") {
  CHECK_GRADCHECK([](const Inputs& in) { return narrow(in[0], 1, 1, 2); }, (Inputs{rand_input({2, 4, 3}, 12)}));
  CHECK_GRADCHECK([](const Inputs& in) { return narrow(in[0], -1, -2, 2); }, (Inputs{rand_input({3, 4}, 13)}));
  CHECK_GRADCHECK([](const Inputs& in) { return slice(in[0], 0, 1, 5, 2); }, (Inputs{rand_input({5, 3}, 14)}));
  CHECK_GRADCHECK([](const Inputs& in) { return slice(in[0], -2, -4, 100, 3); }, (Inputs{rand_input({2, 7, 2}, 15)}));
  CHECK_GRADCHECK([](const Inputs& in) { return select(in[0], 1, -1); }, (Inputs{rand_input({2, 3, 2}, 16)}));
  CHECK_GRADCHECK([](const Inputs& in) { return select(in[0], 0, 2); }, (Inputs{rand_input({3}, 17)}));
  // Two selects of one input: their gradients add up.
  CHECK_GRADCHECK([](const Inputs& in) { return select(in[0], 0, 0) * select(in[0], 0, 1); },
                  (Inputs{rand_input({2, 3}, 18)}));
}

TEST_CASE("cat and stack join tensors", "[shape]") {
  auto a = iota({2, 2});
  auto b = Tensor<double>::from_vector({10, 11}, {2, 1});
  CHECK(cat(std::vector<Tensor<double>>{a, b}, 1).data() == values({0, 1, 10, 2, 3, 11}, {2, 3}));
  CHECK(cat(std::vector<Tensor<double>>{a, reshape(b, {1, 2})}, 0).data() == values({0, 1, 2, 3, 10, 11}, {3, 2}));
  CHECK(cat(std::vector<Tensor<double>>{a, Tensor<double>::zeros({2, 0})}, -1).data() == a.data());

  auto c = Tensor<double>::from_vector({4, 5, 6, 7}, {2, 2});
  auto s0 = stack(std::vector<Tensor<double>>{a, c});
  CHECK(s0.shape() == Shape{2, 2, 2});
  CHECK(s0.to_vector() == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(stack(std::vector<Tensor<double>>{a, c}, 1).data() == values({0, 1, 4, 5, 2, 3, 6, 7}, {2, 2, 2}));
  CHECK(stack(std::vector<Tensor<double>>{a, c}, -1).data() == values({0, 4, 1, 5, 2, 6, 3, 7}, {2, 2, 2}));
  // A braced list, as torch.cat([a, b], 1) is written, needs no element type.
  CHECK(cat({a, b}, 1).data() == values({0, 1, 10, 2, 3, 11}, {2, 3}));
  CHECK(cat({a, c}).shape() == Shape{4, 2});
  CHECK(stack({a, c}, 1).data() == stack(std::vector<Tensor<double>>{a, c}, 1).data());
  CHECK(stack({a}).shape() == Shape{1, 2, 2});
}

TEST_CASE("clone copies and stays on the tape", "[shape][gradcheck]") {
  auto x = rand_input({2, 3}, 18);
  auto y = clone(x);
  CHECK(y.to_vector() == x.to_vector());
  CHECK(y.grad_fn_name() == "clone");
  CHECK(x.clone().grad_fn_name() == "clone");
  CHECK_FALSE(y.data().data() == x.data().data());
  CHECK_GRADCHECK([](const Inputs& in) { return clone(in[0]) * in[0]; }, (Inputs{rand_input({3, 2}, 17)}));
  NoGradGuard no_grad;
  CHECK(clone(x).is_leaf());
}

TEST_CASE("cat and stack gradients", "[shape][gradcheck]") {
  CHECK_GRADCHECK([](const Inputs& in) { return cat(in, 1); },
                  (Inputs{rand_input({2, 1, 3}, 19), rand_input({2, 3, 3}, 20), rand_input({2, 2, 3}, 21)}));
  CHECK_GRADCHECK([](const Inputs& in) { return cat(in, 0); },
                  (Inputs{rand_input({1, 2}, 22), rand_input({3, 2}, 23)}));
  CHECK_GRADCHECK([](const Inputs& in) { return cat(in, -1); },
                  (Inputs{rand_input({2, 2}, 24), rand_input({2, 1}, 25)}));
  CHECK_GRADCHECK([](const Inputs& in) { return stack(in, 0); },
                  (Inputs{rand_input({2, 3}, 26), rand_input({2, 3}, 27)}));
  CHECK_GRADCHECK([](const Inputs& in) { return stack(in, 1); },
                  (Inputs{rand_input({2, 3}, 28), rand_input({2, 3}, 29)}));
  CHECK_GRADCHECK([](const Inputs& in) { return stack(in, -1); },
                  (Inputs{rand_input({3}, 30), rand_input({3}, 31), rand_input({3}, 32)}));
  // An input without requires_grad gets no gradient; the one node lists both.
  auto x = rand_input({2}, 33);
  auto y = cat(std::vector<Tensor<double>>{x, Tensor<double>::ones({3})});
  CHECK(y.grad_fn_name() == "cat");
  sum(y * y).backward();
  CHECK(allclose(x.grad(), xt::xarray<double>(2.0 * x.data())));
}

TEST_CASE("split and chunk follow torch's piece sizes", "[shape]") {
  const auto sizes = [](const std::vector<Tensor<double>>& pieces, std::int64_t dim) {
    std::vector<std::size_t> s;
    for (const auto& p : pieces) s.push_back(p.size(dim));
    return s;
  };
  auto x = iota({10, 2});
  CHECK(sizes(split(x, 4), 0) == std::vector<std::size_t>{4, 4, 2});
  CHECK(sizes(split(x, 10), 0) == std::vector<std::size_t>{10});
  CHECK(sizes(split(x, 20), 0) == std::vector<std::size_t>{10});
  CHECK(sizes(split(x, 1, -1), -1) == std::vector<std::size_t>{1, 1});
  CHECK(sizes(split(x, std::vector<std::int64_t>{3, 0, 7}), 0) == std::vector<std::size_t>{3, 0, 7});
  CHECK(split(x, 4)[2].data() == values({16, 17, 18, 19}, {2, 2}));
  CHECK(sizes(split(Tensor<double>::zeros({0}), 0), 0) == std::vector<std::size_t>{0});

  CHECK(sizes(chunk(x, 4), 0) == std::vector<std::size_t>{3, 3, 3, 1});
  CHECK(sizes(chunk(iota({5}), 4), 0) == std::vector<std::size_t>{2, 2, 1});  // fewer than asked
  CHECK(sizes(chunk(iota({6}), 3), 0) == std::vector<std::size_t>{2, 2, 2});
  CHECK(sizes(chunk(Tensor<double>::zeros({0}), 3), 0) == std::vector<std::size_t>{0, 0, 0});
  CHECK(chunk(x, 2, 1)[1].data() == values({1, 3, 5, 7, 9, 11, 13, 15, 17, 19}, {10, 1}));
}

TEST_CASE("split and chunk gradients: each piece is a narrow node", "[shape][gradcheck]") {
  const auto weighted = [](const std::vector<Tensor<double>>& pieces) {
    Tensor<double> total = sum(pieces[0]);
    for (std::size_t i = 1; i < pieces.size(); ++i) total = total + sum(pieces[i]) * static_cast<double>(i + 1);
    return total;
  };
  CHECK_GRADCHECK([&](const Inputs& in) { return weighted(split(in[0], 2, 1)); }, (Inputs{rand_input({2, 5}, 34)}));
  CHECK_GRADCHECK(
      [&](const Inputs& in) {
        return weighted(split(in[0], std::vector<std::int64_t>{1, 3}, -1));
      },
      (Inputs{rand_input({3, 4}, 35)}));
  CHECK_GRADCHECK([&](const Inputs& in) { return weighted(chunk(in[0], 3, 0)); }, (Inputs{rand_input({7, 2}, 36)}));
  auto pieces = chunk(rand_input({4}, 37), 2);
  CHECK(pieces[0].grad_fn_name() == "narrow");
  CHECK(pieces[1].grad_fn_name() == "narrow");
}

TEST_CASE("expand broadcasts like torch.broadcast_to", "[shape]") {
  auto x = Tensor<double>::from_vector({1, 2, 3}, {3, 1});
  CHECK(expand(x, {3, 2}).data() == values({1, 1, 2, 2, 3, 3}, {3, 2}));
  CHECK(expand(x, {2, 3, 2}).shape() == Shape{2, 3, 2});
  CHECK(expand(Tensor<double>::scalar(4), {2, 2}).data() == values({4, 4, 4, 4}, {2, 2}));
  CHECK(expand(x, {3, 0}).shape() == Shape{3, 0});
  CHECK(expand(iota({2}), {3, 2}).data() == values({0, 1, 0, 1, 0, 1}, {3, 2}));
}

TEST_CASE("expand gradient sums over the broadcast dims", "[shape][gradcheck]") {
  CHECK_GRADCHECK([](const Inputs& in) { return expand(in[0], {2, 3, 4}); }, (Inputs{rand_input({3, 1}, 38)}));
  CHECK_GRADCHECK([](const Inputs& in) { return expand(in[0], {4, 3}); }, (Inputs{rand_input({3}, 39)}));
  CHECK_GRADCHECK([](const Inputs& in) { return expand(in[0], {2, 2}); }, (Inputs{rand_input({}, 40)}));
  CHECK_GRADCHECK([](const Inputs& in) { return expand(in[0], {2, 3}); }, (Inputs{rand_input({2, 3}, 41)}));
  auto x = Tensor<double>::from_vector({1, 2}, {1, 2}, true);
  auto y = expand(x, {3, 2});
  CHECK(y.grad_fn_name() == "expand");
  y.backward(xt::xarray<double>(xt::ones<double>({3, 2})));
  CHECK(x.grad() == values({3, 3}, {1, 2}));
}

TEST_CASE("shape op errors name the op and the values", "[shape][errors]") {
  auto x = iota({2, 3});
  CHECK_OP_ERROR(transpose(x, 0, 2), Contains("transpose") && Contains("dim 2") && Contains("rank 2"));
  CHECK_OP_ERROR(permute(x, {0}), Contains("permute") && Contains("[0]") && Contains("[2, 3]"));
  CHECK_OP_ERROR(permute(x, {0, -2}),
                 Contains("permute") && Contains("dim 0 appears more than once") && Contains("[0, -2]"));
  CHECK_OP_ERROR(reshape(x, {4, 2}),
                 Contains("reshape") && Contains("[4, 2]") && Contains("[2, 3]") && Contains("6 elements"));
  CHECK_OP_ERROR(reshape(x, {-1, 4}), Contains("reshape") && Contains("[-1, 4]") && Contains("[2, 3]"));
  CHECK_OP_ERROR(reshape(x, {-1, -1}),
                 Contains("reshape") && Contains("only one dim can be -1") && Contains("[-1, -1]"));
  CHECK_OP_ERROR(reshape(x, {-2, 3}), Contains("reshape") && Contains("invalid size -2") && Contains("[-2, 3]"));
  CHECK_OP_ERROR(reshape(Tensor<double>::zeros({0}), {-1, 0}),
                 Contains("reshape") && Contains("cannot infer") && Contains("[-1, 0]") && Contains("[0]"));
  CHECK_OP_ERROR(reshape(x, {5}), Contains("reshape") && Contains("[5]"));
  CHECK_OP_ERROR(flatten(x, 1, 0),
                 Contains("flatten") && Contains("start_dim 1") && Contains("end_dim 0") && Contains("[2, 3]"));
  CHECK_OP_ERROR(flatten(x, 2), Contains("flatten") && Contains("dim 2"));
  CHECK_OP_ERROR(squeeze(x, 2), Contains("squeeze") && Contains("dim 2"));
  CHECK_OP_ERROR(unsqueeze(x, 3), Contains("unsqueeze") && Contains("dim 3") && Contains("-3 to 2"));
  CHECK_OP_ERROR(unsqueeze(x, -4), Contains("unsqueeze") && Contains("dim -4"));
  CHECK_OP_ERROR(narrow(x, 1, 2, 2), Contains("narrow") && Contains("start 2 + length 2") && Contains("size 3"));
  CHECK_OP_ERROR(narrow(x, 1, 0, -1), Contains("narrow") && Contains("length -1"));
  CHECK_OP_ERROR(narrow(x, 0, -3, 1), Contains("narrow") && Contains("start -3") && Contains("size 2"));
  CHECK_OP_ERROR(narrow(x, 5, 0, 1), Contains("narrow") && Contains("dim 5"));
  CHECK_OP_ERROR(slice(x, 1, 0, 2, 0), Contains("slice") && Contains("step must be positive, got 0"));
  CHECK_OP_ERROR(slice(x, 1, 0, 2, -1), Contains("slice") && Contains("got -1"));
  CHECK_OP_ERROR(select(x, 1, 3), Contains("select") && Contains("index 3") && Contains("size 3"));
  CHECK_OP_ERROR(select(x, 0, -3), Contains("select") && Contains("index -3") && Contains("size 2"));
  CHECK_OP_ERROR(select(Tensor<double>::scalar(1), 0, 0), Contains("select") && Contains("rank 0"));
  CHECK_OP_ERROR(cat(std::vector<Tensor<double>>{}), Contains("cat") && Contains("non-empty"));
  CHECK_OP_ERROR(cat(std::vector<Tensor<double>>{x, iota({2, 4})}, 0), Contains("cat") && Contains("tensor 1") &&
                                                                           Contains("[2, 4]") && Contains("[2, 3]") &&
                                                                           Contains("dim 0"));
  CHECK_OP_ERROR(cat(std::vector<Tensor<double>>{x, x, iota({3})}, 1),
                 Contains("cat") && Contains("tensor 2") && Contains("[3]") && Contains("rank 2"));
  CHECK_OP_ERROR(cat(std::vector<Tensor<double>>{x}, 2), Contains("cat") && Contains("dim 2"));
  CHECK_OP_ERROR(stack(std::vector<Tensor<double>>{}), Contains("stack") && Contains("non-empty"));
  CHECK_OP_ERROR(stack(std::vector<Tensor<double>>{x, iota({3, 2})}),
                 Contains("stack") && Contains("tensor 1") && Contains("[3, 2]") && Contains("[2, 3]"));
  CHECK_OP_ERROR(stack(std::vector<Tensor<double>>{x}, 3), Contains("stack") && Contains("dim 3"));
  CHECK_OP_ERROR(split(x, -1), Contains("split") && Contains("got -1"));
  CHECK_OP_ERROR(split(x, 0, 1), Contains("split") && Contains("split_size 0") && Contains("size 3"));
  CHECK_OP_ERROR(split(x, std::vector<std::int64_t>{1, 1}, 1),
                 Contains("split") && Contains("[1, 1]") && Contains("sum to 2") && Contains("size 3"));
  CHECK_OP_ERROR(split(x, std::vector<std::int64_t>{4, -1}, 1),
                 Contains("split") && Contains("[4, -1]") && Contains("negative size -1"));
  CHECK_OP_ERROR(chunk(x, 0), Contains("chunk") && Contains("got 0"));
  CHECK_OP_ERROR(chunk(x, 2, 2), Contains("chunk") && Contains("dim 2"));
  CHECK_OP_ERROR(expand(x, {3, 3}),
                 Contains("expand") && Contains("[2, 3]") && Contains("[3, 3]") && Contains("dim 0: size 2"));
  CHECK_OP_ERROR(expand(x, {6}), Contains("expand") && Contains("[2, 3]") && Contains("[6]") && Contains("fewer dims"));
}

// ---------------------------------------------------------------------------------------------------
// Reductions

TEST_CASE("sum and mean over everything give a 0-d tensor", "[reduce]") {
  auto x = iota({2, 3});
  CHECK(sum(x).shape() == Shape{});
  CHECK(sum(x).item() == 15);
  CHECK(mean(x).item() == 2.5);
  CHECK(sum(Tensor<double>::zeros({0})).item() == 0);
  CHECK(std::isnan(mean(Tensor<double>::zeros({0})).item()));
  CHECK(sum(Tensor<double>::scalar(3)).item() == 3);
  CHECK(mean(iota<float>({4})).item() == 1.5f);
}

TEST_CASE("sum and mean over dims, with keepdim", "[reduce]") {
  auto x = iota({2, 3, 4});
  CHECK(sum(x, {2}).data() == values({6, 22, 38, 54, 70, 86}, {2, 3}));
  CHECK(sum(x, {-1}, true).shape() == Shape{2, 3, 1});
  CHECK(sum(x, {0}).data() == values({12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34}, {3, 4}));
  CHECK(sum(x, {0, 1}).data() == values({60, 66, 72, 78}, {4}));
  CHECK(sum(x, {1}).data() == values({12, 15, 18, 21, 48, 51, 54, 57}, {2, 4}));
  // Non-adjacent dims take the permuting path.
  CHECK(sum(x, {0, 2}).data() == values({60, 92, 124}, {3}));
  CHECK(sum(x, {2, 0}, true).data() == values({60, 92, 124}, {1, 3, 1}));
  CHECK(mean(x, {0, -1}).data() == values({7.5, 11.5, 15.5}, {3}));
  CHECK(mean(x, {1}, true).data() == values({4, 5, 6, 7, 16, 17, 18, 19}, {2, 1, 4}));
  // Size-1 dims between reduced dims do not break the block.
  auto y = iota({2, 1, 3});
  CHECK(sum(y, {0, 2}).data() == values({15}, {1}));
  CHECK(sum(x, {}).shape() == Shape{});  // an empty list reduces every dim, as in torch
  CHECK(sum(x, {}).item() == 276);
  CHECK(sum(x, {}, true).shape() == Shape{1, 1, 1});
  // Empty reductions: sum 0, mean NaN; a 0-d tensor takes dim 0 / -1.
  auto e = Tensor<double>::zeros({2, 0, 3});
  CHECK(sum(e, {1}).data() == xt::xarray<double>(xt::zeros<double>({2, 3})));
  auto m = mean(e, {1}, true);
  CHECK(m.shape() == Shape{2, 1, 3});
  for (double v : m.to_vector()) CHECK(std::isnan(v));
  CHECK(sum(e, {0}).shape() == Shape{0, 3});
  CHECK(sum(Tensor<double>::scalar(5), {0}, true).shape() == Shape{});
  CHECK(mean(Tensor<double>::scalar(5), {-1}).item() == 5);
  CHECK(sum(iota<float>({2, 2}), {0}).data() == xt::xarray<float>({2.f, 4.f}));
}

TEST_CASE("sum and mean gradients", "[reduce][gradcheck]") {
  CHECK_GRADCHECK([](const Inputs& in) { return sum(in[0]); }, (Inputs{rand_input({2, 3}, 50)}));
  CHECK_GRADCHECK([](const Inputs& in) { return mean(in[0]); }, (Inputs{rand_input({3, 2, 2}, 51)}));
  for (bool keepdim : {false, true}) {
    CHECK_GRADCHECK([&](const Inputs& in) { return sum(in[0], {-1}, keepdim); }, (Inputs{rand_input({2, 3, 4}, 52)}));
    CHECK_GRADCHECK([&](const Inputs& in) { return sum(in[0], {0}, keepdim); }, (Inputs{rand_input({3, 4}, 53)}));
    CHECK_GRADCHECK([&](const Inputs& in) { return sum(in[0], {0, 2}, keepdim); }, (Inputs{rand_input({2, 3, 2}, 54)}));
    CHECK_GRADCHECK([&](const Inputs& in) { return mean(in[0], {1}, keepdim); }, (Inputs{rand_input({2, 3, 4}, 55)}));
    CHECK_GRADCHECK(
        [&](const Inputs& in) {
          return mean(in[0], {-3, -1}, keepdim);
        },
        (Inputs{rand_input({2, 3, 4}, 56)}));
    CHECK_GRADCHECK(
        [&](const Inputs& in) {
          return mean(in[0], {1, 2}, keepdim);
        },
        (Inputs{rand_input({2, 3, 2, 2}, 57)}));
  }
  CHECK(sum(rand_input({2}, 58)).grad_fn_name() == "sum");
  CHECK(mean(rand_input({2}, 58), {0}).grad_fn_name() == "mean");
}

TEST_CASE("var with correction and keepdim", "[reduce]") {
  auto x = Tensor<double>::from_vector({1, 2, 4, 3, 3, 9}, {2, 3});
  // Row 0: mean 7/3, squared deviations sum 14/3; row 1: mean 5, sum 24.
  CHECK(allclose(var(x, {1}).data(), values({7.0 / 3, 12.0}, {2})));
  CHECK(allclose(var(x, {1}, 0).data(), values({14.0 / 9, 8.0}, {2})));
  CHECK(allclose(var(x, {-1}, 2, true).data(), values({14.0 / 3, 24.0}, {2, 1})));
  // Column j: values (a, b) give var (a - b)^2 / 2.
  CHECK(allclose(var(x, {0}).data(), values({2.0, 0.5, 12.5}, {3})));
  // All dims: mean 11/3; sum of squared deviations 118/3, over 5.
  CHECK(allclose(var(x, {0, 1}).data(), values({118.0 / 15}, {})));
  CHECK(allclose(var(x, {}).data(), values({118.0 / 15}, {})));
  // torch divides by max(0, N - correction): a zero divisor gives inf, a single element NaN.
  CHECK(std::isinf(var(x, {1}, 3).data()(0)));
  CHECK(std::isinf(var(x, {1}, 4).data()(0)));
  CHECK(std::isnan(var(Tensor<double>::scalar(2), {0}).item()));
  CHECK(allclose(var(x, {1}, -1).data(), values({14.0 / 12, 6.0}, {2})));
}

TEST_CASE("var gradients", "[reduce][gradcheck]") {
  for (bool keepdim : {false, true}) {
    CHECK_GRADCHECK([&](const Inputs& in) { return var(in[0], {-1}, 1, keepdim); }, (Inputs{rand_input({3, 4}, 60)}));
    CHECK_GRADCHECK([&](const Inputs& in) { return var(in[0], {0}, 0, keepdim); }, (Inputs{rand_input({4, 3}, 61)}));
    CHECK_GRADCHECK(
        [&](const Inputs& in) {
          return var(in[0], {0, 2}, 1, keepdim);
        },
        (Inputs{rand_input({3, 2, 3}, 62)}));
    CHECK_GRADCHECK([&](const Inputs& in) { return var(in[0], {1}, 2, keepdim); }, (Inputs{rand_input({2, 4, 3}, 63)}));
  }
}

namespace {

// What max and min over a dim share, with the values the op picks. On x [2, 3]: op over dim 1 (torch's
// named tuple of values and indices) and over dim 0 with keepdim (both keep the dim), and arg_op over
// dims 1 and -2; on iota({2, 3, 4}): op over dim 1 and arg_op over dim 2 (one index everywhere); on a 0-d
// tensor: its value at index 0.
struct OverDim {
  std::vector<double> x, over1, over0_keepdim;
  std::vector<std::int64_t> at1, at0_keepdim;
  std::vector<double> iota_over1;
  std::int64_t iota_at2;
};

template <typename Op, typename ArgOp>
void check_over_dim(Op op, ArgOp arg_op, const OverDim& c) {
  const auto x = Tensor<double>::from_vector(c.x, {2, 3});
  const auto [best, where] = op(x, 1, false);
  CHECK(best.data() == values(c.over1, {2}));
  CHECK((where == ids(c.at1, {2})));
  const auto kept = op(x, 0, true);
  CHECK(kept.values.data() == values(c.over0_keepdim, {1, 3}));
  CHECK((kept.indices == ids(c.at0_keepdim, {1, 3})));
  CHECK((arg_op(x, 1, false) == ids(c.at1, {2})));
  CHECK((arg_op(x, -2, true) == ids(c.at0_keepdim, {1, 3})));
  const auto y = iota({2, 3, 4});
  CHECK(op(y, 1, false).values.data() == values(c.iota_over1, {2, 4}));
  CHECK((arg_op(y, 2, false) == ids(std::vector<std::int64_t>(6, c.iota_at2), {2, 3})));
  for (std::int64_t dim : {0, -1}) {
    CHECK(op(Tensor<double>::scalar(5), dim, false).values.item() == 5);
    CHECK(arg_op(Tensor<double>::scalar(5), dim, false)() == 0);
  }
}

}  // namespace

TEST_CASE("max over a dim and argmax pick the first maximum", "[reduce]") {
  check_over_dim([](const Tensor<double>& t, std::int64_t dim, bool keepdim) { return max(t, dim, keepdim); },
                 [](const Tensor<double>& t, std::int64_t dim, bool keepdim) { return argmax(t, dim, keepdim); },
                 {{1, 3, 3, 2, 2, 0}, {3, 2}, {2, 3, 3}, {1, 0}, {1, 0, 0}, {8, 9, 10, 11, 20, 21, 22, 23}, 3});
  auto x = Tensor<double>::from_vector({1, 3, 3, 2, 2, 0}, {2, 3});
  // NaN propagates, as in torch.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto n = Tensor<double>::from_vector({1, nan, 3}, {3});
  CHECK(std::isnan(max(n, 0).values.item()));
  CHECK(argmax(n, 0)() == 1);
  CHECK(std::isnan(max(n).item()));
  CHECK(max(x).item() == 3);
  // torch.argmax(x) without a dim: the flat position of the first maximum, 0-d.
  CHECK(argmax(x).dimension() == 0);
  CHECK(argmax(x)() == 1);
  CHECK(argmax(n)() == 1);
  CHECK(argmin(x)() == 5);
  CHECK(argmax(Tensor<double>::scalar(5))() == 0);
}

TEST_CASE("max over a dim sends the gradient to the first arg-max", "[reduce]") {
  // torch: x.max(1).values.sum().backward() gives [[0, 1, 0], [1, 0, 0]].
  auto x = Tensor<double>::from_vector({1, 3, 3, 2, 2, 0}, {2, 3}, true);
  sum(max(x, 1).values).backward();
  CHECK(x.grad() == values({0, 1, 0, 1, 0, 0}, {2, 3}));
  auto z = Tensor<double>::from_vector({5, 5, 1, 5}, {2, 2}, true);
  max(z, 0).values.backward(xt::xarray<double>({2.0, 3.0}));
  CHECK(z.grad() == values({2, 3, 0, 0}, {2, 2}));
}

TEST_CASE("max over everything shares the gradient among ties, as torch 1.13", "[reduce]") {
  // torch: tensor([1, 3, 3, 2, 3]).max().backward() gives [0, 1/3, 1/3, 0, 1/3].
  auto x = Tensor<double>::from_vector({1, 3, 3, 2, 3}, {5}, true);
  auto m = max(x);
  CHECK(m.shape() == Shape{});
  CHECK(m.item() == 3);
  m.backward();
  CHECK(allclose(x.grad(), values({0, 1.0 / 3, 1.0 / 3, 0, 1.0 / 3}, {5})));
  // With NaNs, the NaNs share it: torch gives [0, 0.5, 0, 0.5].
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto n = Tensor<double>::from_vector({1, nan, 3, nan}, {4}, true);
  max(n).backward();
  CHECK(n.grad() == values({0, 0.5, 0, 0.5}, {4}));
}

TEST_CASE("min over everything: max(x)'s rules mirrored, as torch 1.13", "[reduce]") {
  // torch: tensor([3, 1, 1, 2]).min().backward() gives [0, 0.5, 0.5, 0]; with NaNs the NaNs share it.
  auto x = Tensor<double>::from_vector({3, 1, 1, 2}, {4}, true);
  auto m = x.min();
  CHECK(m.shape() == Shape{});
  CHECK(m.item() == 1);
  CHECK(m.grad_fn_name() == "min");
  m.backward();
  CHECK(x.grad() == values({0, 0.5, 0.5, 0}, {4}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto n = Tensor<double>::from_vector({3, nan, 1, nan}, {4}, true);
  auto mn = min(n);
  CHECK(std::isnan(mn.item()));
  mn.backward();
  CHECK(n.grad() == values({0, 0.5, 0, 0.5}, {4}));
  CHECK_THROWS_WITH(min(Tensor<double>::zeros({0, 2})), Catch::Contains("min of an empty tensor (shape [0, 2])"));
  CHECK_GRADCHECK([](const Inputs& in) { return min(in[0]); }, (Inputs{rand_input({3, 4}, 75)}));
}

// Gradchecks max or min (op(x, dim, keepdim)) over the last, a middle and the first dim, with and
// without keepdim, on inputs drawn from seed, seed + 1 and seed + 2. Random inputs have no ties, so the
// op is locally smooth.
template <typename Op>
void check_gradients_over_dims(Op op, std::uint64_t seed) {
  for (bool keepdim : {false, true}) {
    CHECK_GRADCHECK([&](const Inputs& in) { return op(in[0], -1, keepdim).values; },
                    (Inputs{rand_input({3, 4}, seed)}));
    CHECK_GRADCHECK([&](const Inputs& in) { return op(in[0], 1, keepdim).values; },
                    (Inputs{rand_input({2, 3, 4}, seed + 1)}));
    CHECK_GRADCHECK([&](const Inputs& in) { return op(in[0], 0, keepdim).values; },
                    (Inputs{rand_input({4, 2}, seed + 2)}));
  }
}

TEST_CASE("max gradients", "[reduce][gradcheck]") {
  check_gradients_over_dims(
      [](const Tensor<double>& x, std::int64_t dim, bool keepdim) { return max(x, dim, keepdim); }, 70);
  CHECK_GRADCHECK([](const Inputs& in) { return max(in[0]); }, (Inputs{rand_input({3, 4}, 73)}));
  CHECK(max(rand_input({2}, 74)).grad_fn_name() == "max");
}

TEST_CASE("logsumexp over dims, with keepdim, matches torch and stays finite at large values", "[reduce]") {
  // torch 1.13: logsumexp([1, 2, 3]) = 3.4076059644443806, logsumexp([1000, 1000]) = 1000.6931471805599,
  // logsumexp([-1000, -1000.5]) = -999.5259230158199 (exp of each would overflow or underflow).
  CHECK(logsumexp(Tensor<double>::from_vector({1, 2, 3}, {3}), 0).item() == Approx(3.4076059644443806).epsilon(1e-15));
  CHECK(logsumexp(Tensor<double>::from_vector({1000, 1000}, {2}), 0).item() ==
        Approx(1000.6931471805599).epsilon(1e-15));
  CHECK(logsumexp(Tensor<double>::from_vector({-1000, -1000.5}, {2}), -1).item() ==
        Approx(-999.5259230158199).epsilon(1e-15));
  CHECK(logsumexp(Tensor<float>::from_vector({1000, 1000}, {2}), 0).item() == Approx(1000.6931f).epsilon(1e-7));
  // Any set of dims, as sum's: against log(sum(exp(x))) where that does not overflow.
  auto x = rand_input({2, 3, 4}, 80, -3, 3);
  for (const std::vector<std::int64_t>& dims :
       std::vector<std::vector<std::int64_t>>{{1}, {-1}, {0, 2}, {2, 0, 1}, {}}) {
    for (bool keepdim : {false, true}) {
      INFO("dims [" << fmt::format("{}", fmt::join(dims, ", ")) << "], keepdim " << keepdim);
      const auto got = logsumexp(x, dims, keepdim);
      const auto want = log(sum(exp(x), dims, keepdim));
      CHECK(got.shape() == want.shape());
      CHECK(allclose(got.data(), want.data(), 1e-14));
    }
  }
  CHECK(logsumexp(x, {}).shape() == Shape{});
  CHECK(logsumexp(Tensor<double>::scalar(2), 0).item() == 2);
  // An empty slice sums nothing: log 0 = -inf, as torch.
  CHECK(logsumexp(Tensor<double>::zeros({2, 0}), 1).data() == values({-HUGE_VAL, -HUGE_VAL}, {2}));
  CHECK(logsumexp(Tensor<double>::zeros({0, 3}), 1).shape() == Shape{0});
}

TEST_CASE("logsumexp's gradient is the softmax of each slice", "[reduce]") {
  // torch 1.13: x = [[0.5, -1, 2], [0, 0, 0]], logsumexp(x, 1).backward([1, 2]).
  auto x = Tensor<double>::from_vector({0.5, -1, 2, 0, 0, 0}, {2, 3}, true);
  auto y = logsumexp(x, 1);
  CHECK(allclose(y.data(), values({2.241311296657157, 1.0986122886681098}, {2}), 1e-15));
  y.backward(values({1, 2}, {2}));
  CHECK(allclose(
      x.grad(),
      values({0.1752903921400367, 0.03911257327068745, 0.7855970345892758, 2.0 / 3, 2.0 / 3, 2.0 / 3}, {2, 3}), 1e-15));
  CHECK(y.grad_fn_name() == "logsumexp");
}

TEST_CASE("logsumexp of slices of -inf and of +inf follows torch 1.13", "[reduce]") {
  // torch 1.13: x = [[-inf, -inf], [1, -inf], [inf, 1], [-inf, inf]], logsumexp(x, 1).backward(ones):
  // out [-inf, 1, inf, inf]; gradient exp(x - out), NaN where x and out are the same infinity:
  // [[nan, nan], [1, 0], [nan, 0], [0, nan]].
  const double inf = HUGE_VAL, nan = std::numeric_limits<double>::quiet_NaN();
  auto x = Tensor<double>::from_vector({-inf, -inf, 1, -inf, inf, 1, -inf, inf}, {4, 2}, true);
  auto y = logsumexp(x, 1);
  CHECK(y.data() == values({-inf, 1, inf, inf}, {4}));
  y.backward(values({1, 1, 1, 1}, {4}));
  CHECK(tapegrad::testing::allclose(x.grad(), values({nan, nan, 1, 0, nan, 0, 0, nan}, {4, 2})));
  // The same along dim 0, where each slice is strided: only the all -inf column is -inf.
  auto t = Tensor<double>::from_vector({-inf, 0, -inf, 0}, {2, 2});
  CHECK(allclose(logsumexp(t, 0).data(), values({-inf, std::log(2.0)}, {2}), 1e-15));
  // A NaN anywhere in a slice makes it NaN.
  CHECK(std::isnan(logsumexp(Tensor<double>::from_vector({1, nan, inf}, {3}), 0).item()));
}

TEST_CASE("logsumexp gradients", "[reduce][gradcheck]") {
  for (bool keepdim : {false, true}) {
    CHECK_GRADCHECK([&](const Inputs& in) { return logsumexp(in[0], 1, keepdim); }, (Inputs{rand_input({3, 4}, 81)}));
    CHECK_GRADCHECK([&](const Inputs& in) { return logsumexp(in[0], -2, keepdim); },
                    (Inputs{rand_input({2, 3, 4}, 82)}));
    CHECK_GRADCHECK(
        [&](const Inputs& in) {
          return logsumexp(in[0], {0, 2}, keepdim);
        },
        (Inputs{rand_input({2, 3, 4}, 83)}));
    CHECK_GRADCHECK([&](const Inputs& in) { return logsumexp(in[0], {}, keepdim); }, (Inputs{rand_input({3, 2}, 84)}));
  }
  CHECK_GRADCHECK([](const Inputs& in) { return logsumexp(in[0], 0); }, (Inputs{rand_input({}, 85)}));
  // Far from 0: the shift by the slice's max keeps the gradient accurate.
  CHECK_GRADCHECK([](const Inputs& in) { return logsumexp(in[0], -1); }, (Inputs{rand_input({3, 5}, 86, 300, 320)}));
}

TEST_CASE("min over a dim and argmin pick the first minimum, NaN first of all", "[reduce]") {
  // torch 1.13: torch.min(tensor([[1, 0, 0], [2, 2, 5]]), 1) = (values [0, 2], indices [1, 0]).
  check_over_dim([](const Tensor<double>& t, std::int64_t dim, bool keepdim) { return min(t, dim, keepdim); },
                 [](const Tensor<double>& t, std::int64_t dim, bool keepdim) { return argmin(t, dim, keepdim); },
                 {{1, 0, 0, 2, 2, 5}, {0, 2}, {1, 0, 0}, {1, 0}, {0, 0, 0}, {0, 1, 2, 3, 12, 13, 14, 15}, 0});
  // torch: min([[3, 1, 1], [2, nan, nan], [nan, 0, nan]], 1) = ([1, nan, nan], indices [1, 1, 0]).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto n = Tensor<double>::from_vector({3, 1, 1, 2, nan, nan, nan, 0, nan}, {3, 3}, true);
  auto m = min(n, 1).values;
  CHECK(m.data()(0) == 1);
  CHECK(std::isnan(m.data()(1)));
  CHECK(std::isnan(m.data()(2)));
  CHECK((argmin(n, 1) == xt::xarray<std::int64_t>({1, 1, 0})));
  m.backward(values({1, 1, 1}, {3}));
  CHECK(n.grad() == values({0, 1, 0, 0, 1, 0, 1, 0, 0}, {3, 3}));
  // -inf is an ordinary minimum.
  CHECK((argmin(Tensor<float>::from_vector({HUGE_VALF, -HUGE_VALF, -HUGE_VALF}, {3}), 0)() == 1));
}

TEST_CASE("min over a dim sends the gradient to the first arg-min", "[reduce]") {
  // torch: x.min(1).values.sum().backward() gives [[0, 1, 0], [1, 0, 0]]; z.min(0) with ties in column 0.
  auto x = Tensor<double>::from_vector({1, 0, 0, 2, 2, 5}, {2, 3}, true);
  sum(min(x, 1).values).backward();
  CHECK(x.grad() == values({0, 1, 0, 1, 0, 0}, {2, 3}));
  auto z = Tensor<double>::from_vector({1, 1, 5, 1}, {2, 2}, true);
  auto m = min(z, 0).values;
  CHECK(m.grad_fn_name() == "min");
  m.backward(xt::xarray<double>({2.0, 3.0}));
  CHECK(z.grad() == values({2, 3, 0, 0}, {2, 2}));
}

TEST_CASE("min gradients", "[reduce][gradcheck]") {
  check_gradients_over_dims(
      [](const Tensor<double>& x, std::int64_t dim, bool keepdim) { return min(x, dim, keepdim); }, 90);
}

TEST_CASE("logsumexp and min record nothing under NoGradGuard", "[reduce]") {
  auto x = rand_input({2, 3}, 93);
  NoGradGuard no_grad;
  for (const auto& y : {logsumexp(x, 1), min(x, 0).values, logsumexp(x, {})}) {
    CHECK(y.is_leaf());
    CHECK_FALSE(y.requires_grad());
  }
}

TEST_CASE("reduction errors name the op and the values", "[reduce][errors]") {
  auto x = iota({2, 3});
  CHECK_OP_ERROR(sum(x, {0, -2}), Contains("sum") && Contains("dim -2 appears more than once") && Contains("[0, -2]"));
  CHECK_OP_ERROR(mean(x, {1, 1}), Contains("mean") && Contains("dim 1 appears more than once"));
  CHECK_OP_ERROR(var(x, {2, 0}), Contains("var") && Contains("dim 2") && Contains("rank 2"));
  CHECK_OP_ERROR(sum(x, {-3}), Contains("sum") && Contains("dim -3"));
  CHECK_OP_ERROR(sum(Tensor<double>::scalar(1), {1}), Contains("sum") && Contains("dim 1"));
  CHECK_OP_ERROR(max(x, 2), Contains("max") && Contains("dim 2"));
  CHECK_OP_ERROR(max(Tensor<double>::zeros({2, 0}), 1),
                 Contains("max") && Contains("dim 1 of size 0") && Contains("[2, 0]"));
  CHECK_OP_ERROR(max(Tensor<double>::zeros({0})), Contains("max") && Contains("empty") && Contains("[0]"));
  CHECK_OP_ERROR(argmax(x, -3), Contains("argmax") && Contains("dim -3"));
  CHECK_OP_ERROR(argmax(Tensor<double>::zeros({0, 2}), 0), Contains("argmax") && Contains("size 0"));
  CHECK_OP_ERROR(argmax(Tensor<double>::zeros({0, 2})), Contains("argmax") && Contains("empty") && Contains("[0, 2]"));
  CHECK_OP_ERROR(argmin(Tensor<double>::zeros({0})), Contains("argmin") && Contains("empty") && Contains("[0]"));
  CHECK_OP_ERROR(logsumexp(x, 2), Contains("logsumexp") && Contains("dim 2") && Contains("rank 2"));
  CHECK_OP_ERROR(logsumexp(x, {1, -1}),
                 Contains("logsumexp") && Contains("dim -1 appears more than once") && Contains("[1, -1]"));
  CHECK_OP_ERROR(min(x, -3), Contains("min") && Contains("dim -3") && Contains("rank 2"));
  CHECK_OP_ERROR(min(Tensor<double>::zeros({2, 0}), 1),
                 Contains("min") && Contains("dim 1 of size 0") && Contains("[2, 0]"));
  CHECK_OP_ERROR(argmin(x, 2), Contains("argmin") && Contains("dim 2"));
  CHECK_OP_ERROR(argmin(Tensor<double>::zeros({0, 2}), 0), Contains("argmin") && Contains("size 0"));
}

// ---------------------------------------------------------------------------------------------------
// cumsum, std, norm, pad, repeat

TEST_CASE("cumsum runs along the dim, and its gradient is the reversed cumulative sum", "[reduce]") {
  auto x = iota({2, 3}, true);
  const auto y = cumsum(x, 1);
  CHECK(y.data() == values({0, 1, 3, 3, 7, 12}, {2, 3}));
  CHECK(cumsum(x, -2).data() == values({0, 1, 2, 3, 5, 7}, {2, 3}));
  CHECK(y.grad_fn_name() == "cumsum");
  y.backward(values({1, 2, 3, 4, 5, 6}, {2, 3}));
  CHECK(x.grad() == values({6, 5, 3, 15, 11, 6}, {2, 3}));
  CHECK(cumsum(Tensor<double>::scalar(2.5), -1).item() == 2.5);  // a 0-d tensor takes dim 0 or -1
  CHECK(cumsum(Tensor<double>::zeros({0, 3}), 1).shape() == Shape{0, 3});
  CHECK_GRADCHECK([](const Inputs& in) { return cumsum(in[0], 1); }, (Inputs{rand_input({2, 4, 3}, 200)}));
  CHECK_GRADCHECK([](const Inputs& in) { return cumsum(in[0], 0); }, (Inputs{rand_input({5}, 201)}));
}

TEST_CASE("std is the square root of var, with a zero gradient at a constant slice", "[reduce]") {
  const auto x = rand_input({3, 4}, 202);
  for (std::int64_t correction : {0, 1}) {
    CHECK(allclose(tapegrad::std(x, {1}, correction).data(), sqrt(var(x, {1}, correction)).data(), 1e-14));
    CHECK(allclose(x.std(0, correction, true).data(), sqrt(var(x, {0}, correction, true)).data(), 1e-14));
    CHECK_GRADCHECK([=](const Inputs& in) { return tapegrad::std(in[0], {0}, correction); }, (Inputs{x}));
    CHECK_GRADCHECK([=](const Inputs& in) { return tapegrad::std(in[0], {}, correction, true); }, (Inputs{x}));
  }
  // torch 1.13 masks g / (2 std) where std is 0: the constant row gets 0, not NaN (docs/gradients.md).
  auto c = Tensor<double>::from_vector({2, 2, 2, 1, 2, 4}, {2, 3}, true);
  const auto s = tapegrad::std(c, 1);
  CHECK(s.data()(0) == 0.0);
  s.backward(values({1, 1}, {2}));
  for (std::size_t j = 0; j < 3; ++j) CHECK(c.grad()(0, j) == 0.0);
  CHECK(std::isfinite(c.grad()(1, 0)));
  CHECK(s.grad_fn_name() == "std");
}

TEST_CASE("norm: p = 2, 1, inf, 0 and general p, over dims, as torch.linalg.vector_norm", "[reduce]") {
  const auto x = Tensor<double>::from_vector({3, -4, 0, 1, -2, 2}, {2, 3});
  CHECK(norm(x).item() == Approx(std::sqrt(34.0)).epsilon(1e-15));
  CHECK(norm(x, 2, 1).data() == values({5, 3}, {2}));
  CHECK(norm(x, 1, {1}).data() == values({7, 5}, {2}));
  CHECK(norm(x, std::numeric_limits<double>::infinity(), {0}, true).data() == values({3, 4, 2}, {1, 3}));
  CHECK(norm(x, 0, {1}).data() == values({2, 3}, {2}));
  CHECK(norm(x, 3, {1}).data()(0) == Approx(std::cbrt(91.0)).epsilon(1e-14));
  CHECK(x.norm(1).item() == 12);
  for (double p : {2.0, 1.0, 3.0, 0.5, 1.5, std::numeric_limits<double>::infinity()}) {
    INFO("p " << p);
    // Random inputs have no zeros and no ties: the norm is smooth there for every p.
    CHECK_GRADCHECK([=](const Inputs& in) { return norm(in[0], p, {1}); }, (Inputs{rand_input({3, 4}, 203)}));
    CHECK_GRADCHECK(
        [=](const Inputs& in) {
          return norm(in[0], p, {0, 2}, true);
        },
        (Inputs{rand_input({2, 3, 2}, 204)}));
  }
}

TEST_CASE("norm's gradient at a slice of zeros is 0 for every p, and p = inf shares ties", "[reduce]") {
  // torch 1.13: vector_norm(zeros(3), p).backward() gives zeros for p = 2, 1, inf, 3 and 0.5 (and
  // p = 2's x / norm would be 0 / 0); see docs/gradients.md, "norm".
  for (double p : {2.0, 1.0, 3.0, 0.5, 1.5, 0.0, std::numeric_limits<double>::infinity()}) {
    INFO("p " << p);
    auto z = Tensor<double>::zeros({2, 3}, true);
    norm(z, p, {1}).backward(values({1, 1}, {2}));
    CHECK(z.grad() == xt::xarray<double>(xt::zeros<double>({2, 3})));
  }
  // p = inf: the maxima of |x| share the gradient equally, with x's sign ([0.5, -0.5, 0] as torch).
  auto t = Tensor<double>::from_vector({2, -2, 1}, {3}, true);
  norm(t, std::numeric_limits<double>::infinity()).backward();
  CHECK(t.grad() == values({0.5, -0.5, 0}, {3}));
  // p < 1: a zero element of a non-zero slice gets 0 (not 0 * inf), as torch.
  auto h = Tensor<double>::from_vector({1, -2, 0}, {3}, true);
  norm(h, 0.5).backward();
  CHECK(h.grad()(2) == 0.0);
  CHECK(h.grad()(0) == Approx(2.414213562373095).epsilon(1e-14));
}

TEST_CASE("pad adds value around the last dims and crops with negative pads, as F.pad", "[shape]") {
  auto x = iota({2, 3}, true);
  const auto y = pad(x, {1, 2}, -1.0);
  CHECK(y.data() == values({-1, 0, 1, 2, -1, -1, -1, 3, 4, 5, -1, -1}, {2, 6}));
  CHECK(y.grad_fn_name() == "pad");
  CHECK(pad(x, {0, 0, 1, 0}).data() == values({0, 0, 0, 0, 1, 2, 3, 4, 5}, {3, 3}));
  const auto crop = pad(x, {-1, 1, 0, -1});
  CHECK(crop.data() == values({1, 2, 0}, {1, 3}));
  crop.backward(values({7, 8, 9}, {1, 3}));
  CHECK(x.grad() == values({0, 7, 8, 0, 0, 0}, {2, 3}));
  CHECK(pad(x, {0, -3}).shape() == Shape{2, 0});
  CHECK(pad(x, {}).data() == x.data());
  CHECK(pad(Tensor<double>::scalar(3), {}).item() == 3);
  CHECK_GRADCHECK([](const Inputs& in) { return pad(in[0], {1, -1, 2, 0}, 0.5); }, (Inputs{rand_input({3, 4}, 205)}));
  CHECK_GRADCHECK(
      [](const Inputs& in) {
        return pad(in[0], {0, 1, -1, 1, 1, 1});
      },
      (Inputs{rand_input({2, 3, 2}, 206)}));
}

TEST_CASE("repeat tiles along each dim and sums the tiles' gradients, as Tensor.repeat", "[shape]") {
  auto x = iota({2, 2}, true);
  const auto y = repeat(x, {1, 2});
  CHECK(y.data() == values({0, 1, 0, 1, 2, 3, 2, 3}, {2, 4}));
  CHECK(x.repeat(2, 1, 1).shape() == Shape{2, 2, 2});
  CHECK(x.repeat(0, 1).shape() == Shape{0, 2});
  CHECK(repeat(Tensor<double>::scalar(2), {2, 3}).data() == values({2, 2, 2, 2, 2, 2}, {2, 3}));
  CHECK(y.grad_fn_name() == "repeat");
  y.backward(values({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4}));
  CHECK(x.grad() == values({4, 6, 12, 14}, {2, 2}));
  CHECK_GRADCHECK([](const Inputs& in) { return repeat(in[0], {2, 1, 3}); }, (Inputs{rand_input({2, 2}, 207)}));
}

TEST_CASE("cumsum, std, norm, pad and repeat errors name the op and the values", "[reduce][shape][errors]") {
  auto x = iota({2, 3});
  CHECK_OP_ERROR(cumsum(x, 2), Contains("cumsum") && Contains("dim 2") && Contains("rank 2"));
  CHECK_OP_ERROR(cumsum(Tensor<double>::scalar(1), 1), Contains("cumsum") && Contains("dim 1"));
  CHECK_OP_ERROR(tapegrad::std(x, {0, 0}), Contains("std") && Contains("dim 0 appears more than once"));
  CHECK_OP_ERROR(tapegrad::std(x, -3), Contains("std") && Contains("dim -3"));
  CHECK_OP_ERROR(norm(x, -1.0), Contains("norm") && Contains("p must be >= 0") && Contains("-1"));
  CHECK_OP_ERROR(norm(x, std::nan(""), {1}), Contains("norm") && Contains("nan"));
  CHECK_OP_ERROR(norm(x, 2, {3}), Contains("norm") && Contains("dim 3"));
  CHECK_OP_ERROR(pad(x, {1}), Contains("pad") && Contains("even") && Contains("[1]"));
  CHECK_OP_ERROR(pad(x, {1, 1, 1, 1, 1, 1}), Contains("pad") && Contains("6 pads cover 3 dims") && Contains("[2, 3]"));
  CHECK_OP_ERROR(pad(x, {0, -4}),
                 Contains("pad") && Contains("(0, -4)") && Contains("dim 1 of size 3") && Contains("negative (-1)"));
  CHECK_OP_ERROR(repeat(x, {2}), Contains("repeat") && Contains("[2]") && Contains("[2, 3]"));
  CHECK_OP_ERROR(repeat(x, {1, -2}), Contains("repeat") && Contains(">= 0") && Contains("-2 at position 1"));
}
