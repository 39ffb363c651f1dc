// The method forms of Tensor (x.sum(), x.matmul(w), x[0], ...) and single-int dims: each equals its free
// function exactly, records a node so gradients flow, and reports errors as the free function does; and
// the torch spellings a new user tries first.
#include <catch2/catch.hpp>
#include <functional>
#include <optional>
#include <sstream>
#include <vector>

#include "tapegrad/autograd/factories.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::rand_input;

namespace {
using TD = Tensor<double>;
using Inputs = std::vector<TD>;

// method(x) and free(x) give the same values, shape and op name, and the same gradient for x.
void check_same(const std::function<TD(const TD&)>& method, const std::function<TD(const TD&)>& free_fn,
                const Shape& shape, double low = -1.0, double high = 1.0) {
  const TD a = rand_input(shape, 7, low, high), b = rand_input(shape, 7, low, high);
  const TD ya = method(a), yb = free_fn(b);
  REQUIRE(ya.shape() == yb.shape());
  CHECK(ya.to_vector() == yb.to_vector());
  CHECK(ya.grad_fn_name() == yb.grad_fn_name());
  CHECK_FALSE(ya.is_leaf());
  // The same weighted sum of each: the gradients must match exactly.
  Generator gen(3);
  const TD w = TD::uniform(ya.shape(), -1.0, 1.0, gen);
  sum(mul(ya, w)).backward();
  sum(mul(yb, w)).backward();
  REQUIRE(a.has_grad());
  CHECK(a.grad() == b.grad());
}
}  // namespace

TEST_CASE("reductions as methods equal sum, mean, var and max", "[tensor][methods]") {
  check_same([](const TD& x) { return x.sum(); }, [](const TD& x) { return sum(x); }, {3, 4});
  check_same([](const TD& x) { return x.sum({1}, /*keepdim=*/true); }, [](const TD& x) { return sum(x, {1}, true); },
             {3, 4});
  check_same([](const TD& x) { return x.sum({0, 2}); }, [](const TD& x) { return sum(x, {0, 2}); }, {2, 3, 4});
  check_same([](const TD& x) { return x.sum(-1); }, [](const TD& x) { return sum(x, {-1}); }, {2, 3});
  check_same([](const TD& x) { return x.mean(); }, [](const TD& x) { return mean(x); }, {3, 4});
  check_same([](const TD& x) { return x.mean({0}, true); }, [](const TD& x) { return mean(x, {0}, true); }, {3, 4});
  check_same([](const TD& x) { return x.mean(1, true); }, [](const TD& x) { return mean(x, {1}, true); }, {3, 4});
  check_same([](const TD& x) { return x.var(1); }, [](const TD& x) { return var(x, {1}); }, {3, 4});
  check_same([](const TD& x) { return x.var({0}, 0, true); }, [](const TD& x) { return var(x, {0}, 0, true); }, {3, 4});
  check_same([](const TD& x) { return x.max(); }, [](const TD& x) { return max(x); }, {3, 4});
  check_same([](const TD& x) { return x.max(0, true).values; }, [](const TD& x) { return max(x, 0, true).values; },
             {3, 4});
}

TEST_CASE("min and logsumexp as methods equal the free functions", "[tensor][methods]") {
  check_same([](const TD& x) { return x.min(1).values; }, [](const TD& x) { return min(x, 1).values; }, {3, 4});
  check_same([](const TD& x) { return x.min(-2, true).values; }, [](const TD& x) { return min(x, 0, true).values; },
             {3, 4});
  check_same([](const TD& x) { return x.logsumexp(1); }, [](const TD& x) { return logsumexp(x, {1}); }, {3, 4});
  check_same(
      [](const TD& x) {
        return x.logsumexp({0, 2}, true);
      },
      [](const TD& x) {
        return logsumexp(x, {0, 2}, true);
      },
      {2, 3, 4});
}

