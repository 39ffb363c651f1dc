// matmul and linear: forward against an independent xtensor-blas reference, gradcheck, zero-size dims,
// error messages. (No OpenBLAS <cblas.h> here: xtensor-blas brings its own declarations.)
#include <catch2/catch.hpp>
#include <stdexcept>
#include <tuple>
#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xbroadcast.hpp>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/caching_allocator.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::allclose;
using tapegrad::testing::check_same_bits_at_any_thread_count;
using tapegrad::testing::rand_input;

namespace {

// torch.matmul computed independently: promote 1-D operands, broadcast the batch dims with xtensor,
// multiply each pair of 2-D slices with xt::linalg::dot, then drop the promoted dims.
template <typename T>
xt::xarray<T> reference_matmul(const xt::xarray<T>& a, const xt::xarray<T>& b) {
  xt::xarray<T> pa = a, pb = b;
  if (a.dimension() == 1) pa.reshape({1, a.shape()[0]});
  if (b.dimension() == 1) pb.reshape({b.shape()[0], 1});
  const std::size_t ra = pa.dimension(), rb = pb.dimension();
  const std::size_t m = pa.shape()[ra - 2], k = pa.shape()[ra - 1], n = pb.shape()[rb - 1];
  const std::size_t batch_rank = std::max(ra, rb) - 2;
  Shape batch(batch_rank, 1);
  const std::size_t lead_a = batch_rank - (ra - 2), lead_b = batch_rank - (rb - 2);  // right-aligned
  for (std::size_t i = 0; i < batch_rank; ++i) {
    const std::size_t da = i >= lead_a ? pa.shape()[i - lead_a] : 1;
    const std::size_t db = i >= lead_b ? pb.shape()[i - lead_b] : 1;
    batch[i] = da == 1 ? db : da;
  }
  Shape full_a = batch, full_b = batch;
  full_a.insert(full_a.end(), {m, k});
  full_b.insert(full_b.end(), {k, n});
  xt::xarray<T> ba = xt::broadcast(pa, full_a);
  xt::xarray<T> bb = xt::broadcast(pb, full_b);
  const std::size_t count = numel(batch);
  ba.reshape({count, m, k});
  bb.reshape({count, k, n});
  xt::xarray<T> out = xt::zeros<T>({count, m, n});
  for (std::size_t i = 0; i < count; ++i) {
    xt::xarray<T> sa = xt::view(ba, i, xt::all(), xt::all());
    xt::xarray<T> sb = xt::view(bb, i, xt::all(), xt::all());
    xt::view(out, i, xt::all(), xt::all()) = xt::linalg::dot(sa, sb);
  }
  Shape out_shape = batch;
  if (a.dimension() != 1) out_shape.push_back(m);
  if (b.dimension() != 1) out_shape.push_back(n);
  out.reshape(out_shape);
  return out;
}

struct MatmulCase {
  const char* name;
  Shape a, b, out;
};

// Every path through matmul: vector promotion on either side, plain 2-D, batched, broadcast batch
// dims, a matrix against a batch, and a batch against one matrix (the folded single-GEMM path).
const std::vector<MatmulCase> kCases = {
    {"1-D @ 1-D", {4}, {4}, {}},
    {"2-D @ 1-D", {3, 4}, {4}, {3}},
    {"1-D @ 2-D", {4}, {4, 5}, {5}},
    {"1-D @ 3-D", {4}, {2, 4, 5}, {2, 5}},
    {"3-D @ 1-D", {2, 3, 4}, {4}, {2, 3}},
    {"2-D @ 2-D", {3, 4}, {4, 5}, {3, 5}},
    {"batched", {2, 3, 4}, {2, 4, 5}, {2, 3, 5}},
    {"broadcast batch dims", {2, 1, 3, 4}, {5, 4, 6}, {2, 5, 3, 6}},
    {"2-D @ batched", {4, 3}, {2, 3, 5}, {2, 4, 5}},
    {"batched @ 2-D (folded)", {2, 3, 4}, {4, 5}, {2, 3, 5}},
    {"batch of one @ batched", {1, 3, 4}, {2, 4, 5}, {2, 3, 5}},
    {"batched @ batch of one", {2, 3, 4}, {1, 4, 5}, {2, 3, 5}},
};

template <typename T>
Tensor<T> random_tensor(const Shape& shape, std::uint64_t seed) {
  Generator gen(seed);
  return Tensor<T>::uniform(shape, T(-1), T(1), gen);
}

// x @ weight^T + bias, independently, for x of any rank >= 1.
xt::xarray<double> reference_linear(const xt::xarray<double>& x, const xt::xarray<double>& w,
                                    const xt::xarray<double>* bias) {
  const std::size_t in = w.shape()[1], out = w.shape()[0];
  xt::xarray<double> x2 = x;
  x2.reshape({x.size() / in, in});
  xt::xarray<double> wt = xt::transpose(w);
  xt::xarray<double> y = xt::linalg::dot(x2, wt);
  if (bias) y += *bias;
  Shape shape(x.shape().begin(), x.shape().end());
  shape.back() = out;
  y.reshape(shape);
  return y;
}

}  // namespace

