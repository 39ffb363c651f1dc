// Post-accumulate-grad hooks: when each leaf's gradient is complete during backward.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tapegrad/autograd/ops.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::rand_input;

namespace {
// What a hook saw: which leaf, and a copy of its gradient at that moment.
struct Seen {
  std::string name;
  xt::xarray<double> grad;
};
RemovableHandle record_into(std::vector<Seen>& seen, Tensor<double>& leaf, const std::string& name) {
  return leaf.register_post_accumulate_grad_hook([&seen, name](Tensor<double>& t) {
    seen.push_back({name, t.grad()});
  });
}
}  // namespace

TEST_CASE("post-accumulate hooks fire once per pass with the leaf's full gradient, in completion order",
          "[tape][hooks]") {
  // w3 is used by the first op and the last: its gradient is complete only after the first op's
  // backward, which runs after w2's. Completion order: w2, w3, w1.
  auto x = rand_input({2, 3}, 1);
  auto w1 = rand_input({3}, 2), w2 = rand_input({3}, 3), w3 = rand_input({3}, 4);
  std::vector<Seen> seen;
  record_into(seen, w1, "w1");
  record_into(seen, w2, "w2");
  record_into(seen, w3, "w3");
  auto forward = [&] { return sum(tanh(tanh(x * w1 + w3) * w2) * w3); };

  forward().backward();
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].name == "w2");
  CHECK(seen[1].name == "w3");
  CHECK(seen[2].name == "w1");
  CHECK((seen[0].grad == w2.grad()));
  CHECK((seen[1].grad == w3.grad()));
  CHECK((seen[2].grad == w1.grad()));

  // A second pass accumulates; each hook fires once more and sees the sum of both passes.
  const xt::xarray<double> first_w3 = w3.grad();
  seen.clear();
  forward().backward();
  REQUIRE(seen.size() == 3);
  CHECK(seen[1].name == "w3");
  CHECK((seen[1].grad == w3.grad()));
  CHECK(testing::allclose(seen[1].grad, xt::xarray<double>(2.0 * first_w3), 1e-14, 1e-14));
}

TEST_CASE("a post-accumulate hook waits for every use of the leaf, including repeated inputs of one op",
          "[tape][hooks]") {
  auto w = Tensor<double>::from_vector({1, 2, 3}, {3}, true);
  std::vector<Seen> seen;
  record_into(seen, w, "w");
  // w * w lists w twice in one node; exp(w) is a third use, and w itself the fourth.
  auto y = sum(w * w) + sum(exp(w)) + sum(w);
  y.backward();
  REQUIRE(seen.size() == 1);
  const xt::xarray<double> expected =
      2.0 * xt::xarray<double>({1, 2, 3}) + xt::exp(xt::xarray<double>({1, 2, 3})) + 1.0;
  CHECK(testing::allclose(seen[0].grad, expected, 1e-14, 1e-14));
  CHECK((seen[0].grad == w.grad()));
}

TEST_CASE("post-accumulate hooks: the tensor passed, leaves out of the graph, removal, backward on a leaf",
          "[tape][hooks]") {
  auto a = rand_input({2}, 5), b = rand_input({2}, 6);
  int calls_a = 0, calls_b = 0;
  bool same = false;
  auto handle_a = a.register_post_accumulate_grad_hook([&](Tensor<double>& t) {
    ++calls_a;
    same = t.same_as(a);
  });
  b.register_post_accumulate_grad_hook([&](Tensor<double>&) { ++calls_b; });

  sum(a * 2.0).backward();  // b is not reached
  CHECK(calls_a == 1);
  CHECK(same);
  CHECK(calls_b == 0);

  handle_a.remove();
  handle_a.remove();  // twice is harmless
  sum(a * b).backward();
  CHECK(calls_a == 1);
  CHECK(calls_b == 1);

  b.backward(xt::xarray<double>({1.0, 1.0}));  // a leaf as the root: its gradient is the seed
  CHECK(calls_b == 2);
}

TEST_CASE("a hook may remove itself while it runs", "[tape][hooks]") {
  auto w = rand_input({2}, 7);
  int calls = 0;
  RemovableHandle handle;
  handle = w.register_post_accumulate_grad_hook([&](Tensor<double>&) {
    ++calls;
    handle.remove();
  });
  sum(w * w).backward();
  sum(w * w).backward();
  CHECK(calls == 1);
}

TEST_CASE("post-accumulate hooks only on leaves that require grad", "[tape][hooks][errors]") {
  auto x = rand_input({2}, 8);
  auto y = x * 2.0;
  CHECK_THROWS_WITH(y.register_post_accumulate_grad_hook([](Tensor<double>&) {}),
                    Catch::Contains("non-leaf") && Catch::Contains("mul"));
  auto c = Tensor<double>::from_vector({1, 2}, {2});
  CHECK_THROWS_WITH(c.register_post_accumulate_grad_hook([](Tensor<double>&) {}),
                    Catch::Contains("doesn't require gradient"));
}

TEST_CASE("post-accumulate hooks work on float tensors", "[tape][hooks]") {
  Generator gen(9);
  auto w = Tensor<float>::uniform({4}, -1.f, 1.f, gen, true);
  xt::xarray<float> at_hook;
  w.register_post_accumulate_grad_hook([&](Tensor<float>& t) { at_hook = t.grad(); });
  sum(w * w * 3.f).backward();
  CHECK((at_hook == w.grad()));
}