TEST_CASE("a single int dim is accepted where a list is", "[tensor][methods]") {
  const TD x = rand_input({2, 3, 4}, 1);
  CHECK(sum(x, 1).to_vector() == sum(x, {1}).to_vector());
  CHECK(sum(x, -1, true).shape() == Shape{2, 3, 1});
  CHECK(mean(x, 2).to_vector() == mean(x, {2}).to_vector());
  CHECK(mean(x, std::int64_t{0}, true).shape() == Shape{1, 3, 4});
  CHECK(var(x, 1, 0).to_vector() == var(x, {1}, 0).to_vector());
  CHECK(x.sum(2u).shape() == Shape{2, 3});
  // An empty list still means every dim (as in torch), not dim 0.
  CHECK(x.sum({}).shape() == Shape{});
  CHECK(sum(x, {}, true).shape() == Shape{1, 1, 1});
  CHECK_THROWS_WITH(x.sum(3), Catch::Contains("dim 3"));
}

TEST_CASE("shape methods equal transpose, permute, reshape, flatten, squeeze, unsqueeze", "[tensor][methods]") {
  check_same([](const TD& x) { return x.t(); }, [](const TD& x) { return transpose(x, 0, 1); }, {3, 4});
  check_same([](const TD& x) { return x.transpose(0, 2); }, [](const TD& x) { return transpose(x, 0, 2); }, {2, 3, 4});
  check_same(
      [](const TD& x) {
        return x.permute({2, 0, 1});
      },
      [](const TD& x) {
        return permute(x, {2, 0, 1});
      },
      {2, 3, 4});
  check_same(
      [](const TD& x) {
        return x.reshape({4, -1});
      },
      [](const TD& x) {
        return reshape(x, {4, -1});
      },
      {2, 3, 4});
  check_same([](const TD& x) { return x.reshape(6, 4); }, [](const TD& x) { return reshape(x, {6, 4}); }, {2, 3, 4});
  check_same([](const TD& x) { return x.flatten(1); }, [](const TD& x) { return flatten(x, 1); }, {2, 3, 4});
  check_same([](const TD& x) { return x.squeeze(); }, [](const TD& x) { return squeeze(x); }, {2, 1, 3});
  check_same([](const TD& x) { return x.squeeze(1); }, [](const TD& x) { return squeeze(x, 1); }, {2, 1, 3});
  check_same([](const TD& x) { return x.unsqueeze(-1); }, [](const TD& x) { return unsqueeze(x, -1); }, {2, 3});
}

TEST_CASE("t() transposes a matrix, keeps 0-D and 1-D tensors and refuses more dims", "[tensor][methods]") {
  const TD m = rand_input({2, 3}, 2);
  CHECK(m.t().shape() == Shape{3, 2});
  CHECK(m.t().t().to_vector() == m.to_vector());
  const TD v = rand_input({4}, 3);
  CHECK(v.t().same_as(v));
  const TD s = TD::scalar(2.0);
  CHECK(s.t().same_as(s));
  CHECK_THROWS_AS(rand_input({2, 3, 4}, 4).t(), ShapeError);
  CHECK_THROWS_WITH(rand_input({2, 3, 4}, 4).t(),
                    "t: expects a tensor with at most 2 dims, got 3-D [2, 3, 4]; use transpose(dim0, dim1)");
}

TEST_CASE("elementwise, softmax and matmul methods equal their free functions", "[tensor][methods]") {
  check_same([](const TD& x) { return x.exp(); }, [](const TD& x) { return exp(x); }, {3, 4});
  check_same([](const TD& x) { return x.log(); }, [](const TD& x) { return log(x); }, {3, 4}, 0.5, 2.0);
  check_same([](const TD& x) { return x.sqrt(); }, [](const TD& x) { return sqrt(x); }, {3, 4}, 0.5, 2.0);
  check_same([](const TD& x) { return x.tanh(); }, [](const TD& x) { return tanh(x); }, {3, 4});
  check_same([](const TD& x) { return x.sigmoid(); }, [](const TD& x) { return sigmoid(x); }, {3, 4});
  check_same([](const TD& x) { return x.relu(); }, [](const TD& x) { return relu(x); }, {3, 4});
  check_same([](const TD& x) { return x.neg(); }, [](const TD& x) { return neg(x); }, {3, 4});
  check_same([](const TD& x) { return x.pow(2); }, [](const TD& x) { return pow(x, 2.0); }, {3, 4});
  check_same([](const TD& x) { return x.pow(x); }, [](const TD& x) { return pow(x, x); }, {3, 4}, 0.5, 2.0);
  check_same([](const TD& x) { return x.softmax(1); }, [](const TD& x) { return softmax(x, 1); }, {3, 4});
  check_same([](const TD& x) { return x.log_softmax(-1); }, [](const TD& x) { return log_softmax(x, -1); }, {3, 4});
  check_same([](const TD& x) { return x.matmul(x.t()); }, [](const TD& x) { return matmul(x, transpose(x, 0, 1)); },
             {3, 4});
}