TEMPLATE_TEST_CASE("matmul forward matches an xtensor-blas reference", "[matmul]", float, double) {
  const double rtol = std::is_same<TestType, float>::value ? 1e-5 : 1e-12;
  const double atol = std::is_same<TestType, float>::value ? 1e-5 : 1e-12;
  std::uint64_t seed = 1;
  for (const auto& c : kCases) {
    INFO(c.name << ": " << format_shape(c.a) << " @ " << format_shape(c.b));
    auto a = random_tensor<TestType>(c.a, seed++);
    auto b = random_tensor<TestType>(c.b, seed++);
    auto y = matmul(a, b);
    CHECK(y.shape() == c.out);
    CHECK(allclose(y.data(), reference_matmul(a.data(), b.data()), rtol, atol));
  }
}

TEST_CASE("matmul forward on hand-computed numbers", "[matmul]") {
  auto a = TensorD::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  auto b = TensorD::from_vector({7, 8, 9, 10, 11, 12}, {3, 2});
  CHECK(matmul(a, b).data() == xt::xarray<double>({{58, 64}, {139, 154}}));
  auto v = TensorD::from_vector({1, 0, -1}, {3});
  CHECK(matmul(v, v).shape() == Shape{});
  CHECK(matmul(v, v).item() == 2);
  CHECK(matmul(a, v).data() == xt::xarray<double>({-2, -2}));
  CHECK(matmul(v, b).data() == xt::xarray<double>({-4, -4}));
}

TEST_CASE("gradcheck: matmul on every shape path", "[matmul]") {
  std::uint64_t seed = 50;
  for (const auto& c : kCases) {
    INFO(c.name << ": " << format_shape(c.a) << " @ " << format_shape(c.b));
    auto a = rand_input(c.a, seed++);
    auto b = rand_input(c.b, seed++);
    const auto f = [](const std::vector<TensorD>& in) { return matmul(in[0], in[1]); };
    CHECK_GRADCHECK(f, (std::vector<TensorD>{a, b}));
    CHECK_GRADCHECK(f, (std::vector<TensorD>{a, TensorD(b.data())}));
    CHECK_GRADCHECK(f, (std::vector<TensorD>{TensorD(a.data()), b}));
  }
  // One tensor on both sides: its gradient sums both uses.
  auto x = rand_input({3, 3}, 99);
  CHECK_GRADCHECK([](const std::vector<TensorD>& in) { return matmul(in[0], in[0]); }, std::vector<TensorD>{x});
}

TEST_CASE("matmul backward in float matches double", "[matmul]") {
  auto ad = rand_input({2, 1, 3, 4}, 7);
  auto bd = rand_input({5, 4, 6}, 8);
  Tensor<float> af(xt::xarray<float>(xt::cast<float>(ad.data())), true);
  Tensor<float> bf(xt::xarray<float>(xt::cast<float>(bd.data())), true);
  auto yd = matmul(ad, bd);
  auto yf = matmul(af, bf);
  const xt::xarray<double> g = random_tensor<double>(yd.shape(), 9).data();
  yd.backward(g);
  yf.backward(xt::xarray<float>(xt::cast<float>(g)));
  CHECK(allclose(xt::xarray<double>(xt::cast<double>(af.grad())), ad.grad(), 1e-4, 1e-5));
  CHECK(allclose(xt::xarray<double>(xt::cast<double>(bf.grad())), bd.grad(), 1e-4, 1e-5));
}

