// tapegrad::checkpoint: gradients equal those of the plain function, bit for bit, dropout included.
#include <catch2/catch.hpp>
#include <memory>
#include <stdexcept>
#include <vector>

#include "tapegrad/autograd/autograd.hpp"
#include "tapegrad/autograd/caching_allocator.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::rand_input;

namespace {

// Bitwise equality of two arrays (the same ops in the same order give the same bits).
bool same_bits(const xt::xarray<double>& a, const xt::xarray<double>& b) {
  return a.shape() == b.shape() && std::equal(a.begin(), a.end(), b.begin());
}

// A block with a parameter it closes over, two uses of its input and a dropout: x [4, 3] -> [4, 3].
struct Block {
  Tensor<double> w = rand_input({3, 3}, 11);
  std::shared_ptr<Generator> gen = std::make_shared<Generator>(5);
  double p = 0.0;
  Tensor<double> operator()(const Tensor<double>& x) const {
    return x + dropout(tanh(matmul(x, w)), p, /*training=*/true, *gen) * x;
  }
};

}  // namespace

TEST_CASE("checkpoint: gradcheck through the inputs and the parameters the function closes over", "[checkpoint]") {
  Block block;
  auto x = rand_input({4, 3}, 1);
  auto f = [&](const std::vector<Tensor<double>>& in) {
    return checkpoint<double>([&](const std::vector<Tensor<double>>& a) { return block(a[0]); }, {in[0]});
  };
  CHECK(gradcheck(f, {x, block.w}));
}

TEST_CASE("checkpoint: the gradients of the plain function, bit for bit, with dropout drawing the same masks",
          "[checkpoint]") {
  Block plain, checkpointed;
  plain.p = checkpointed.p = 0.5;
  auto x1 = rand_input({4, 3}, 2), x2 = rand_input({4, 3}, 2);
  // Two blocks in a row, the second over the first's output: the generator moves between them.
  const auto y1 = plain(plain(x1)).pow(2).sum();
  const auto fn = [&](const std::vector<Tensor<double>>& a) { return checkpointed(a[0]); };
  const auto h = checkpoint<double>(fn, {x2}, {checkpointed.gen});
  const auto y2 = checkpoint<double>(fn, {h}, {checkpointed.gen}).pow(2).sum();
  REQUIRE(y1.item() == y2.item());
  const auto state_after_forward = checkpointed.gen->state().s;
  y1.backward();
  y2.backward();
  CHECK(same_bits(x1.grad(), x2.grad()));
  CHECK(same_bits(plain.w.grad(), checkpointed.w.grad()));
  // The second runs drew their masks from the forward's states, then put the generator back.
  CHECK(checkpointed.gen->state().s == state_after_forward);
  CHECK(plain.gen->state().s == state_after_forward);
}

TEST_CASE("checkpoint: a generator left out draws other masks in the second run", "[checkpoint]") {
  Block plain, checkpointed;
  plain.p = checkpointed.p = 0.5;
  auto x1 = rand_input({4, 3}, 3), x2 = rand_input({4, 3}, 3);
  plain(x1).sum().backward();
  checkpoint<double>([&](const std::vector<Tensor<double>>& a) { return checkpointed(a[0]); }, {x2}).sum().backward();
  CHECK_FALSE(same_bits(x1.grad(), x2.grad()));
}

TEST_CASE("checkpoint: keeps no activation of the function, only the output's node", "[checkpoint]") {
  Block block;
  auto x = rand_input({4, 3}, 4);
  const auto y = checkpoint<double>([&](const std::vector<Tensor<double>>& a) { return block(a[0]); }, {x});
  CHECK(y.grad_fn_name() == "checkpoint");
  CHECK(y.requires_grad());
  // The input is what the node holds: nothing between it and the output.
  NoGradGuard no_grad;
  const auto z = checkpoint<double>([&](const std::vector<Tensor<double>>& a) { return block(a[0]); }, {x});
  CHECK_FALSE(z.requires_grad());
  CHECK(same_bits(z.data(), y.data()));
}