TEST_CASE("abs, log1p, sin, cos, clamp, minimum and maximum methods equal their free functions", "[tensor][methods]") {
  check_same([](const TD& x) { return x.abs(); }, [](const TD& x) { return abs(x); }, {3, 4});
  check_same([](const TD& x) { return x.log1p(); }, [](const TD& x) { return log1p(x); }, {3, 4}, -0.5, 2.0);
  check_same([](const TD& x) { return x.sin(); }, [](const TD& x) { return sin(x); }, {3, 4});
  check_same([](const TD& x) { return x.cos(); }, [](const TD& x) { return cos(x); }, {3, 4});
  check_same([](const TD& x) { return x.clamp(-0.5, 0.5); }, [](const TD& x) { return clamp(x, -0.5, 0.5); }, {3, 4});
  check_same([](const TD& x) { return x.clamp(std::nullopt, 0.2); },
             [](const TD& x) { return clamp(x, std::nullopt, 0.2); }, {3, 4});
  check_same([](const TD& x) { return x.minimum(x.exp() - 1.0); }, [](const TD& x) { return minimum(x, exp(x) - 1.0); },
             {3, 4});
  check_same([](const TD& x) { return x.maximum(x.t().sum(1)); }, [](const TD& x) { return maximum(x, sum(x, 0)); },
             {3, 4});
}

TEST_CASE("gather and index_select methods equal their free functions", "[tensor][methods]") {
  const IndexArray index = {{0, 2, 2}, {1, 1, 0}};
  check_same([&](const TD& x) { return x.gather(1, index); }, [&](const TD& x) { return gather(x, 1, index); }, {3, 4});
  const IndexArray rows = {2, 0, 2};
  check_same([&](const TD& x) { return x.index_select(0, rows); },
             [&](const TD& x) { return index_select(x, 0, rows); }, {3, 4});
}

TEST_CASE("tril and triu methods equal their free functions", "[tensor][methods]") {
  check_same([](const TD& x) { return x.tril(); }, [](const TD& x) { return tril(x); }, {3, 4});
  check_same([](const TD& x) { return x.triu(-1); }, [](const TD& x) { return triu(x, -1); }, {2, 3, 4});
}

TEST_CASE("method chains read like torch and pass gradcheck", "[tensor][methods]") {
  // torch: (x.matmul(w) + b).relu().pow(2).sum(1, keepdim=True).mean()
  CHECK_GRADCHECK([](const Inputs& in) { return (in[0].matmul(in[1]) + in[2]).tanh().pow(2).sum(1, true).mean(); },
                  (Inputs{rand_input({4, 3}, 5), rand_input({3, 2}, 6), rand_input({2}, 7)}));
  CHECK_GRADCHECK([](const Inputs& in) { return in[0].log_softmax(1).exp().t().reshape(-1).softmax(0); },
                  (Inputs{rand_input({2, 3}, 8)}));
  const Tensor<float> x = Tensor<float>::from_vector({1, 2, 3, 4}, {2, 2});
  CHECK(x.sum().item() == 10.0f);
  CHECK(x.t().to_vector() == std::vector<float>{1, 3, 2, 4});
  CHECK(x.pow(2).sum(0).to_vector() == std::vector<float>{10, 20});
}