TEMPLATE_TEST_CASE("matmul with zero-size dims", "[matmul]", float, double) {
  using T = TestType;
  SECTION("empty rows") {
    auto y = matmul(Tensor<T>::zeros({0, 3}), Tensor<T>::ones({3, 4}));
    CHECK(y.shape() == Shape{0, 4});
  }
  SECTION("empty inner dim gives zeros") {
    auto a = Tensor<T>::zeros({2, 0}, true);
    auto b = Tensor<T>::zeros({0, 3}, true);
    auto y = matmul(a, b);
    CHECK(y.shape() == Shape{2, 3});
    CHECK(y.to_vector() == std::vector<T>(6, T(0)));
    y.backward(xt::xarray<T>(xt::ones<T>({2, 3})));
    CHECK(a.grad().shape() == std::vector<std::size_t>{2, 0});
    CHECK(b.grad().shape() == std::vector<std::size_t>{0, 3});
  }
  SECTION("empty columns") { CHECK(matmul(Tensor<T>::ones({2, 3}), Tensor<T>::ones({3, 0})).shape() == Shape{2, 0}); }
  SECTION("empty batch, folded and not") {
    CHECK(matmul(Tensor<T>::ones({0, 2, 3}), Tensor<T>::ones({3, 4})).shape() == Shape{0, 2, 4});
    CHECK(matmul(Tensor<T>::ones({0, 2, 3}), Tensor<T>::ones({1, 3, 4})).shape() == Shape{0, 2, 4});
    CHECK(matmul(Tensor<T>::ones({2, 3}), Tensor<T>::ones({0, 3, 4})).shape() == Shape{0, 2, 4});
  }
  SECTION("empty rows still give the other operand a zero gradient") {
    auto a = Tensor<T>::zeros({0, 3}, true);
    auto b = Tensor<T>::ones({3, 4}, true);
    auto y = matmul(a, b);
    y.backward(xt::xarray<T>(xt::zeros<T>({0, 4})));
    CHECK(b.grad() == xt::xarray<T>(xt::zeros<T>({3, 4})));
  }
  SECTION("empty vectors dot to 0") {
    auto y = matmul(Tensor<T>::zeros({0}), Tensor<T>::zeros({0}));
    CHECK(y.shape() == Shape{});
    CHECK(y.item() == T(0));
  }
}

TEST_CASE("matmul error messages", "[matmul]") {
  CHECK_THROWS_AS(matmul(TensorD::zeros({2, 3}), TensorD::zeros({4, 5})), ShapeError);
  CHECK_THROWS_AS(matmul(TensorD::zeros({2, 3}), TensorD::zeros({4, 5})), std::invalid_argument);
  CHECK_THROWS_WITH(matmul(TensorD::zeros({2, 3}), TensorD::zeros({4, 5})),
                    "matmul: cannot multiply [2, 3] by [4, 5] (3 != 4)");
  CHECK_THROWS_WITH(matmul(TensorF::zeros({3}), TensorF::zeros({4})), "matmul: cannot multiply [3] by [4] (3 != 4)");
  CHECK_THROWS_WITH(matmul(TensorD::zeros({2, 3}), TensorD::zeros({2})),
                    "matmul: cannot multiply [2, 3] by [2] (3 != 2)");
  CHECK_THROWS_WITH(matmul(TensorD::zeros({5, 2, 3}), TensorD::zeros({4, 1})),
                    "matmul: cannot multiply [5, 2, 3] by [4, 1] (3 != 4)");
  CHECK_THROWS_AS(matmul(TensorD::scalar(1), TensorD::zeros({3})), std::invalid_argument);
  CHECK_THROWS_WITH(matmul(TensorD::scalar(1), TensorD::zeros({3})),
                    "matmul: both operands need at least one dim, got [] and [3]");
  CHECK_THROWS_WITH(matmul(TensorD::zeros({3}), TensorD::scalar(1)),
                    "matmul: both operands need at least one dim, got [3] and []");
  CHECK_THROWS_AS(matmul(TensorD::zeros({2, 3, 4}), TensorD::zeros({3, 4, 5})), std::invalid_argument);
  CHECK_THROWS_WITH(matmul(TensorD::zeros({2, 3, 4}), TensorD::zeros({3, 4, 5})),
                    "matmul: batch dims [2] of [2, 3, 4] and [3] of [3, 4, 5] cannot be broadcast");
}

TEST_CASE("matmul records one node named matmul, only when needed", "[matmul]") {
  auto a = rand_input({2, 3}, 1);
  auto b = TensorD::ones({3, 2});
  CHECK(matmul(a, b).grad_fn_name() == "matmul");
  CHECK_FALSE(matmul(TensorD(a.data()), b).requires_grad());
  NoGradGuard guard;
  CHECK_FALSE(matmul(a, b).requires_grad());
}