TEST_CASE("checkpoint: the second run shares its inputs' values and drops its output's before backward",
          "[checkpoint][memory]") {
  // fn(x) = 2 x keeps nothing for its backward. The backward pass then holds x, the output's gradient and
  // x's gradient: three [rows, cols] buffers, not a copy of x or the recomputed output besides.
  if (!caching_allocator_enabled()) return;  // the counters below are the allocator's
  const std::size_t rows = 1024, cols = 2048, block = rows * cols * sizeof(float);  // 8 MiB
  Generator gen(5);
  auto x = Tensor<float>::uniform({rows, cols}, -1.0, 1.0, gen, true);
  auto loss = sum(checkpoint<float>([](const std::vector<Tensor<float>>& a) { return mul(a[0], 2.0f); }, {x}));
  empty_cache();  // the peak counter starts from what is live now: x
  const std::size_t before = cache_stats().live_bytes;
  loss.backward();
  CHECK(cache_stats().peak_live_bytes < before + 5 * block / 2);
  CHECK(x.grad()(3, 5) == 2.0f);
}

TEST_CASE("checkpoint: nested checkpoints give the plain gradients", "[checkpoint]") {
  Block inner, outer, plain_inner, plain_outer;
  inner.p = outer.p = plain_inner.p = plain_outer.p = 0.25;
  auto x1 = rand_input({4, 3}, 6), x2 = rand_input({4, 3}, 6);
  plain_outer(plain_inner(x1)).sum().backward();
  const auto nested = [&](const std::vector<Tensor<double>>& a) {
    const auto h =
        checkpoint<double>([&](const std::vector<Tensor<double>>& b) { return inner(b[0]); }, {a[0]}, {inner.gen});
    return outer(h);
  };
  checkpoint<double>(nested, {x2}, {inner.gen, outer.gen}).sum().backward();
  CHECK(same_bits(x1.grad(), x2.grad()));
  CHECK(same_bits(plain_inner.w.grad(), inner.w.grad()));
  CHECK(same_bits(plain_outer.w.grad(), outer.w.grad()));
}

TEST_CASE("checkpoint: inputs without grad, retain_graph, identity and errors", "[checkpoint]") {
  Block block;
  const auto x = Tensor<double>(rand_input({4, 3}, 7).data());  // wants no gradient
  const auto y = checkpoint<double>([&](const std::vector<Tensor<double>>& a) { return block(a[0]); }, {x}).sum();
  y.backward(/*retain_graph=*/true);
  const xt::xarray<double> once = block.w.grad();
  y.backward();  // the function runs again: its values were not kept
  CHECK(testing::allclose<double>(block.w.grad(), 2.0 * once));
  CHECK_FALSE(x.has_grad());

  // A function returning its input leaves the input's own history alone.
  auto a = rand_input({2}, 8);
  const auto b = a * 2.0;
  const auto c = checkpoint<double>([](const std::vector<Tensor<double>>& in) { return in[0]; }, {b});
  CHECK(b.grad_fn_name() != "checkpoint");
  c.sum().backward();
  CHECK(same_bits(a.grad(), xt::xarray<double>({2.0, 2.0})));

  CHECK_THROWS_WITH(checkpoint<double>({}, {x}), "checkpoint: the function is empty");
  CHECK_THROWS_WITH(checkpoint<double>([](const std::vector<Tensor<double>>& in) { return in[0]; }, {x}, {nullptr}),
                    "checkpoint: generator 0 is null");
}

TEST_CASE("checkpoint: an input written in place after the forward is recomputed from its old values", "[checkpoint]") {
  // The second run shares the input's storage; the write copies it first (the storage is saved), so the
  // gradient is that of the values the forward saw, as without checkpointing.
  auto w = rand_input({3}, 8);
  auto x = Tensor<double>::from_vector({1, 2, 3}, {3});  // no grad: the write is allowed
  const auto fn = [&](const std::vector<Tensor<double>>& a) { return mul(a[0], a[1]); };
  auto loss = sum(checkpoint<double>(fn, {x, w}));
  x += Tensor<double>::from_vector({1, 1, 1}, {3});
  loss.backward();
  CHECK(w.grad() == xt::xarray<double>({1, 2, 3}));
}