TEST_CASE("std, norm, cumsum, topk, sort and repeat methods equal their free functions", "[tensor][methods]") {
  check_same([](const TD& x) { return x.std(1); }, [](const TD& x) { return tapegrad::std(x, {1}); }, {3, 4});
  check_same([](const TD& x) { return x.std({0}, 0, true); },
             [](const TD& x) { return tapegrad::std(x, {0}, 0, true); }, {3, 4});
  check_same([](const TD& x) { return x.norm(); }, [](const TD& x) { return norm(x); }, {3, 4});
  check_same([](const TD& x) { return x.norm(1, -1, true); }, [](const TD& x) { return norm(x, 1, {-1}, true); },
             {3, 4});
  check_same([](const TD& x) { return x.cumsum(0); }, [](const TD& x) { return cumsum(x, 0); }, {3, 4});
  check_same([](const TD& x) { return x.topk(2).values; }, [](const TD& x) { return topk(x, 2).values; }, {3, 4});
  check_same([](const TD& x) { return x.sort(0, true).values; }, [](const TD& x) { return sort(x, 0, true).values; },
             {3, 4});
  check_same([](const TD& x) { return x.repeat(2, 1); }, [](const TD& x) { return repeat(x, {2, 1}); }, {3, 4});
  const TD x = rand_input({3, 4}, 9);
  CHECK((x.topk(3, 0, false).indices == topk(x, 3, 0, false).indices));
  CHECK((x.sort().indices == sort(x).indices));
  CHECK_THROWS_WITH(x.topk(5), Catch::Contains("topk") && Catch::Contains("k 5"));
}

TEST_CASE("select, narrow, slice, index, x[i], expand, clone and masked_fill methods equal their free functions",
          "[tensor][methods]") {
  using namespace tapegrad::indexing;
  check_same([](const TD& x) { return x[1]; }, [](const TD& x) { return select(x, 0, 1); }, {3, 4});
  check_same([](const TD& x) { return x[-1][2]; }, [](const TD& x) { return select(select(x, 0, 2), 0, 2); }, {3, 4});
  check_same([](const TD& x) { return x.select(1, -1); }, [](const TD& x) { return select(x, 1, -1); }, {3, 4});
  check_same([](const TD& x) { return x.narrow(1, 1, 2); }, [](const TD& x) { return narrow(x, 1, 1, 2); }, {3, 4});
  check_same([](const TD& x) { return x.slice(1, 1, 4, 2); }, [](const TD& x) { return slice(x, 1, 1, 4, 2); }, {3, 4});
  check_same([](const TD& x) { return x.slice(0, 1); }, [](const TD& x) { return slice(x, 0, 1, 3); }, {3, 4});
  check_same([](const TD& x) { return x.slice(-1, std::nullopt, -1); }, [](const TD& x) { return slice(x, 1, 0, 3); },
             {3, 4});
  check_same(
      [](const TD& x) {
        return x.index({Slice(1, None), 0});
      },
      [](const TD& x) {
        return index(x, {Slice(1, None), 0});
      },
      {3, 4});
  check_same(
      [](const TD& x) {
        return x.expand({2, -1, 4});
      },
      [](const TD& x) {
        return expand(x, Shape{2, 3, 4});
      },
      {3, 1});
  check_same([](const TD& x) { return x.expand(3, 4); }, [](const TD& x) { return expand(x, Shape{3, 4}); }, {1, 4});
  check_same([](const TD& x) { return x.clone(); }, [](const TD& x) { return clone(x); }, {3, 4});
  const xt::xarray<bool> mask = {true, false, false, true};
  check_same([&](const TD& x) { return x.masked_fill(mask, 2.0); },
             [&](const TD& x) { return masked_fill(x, mask, 2.0); }, {3, 4});
  const TD x = rand_input({3, 4}, 10);
  CHECK((x.argmax(1) == argmax(x, 1)));
  CHECK((x.argmin(0, true) == argmin(x, 0, true)));
  CHECK(x.argmax()() == argmax(x)());
  CHECK(x.argmin()() == argmin(x)());
  CHECK_THROWS_WITH(x.expand({-1}),
                    Catch::Contains("expand") && Catch::Contains("1 sizes") && Catch::Contains("[3, 4]"));
  CHECK_THROWS_WITH(x.expand({-1, 3, 4}), Catch::Contains("size -1 at position 0"));
  CHECK_THROWS_WITH(x.expand(3, 5), Catch::Contains("expand") && Catch::Contains("[3, 5]"));
}