// ---------------------------------------------------------------------------------------------------
// linear

TEST_CASE("linear forward matches x W^T + b", "[matmul]") {
  auto w = random_tensor<double>({4, 3}, 20);
  auto bias = random_tensor<double>({4}, 21);
  for (const Shape& xs : {Shape{3}, Shape{5, 3}, Shape{2, 5, 3}}) {
    INFO("input " << format_shape(xs));
    auto x = random_tensor<double>(xs, 22);
    auto y = linear(x, w, bias);
    Shape expected = xs;
    expected.back() = 4;
    CHECK(y.shape() == expected);
    CHECK(allclose(y.data(), reference_linear(x.data(), w.data(), &bias.data()), 1e-12, 1e-12));
    auto y0 = linear(x, w);
    CHECK(allclose(y0.data(), reference_linear(x.data(), w.data(), nullptr), 1e-12, 1e-12));
    // And it agrees with matmul against the transposed weight.
    auto wt = TensorD(xt::xarray<double>(xt::transpose(w.data())));
    CHECK(allclose(y0.data(), matmul(x, wt).data(), 1e-12, 1e-12));
  }
  auto xf = TensorF::from_vector({1, 2}, {1, 2});
  auto wf = TensorF::from_vector({1, 0, 0, 1, 1, 1}, {3, 2});
  auto bf = TensorF::from_vector({10, 20, 30}, {3});
  CHECK(linear(xf, wf, bf).data() == xt::xarray<float>({{11, 22, 33}}));
  CHECK(linear(xf, wf).data() == xt::xarray<float>({{1, 2, 3}}));
}

TEST_CASE("gradcheck: linear with and without bias on 1-D, 2-D and 3-D inputs", "[matmul]") {
  std::uint64_t seed = 30;
  for (const Shape& xs : {Shape{3}, Shape{5, 3}, Shape{2, 5, 3}}) {
    INFO("input " << format_shape(xs));
    auto x = rand_input(xs, seed++);
    auto w = rand_input({4, 3}, seed++);
    auto b = rand_input({4}, seed++);
    CHECK_GRADCHECK([](const std::vector<TensorD>& in) { return linear(in[0], in[1], in[2]); },
                    (std::vector<TensorD>{x, w, b}));
    CHECK_GRADCHECK([](const std::vector<TensorD>& in) { return linear(in[0], in[1]); }, (std::vector<TensorD>{x, w}));
    // Only some inputs require grad.
    CHECK_GRADCHECK([](const std::vector<TensorD>& in) { return linear(in[0], in[1], in[2]); },
                    (std::vector<TensorD>{TensorD(x.data()), w, TensorD(b.data())}));
    CHECK_GRADCHECK([](const std::vector<TensorD>& in) { return linear(in[0], in[1], in[2]); },
                    (std::vector<TensorD>{x, TensorD(w.data()), b}));
  }
}

TEST_CASE("linear with zero-size dims", "[matmul]") {
  // torch: F.linear(torch.zeros(3, 0), torch.zeros(4, 0), torch.arange(4.)) is the bias on every row.
  auto x = TensorD::zeros({3, 0}, true);
  auto w = TensorD::zeros({4, 0}, true);
  auto b = TensorD::from_vector({0, 1, 2, 3}, {4}, true);
  auto y = linear(x, w, b);
  CHECK(y.data() == xt::xarray<double>({{0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}}));
  y.backward(xt::xarray<double>(xt::ones<double>({3, 4})));
  CHECK(b.grad() == xt::xarray<double>({3, 3, 3, 3}));
  CHECK(x.grad().size() == 0);
  CHECK(linear(TensorD::zeros({3, 0}), TensorD::zeros({4, 0})).data() == xt::xarray<double>(xt::zeros<double>({3, 4})));
  auto empty_rows = linear(TensorD::zeros({0, 3}), TensorD::ones({4, 3}), TensorD::ones({4}));
  CHECK(empty_rows.shape() == Shape{0, 4});
  auto w2 = TensorD::ones({4, 3}, true);
  linear(TensorD::zeros({2, 0, 3}), w2).backward(xt::xarray<double>(xt::zeros<double>({2, 0, 4})));
  CHECK(w2.grad() == xt::xarray<double>(xt::zeros<double>({4, 3})));
}