// What a PyTorch user writes first, building a small Vision Transformer: each guess compiles and does
// what it does in torch (values from torch 1.13 where they are not evident).
TEST_CASE("what a PyTorch user guesses compiles and behaves as in torch", "[tensor][methods][guesses]") {
  using namespace tapegrad::indexing;
  Generator gen(0);
  // torch.randn(2, 4, 6), torch.arange(6), torch.arange(0, 1, 0.25), torch.zeros(2, 3).
  auto x = randn({2, 4, 6}, gen);
  CHECK(x.shape() == Shape{2, 4, 6});
  CHECK(arange(6).to_vector() == std::vector<float>{0, 1, 2, 3, 4, 5});
  CHECK(arange(0, 1, 0.25).to_vector() == std::vector<float>{0, 0.25f, 0.5f, 0.75f});
  CHECK(zeros({2, 3}).shape() == Shape{2, 3});
  CHECK(rand({3}, gen).numel() == 3);

  // print(x.shape): "[2, 4, 6]" here.
  std::ostringstream printed;
  printed << x.shape();
  CHECK(printed.str() == "[2, 4, 6]");

  // x[0], x[0][1], x.select(1, 0), x.narrow(2, 0, 3), x.slice(2, 1, 5, 2), x.index({...}).
  CHECK(x[0].shape() == Shape{4, 6});
  CHECK(x[0][1].to_vector() == select(select(x, 0, 0), 0, 1).to_vector());
  CHECK(x.select(1, 0).shape() == Shape{2, 6});
  CHECK(x.narrow(2, 0, 3).shape() == Shape{2, 4, 3});
  CHECK(x.slice(2, 1, 5, 2).shape() == Shape{2, 4, 2});
  const auto cls = x.index({Slice(), 0});  // the [CLS] position: x[:, 0]
  CHECK(cls.to_vector() == x.select(1, 0).to_vector());
  CHECK(x.index({Ellipsis, Slice(None, 3)}).shape() == Shape{2, 4, 3});
  CHECK(x.index({0, None}).shape() == Shape{1, 4, 6});

  // x.argmax(1), x.max(1) with its indices, x.item<float>().
  const auto logits = Tensor<float>::from_vector({0.1f, 2.0f, -1.0f, 3.0f, 0.5f, 0.2f}, {2, 3});
  CHECK((logits.argmax(1) == IndexArray({1, 0})));
  auto [best, where] = logits.max(1);
  CHECK(best.to_vector() == std::vector<float>{2.0f, 3.0f});
  CHECK((where == IndexArray({1, 0})));
  CHECK((logits.max(1).indices == logits.argmax(1)));
  CHECK(logits.sum().item<float>() == Approx(4.8f));
  CHECK(logits.sum().item<double>() == Approx(4.8));

  // torch.cat([a, b], 1) and torch.stack([a, b]) with a braced list; x.expand; x.clone().
  const auto a = ones({2, 3}), b = zeros({2, 1});
  CHECK(cat({a, b}, 1).shape() == Shape{2, 4});
  CHECK(stack({a, a}).shape() == Shape{2, 2, 3});
  const auto token = zeros({1, 1, 6});
  CHECK(token.expand(2, -1, -1).shape() == Shape{2, 1, 6});
  CHECK(cat({token.expand(2, -1, -1), x}, 1).shape() == Shape{2, 5, 6});
  auto copy = x.clone();
  CHECK(copy.to_vector() == x.to_vector());

  // x += y, x *= 2, writing values: fill_, zero_, copy_, index_put_ (Python's x[0, 1] = 5).
  auto y = ones({2, 3});
  y += a;
  y *= 2.0f;
  CHECK(y.to_vector() == std::vector<float>(6, 4.0f));
  y.index_put_({0, 1}, 5.0f);
  CHECK(y.to_vector() == std::vector<float>{4, 5, 4, 4, 4, 4});
  y.index_put_({1}, arange(3));
  CHECK(y.to_vector() == std::vector<float>{4, 5, 4, 0, 1, 2});
  y.masked_fill_(xt::xarray<bool>({true, false, false}), -1.0f);
  CHECK(y.to_vector() == std::vector<float>{-1, 5, 4, -1, 1, 2});
  y.zero_();
  CHECK(y.sum().item<float>() == 0.0f);

  // Gradients flow through all of it, checked against finite differences in double.
  CHECK_GRADCHECK(
      [](const Inputs& in) {
        TD h = cat({in[1].expand(2, -1, -1), in[0]}, 1);  // prepend a [CLS] token
        h += in[0].index({Slice(), Slice(None, 1)}).clone();
        const TD best = h.max(2).values;
        return best.index({Slice(), 0}) + h[1].sum() + h.narrow(1, 1, 2).select(2, 0).slice(0, 1).sum();
      },
      (Inputs{rand_input({2, 3, 4}, 11), rand_input({1, 1, 4}, 12)}));
}