TEST_CASE("linear error messages", "[matmul]") {
  CHECK_THROWS_AS(linear(TensorD::zeros({2, 3}), TensorD::zeros({4, 5})), ShapeError);
  CHECK_THROWS_AS(linear(TensorD::zeros({2, 3}), TensorD::zeros({4, 5})), std::invalid_argument);
  CHECK_THROWS_WITH(linear(TensorD::zeros({2, 3}), TensorD::zeros({4, 5})),
                    "linear: input [2, 3] does not fit weight [4, 5] (expected weight [out_features, 3])");
  CHECK_THROWS_WITH(linear(TensorD::zeros({2, 3}), TensorD::zeros({3})),
                    "linear: input [2, 3] does not fit weight [3] (expected weight [out_features, 3])");
  CHECK_THROWS_AS(linear(TensorD::scalar(1), TensorD::zeros({4, 1})), std::invalid_argument);
  CHECK_THROWS_WITH(linear(TensorD::zeros({2, 3}), TensorD::zeros({4, 3}), TensorD::zeros({3})),
                    "linear: bias [3] does not fit weight [4, 3] (expected [4])");
  CHECK_THROWS_AS(linear(TensorD::zeros({2, 3}), TensorD::zeros({4, 3}), TensorD::zeros({1, 4})),
                  std::invalid_argument);
}

TEST_CASE("linear and its gradients give the same bits at any thread count", "[matmul]") {
  // A language model's shapes, whose products are cut by columns ([tokens, d] x [vocab, d]^T) and by
  // rows (the weight gradient [vocab, tokens] x [tokens, d]): OpenBLAS's value for an element depends
  // on the shape of the call that computes it, so the cut must not depend on the thread count.
  for (const auto& [rows, in, out] : {std::tuple<std::size_t, std::size_t, std::size_t>{1200, 128, 2000},
                                      {1200, 128, 384},
                                      {333, 64, 4001},
                                      {5000, 32, 48}}) {
    INFO("x [" << rows << ", " << in << "], weight [" << out << ", " << in << "]");
    Generator gen(7);
    Tensor<float> x = Tensor<float>::uniform({rows, in}, -1.0f, 1.0f, gen, true);
    Tensor<float> w = Tensor<float>::uniform({out, in}, -1.0f, 1.0f, gen, true);
    Tensor<float> b = Tensor<float>::uniform({out}, -1.0f, 1.0f, gen, true);
    const Tensor<float> g = Tensor<float>::uniform({rows, out}, -1.0f, 1.0f, gen);
    check_same_bits_at_any_thread_count([&] {
      x.zero_grad();
      w.zero_grad();
      b.zero_grad();
      const Tensor<float> y = linear(x, w, b);
      sum(mul(y, g)).backward();
      return std::vector<xt::xarray<float>>{y.data(), x.grad(), w.grad(), b.grad()};
    });
  }
}

TEST_CASE("a feed-forward block's backward holds one [rows, F] buffer at a time", "[matmul][memory]") {
  // linear2(dropout(linear_activation(x, ReLU))): after the forward only dropout's output h ([rows, F],
  // linear2's input) is held. Its backward releases h once dW2 has read it, before dh is allocated, and
  // dropout and ReLU write their gradients over dh: the step needs no second [rows, F] buffer.
  if (!caching_allocator_enabled()) return;  // the counters below are the allocator's
  const std::size_t rows = 2048, d = 64, F = 1024;
  const std::size_t block = rows * F * sizeof(float);  // 8 MiB
  Generator gen(7);
  const auto input = [&gen](const Shape& shape) { return Tensor<float>::uniform(shape, -1.0, 1.0, gen, true); };
  auto x = input({rows, d}), w1 = input({F, d}), b1 = input({F}), w2 = input({d, F}), b2 = input({d});
  Tensor<float> loss;
  {
    Generator dropout_gen(3);
    loss = sum(linear(dropout(linear_activation(x, w1, b1, Activation::ReLU), 0.1, true, dropout_gen), w2, b2));
  }
  empty_cache();  // the peak counter starts from what is live now: h and the small tensors
  const std::size_t before = cache_stats().live_bytes;
  loss.backward();
  CHECK(cache_stats().peak_live_bytes < before + block / 2);
  CHECK(x.has_grad());
  CHECK(w1.has_grad());
}
