// tapegrad::autocast (autograd/autocast.hpp): the scope (enables, nests, restores, also on exceptions,
// per thread), what it changes (float products only, decided at the forward) and what it leaves
// alone (double tensors, every op off the list, bit for bit), and a Transformer layer's gradients
// under autocast against float32's. The ops' values against torch and the exact bfloat16-operand
// reference are in test_parity_autocast.cpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>
#include <xtensor/xmanipulation.hpp>

#include "tapegrad/autograd/autocast.hpp"
#include "tapegrad/autograd/blas.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/nn/transformer.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::check_same_bits_at_any_thread_count;

namespace {

constexpr double kFloatUnit = 0x1p-24;  // float's unit roundoff

Tensor<float> uniform(const Shape& shape, std::uint64_t seed, bool requires_grad = true) {
  Generator gen(seed);
  return Tensor<float>::uniform(shape, -1.0f, 1.0f, gen, requires_grad);
}

// Bit-for-bit equality (NaN payloads and signed zeros included).
template <typename T>
bool same_bits(const xt::xarray<T>& a, const xt::xarray<T>& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// x rounded to bfloat16, in double (exact).
xt::xarray<double> rounded(const xt::xarray<float>& x) {
  xt::xarray<double> out = xt::xarray<double>::from_shape(x.shape());
  for (std::size_t i = 0; i < x.size(); ++i) out.data()[i] = round_to_bfloat16(x.data()[i]);
  return out;
}

xt::xarray<double> transposed(const xt::xarray<double>& x) { return xt::transpose(x); }

// The exact product a b of 2-D double arrays (b given as [k, n]) and the float32 error bound of any
// kernel summing its k exact terms (the operands are bfloat16 values, whose products float holds
// exactly): gamma_(k+2) sum_i |a_i b_i|, Higham's bound for every order of summation, plus two for
// alpha and beta.
std::pair<xt::xarray<double>, xt::xarray<double>> product_and_bound(const xt::xarray<double>& a,
                                                                    const xt::xarray<double>& b) {
  const std::size_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  xt::xarray<double> c = xt::zeros<double>({m, n}), bound = xt::zeros<double>({m, n});
  const double gamma = (k + 2) * kFloatUnit / (1 - (k + 2) * kFloatUnit);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double s = 0, mag = 0;
      for (std::size_t l = 0; l < k; ++l) {
        s += a(i, l) * b(l, j);
        mag += std::abs(a(i, l) * b(l, j));
      }
      c(i, j) = s;
      bound(i, j) = gamma * mag;
    }
  return {c, bound};
}

// The largest |got - want| / bound (0 where equal).
double worst_ratio(const xt::xarray<float>& got, const xt::xarray<double>& want, const xt::xarray<double>& bound) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(got.data()[i] - want.data()[i]);
    if (d != 0) worst = std::max(worst, d / bound.data()[i]);
  }
  return worst;
}

// ||a - b|| / ||b|| in double.
double relative_error(const xt::xarray<float>& a, const xt::xarray<float>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a.data()[i]) - b.data()[i];
    num += d * d;
    den += static_cast<double>(b.data()[i]) * b.data()[i];
  }
  return std::sqrt(num / den);
}

}  // namespace

TEST_CASE("autocast turns bfloat16 products on in its scope and restores the state it found", "[autocast]") {
  REQUIRE_FALSE(is_autocast_enabled());
  CHECK(blas::autocast_precision<float>() == blas::Precision::Float32);
  {
    autocast outer;
    CHECK(is_autocast_enabled());
    CHECK(blas::autocast_precision<float>() == blas::Precision::BFloat16);
    CHECK(blas::autocast_precision<double>() == blas::Precision::Float32);  // double is never cast
    {
      autocast inner;  // nested: still on, and still on after it ends
      CHECK(is_autocast_enabled());
    }
    CHECK(is_autocast_enabled());
    {
      autocast off(false);  // torch.autocast(enabled=False) inside: off here, on again after
      CHECK_FALSE(is_autocast_enabled());
      CHECK(blas::autocast_precision<float>() == blas::Precision::Float32);
      {
        autocast on_again;
        CHECK(is_autocast_enabled());
      }
      CHECK_FALSE(is_autocast_enabled());
    }
    CHECK(is_autocast_enabled());
  }
  CHECK_FALSE(is_autocast_enabled());
  // A scope restores what it found, also a state set by hand.
  set_autocast_enabled(true);
  {
    autocast off(false);
    CHECK_FALSE(is_autocast_enabled());
  }
  CHECK(is_autocast_enabled());
  set_autocast_enabled(false);
  {
    autocast off(false);
    CHECK_FALSE(is_autocast_enabled());
  }
  CHECK_FALSE(is_autocast_enabled());
}

TEST_CASE("autocast scopes restore the state when an exception leaves them", "[autocast]") {
  REQUIRE_FALSE(is_autocast_enabled());
  CHECK_THROWS_AS(
      [] {
        autocast guard;
        throw std::runtime_error("in the scope");
      }(),
      std::runtime_error);
  CHECK_FALSE(is_autocast_enabled());
  {
    autocast outer;
    bool thrown = false;
    try {
      autocast off(false);
      autocast on(true);
      // A failing op inside: the shapes do not fit.
      (void)matmul(Tensor<float>(xt::xarray<float>::from_shape({2, 3})),
                   Tensor<float>(xt::xarray<float>::from_shape({4, 5})));
    } catch (const ShapeError&) {
      thrown = true;
      CHECK(is_autocast_enabled());  // both inner scopes unwound: outer's state
    }
    CHECK(thrown);
    CHECK(is_autocast_enabled());
  }
  CHECK_FALSE(is_autocast_enabled());
}

TEST_CASE("autocast is per thread: other threads run in float32", "[autocast]") {
  const Tensor<float> a = uniform({24, 40}, 1, false), b = uniform({40, 16}, 2, false);
  const xt::xarray<float> f32 = matmul(a, b).data();
  xt::xarray<float> bf16_here, in_thread;
  bool seen_in_thread = true;
  {
    autocast guard;
    bf16_here = matmul(a, b).data();
    std::thread other([&] {
      seen_in_thread = is_autocast_enabled();
      in_thread = matmul(a, b).data();
    });
    other.join();
    CHECK(is_autocast_enabled());
  }
  CHECK_FALSE(seen_in_thread);
  CHECK(same_bits(in_thread, f32));
  CHECK_FALSE(same_bits(bf16_here, f32));
  // A thread that turns autocast on leaves this one off; its products are bfloat16 ones.
  xt::xarray<float> from_thread;
  std::thread on([&] {
    autocast guard;
    from_thread = matmul(a, b).data();
  });
  on.join();
  CHECK_FALSE(is_autocast_enabled());
  CHECK(same_bits(from_thread, bf16_here));
  CHECK(same_bits(matmul(a, b).data(), f32));
}

TEST_CASE("has_native_bfloat16 reports the kernel, and ONEDNN_MAX_CPU_ISA limits it", "[autocast]") {
  const auto& info = blas::backend_info();
  INFO("float: " << info.float_kernel << "; bfloat16: " << info.bfloat16_kernel);
  CHECK(has_native_bfloat16() == info.native_bfloat16);
  const char* isa = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (isa && (std::string(isa) == "AVX2" || std::string(isa) == "avx2")) CHECK_FALSE(has_native_bfloat16());
  if (!has_native_bfloat16()) CHECK(info.bfloat16_kernel.find("float kernel on bf16-rounded") != std::string::npos);
}

TEST_CASE("double tensors are never cast: the same bits inside and outside autocast", "[autocast]") {
  using TD = Tensor<double>;
  const auto run = [&](bool mixed) {
    Generator g(5);
    TD a = TD::uniform({2, 3, 5, 16}, -1, 1, g, true), b = TD::uniform({3, 16, 7}, -1, 1, g, true);
    TD x = TD::uniform({4, 6, 16}, -1, 1, g, true), w = TD::uniform({12, 16}, -1, 1, g, true);
    TD bias = TD::uniform({12}, -1, 1, g, true);
    TD q = TD::uniform({2, 2, 6, 8}, -1, 1, g, true), k = TD::uniform({2, 2, 6, 8}, -1, 1, g, true);
    TD v = TD::uniform({2, 2, 6, 8}, -1, 1, g, true);
    TD loss;
    {
      autocast guard(mixed);
      loss = add(add(sum(matmul(a, b)), sum(linear_activation(x, w, bias, Activation::GELU))),
                 add(sum(linear(x, w, bias)), sum(mul(scaled_dot_product_attention(q, k, v, {}, 0.0, true).first,
                                                      scaled_dot_product_attention(q, k, v).first))));
    }
    loss.backward();
    return std::vector<xt::xarray<double>>{loss.data(), a.grad(), b.grad(), x.grad(), w.grad(),
                                           bias.grad(), q.grad(), k.grad(), v.grad()};
  };
  const auto plain = run(false), mixed = run(true);
  for (std::size_t i = 0; i < plain.size(); ++i) {
    INFO("result " << i);
    CHECK(same_bits(mixed[i], plain[i]));
  }
}

TEST_CASE("the precision is taken at the forward: a backward outside the scope stays bfloat16", "[autocast]") {
  // matmul and linear recorded under autocast, backward run after the scope (as training does) and
  // inside it: the same bits, and the gradients are the products of the bfloat16-rounded upstream
  // gradient and operands, to float32 accumulation (bound of product_and_bound); float32 products
  // miss that reference by far more than the bound.
  const Tensor<float> g = uniform({12, 10}, 9, false);
  const auto grads = [&](bool mixed_forward, bool mixed_backward, bool linear_op) {
    Tensor<float> a = uniform({12, 48}, 7), b = uniform({48, 10}, 8);
    Tensor<float> w = Tensor<float>(xt::transpose(b.data()), true);  // linear's weight [10, 48]
    Tensor<float> y;
    {
      autocast forward(mixed_forward);
      y = linear_op ? linear(a, w) : matmul(a, b);
    }
    {
      autocast backward(mixed_backward);
      y.backward(g.data());
    }
    return std::make_tuple(xt::xarray<float>(y.data()), xt::xarray<float>(a.grad()),
                           linear_op ? xt::xarray<float>(xt::transpose(w.grad())) : xt::xarray<float>(b.grad()));
  };
  const xt::xarray<double> ra = rounded(uniform({12, 48}, 7, false).data());
  const xt::xarray<double> rb = rounded(uniform({48, 10}, 8, false).data());
  const xt::xarray<double> rg = rounded(g.data());
  const auto [y_ref, y_bound] = product_and_bound(ra, rb);
  const auto [da_ref, da_bound] = product_and_bound(rg, transposed(rb));
  const auto [db_ref, db_bound] = product_and_bound(transposed(ra), rg);
  for (const bool linear_op : {false, true}) {
    INFO((linear_op ? "linear" : "matmul"));
    const auto [y, da, db] = grads(true, false, linear_op);
    const auto [y_in, da_in, db_in] = grads(true, true, linear_op);
    CHECK(same_bits(da, da_in));
    CHECK(same_bits(db, db_in));
    CHECK(worst_ratio(y, y_ref, y_bound) <= 1);
    CHECK(worst_ratio(da, da_ref, da_bound) <= 1);
    CHECK(worst_ratio(db, db_ref, db_bound) <= 1);
    // Recorded in float32, a backward inside autocast stays float32: the same bits as without it.
    const auto [y32, da32, db32] = grads(false, false, linear_op);
    const auto [y32_in, da32_in, db32_in] = grads(false, true, linear_op);
    CHECK(same_bits(da32, da32_in));
    CHECK(same_bits(db32, db32_in));
    CHECK(worst_ratio(y32, y_ref, y_bound) > 100);
    CHECK(worst_ratio(da32, da_ref, da_bound) > 100);
    CHECK(worst_ratio(db32, db_ref, db_bound) > 100);
  }
}

TEST_CASE("matmul under autocast on every shape path is the bfloat16-operand product", "[autocast]") {
  // test_matmul.cpp's shape paths (vector promotion, broadcast and folded batches) and some the
  // bfloat16 kernels may treat apart (k = 1, one row or column, odd sizes): output and gradients against
  // the same graph in double on the rounded operands and upstream gradient, to gamma_(K+2) of the same
  // graph on their absolute values (K bounds every sum: the inner size times any broadcast batch).
  struct Case {
    Shape a, b;
  };
  const std::vector<Case> cases = {{{4}, {4}},
                                   {{3, 4}, {4}},
                                   {{4}, {4, 5}},
                                   {{4}, {2, 4, 5}},
                                   {{2, 3, 4}, {4}},
                                   {{3, 4}, {4, 5}},
                                   {{2, 3, 4}, {2, 4, 5}},
                                   {{2, 1, 3, 4}, {5, 4, 6}},
                                   {{4, 3}, {2, 3, 5}},
                                   {{2, 3, 4}, {4, 5}},
                                   {{1, 3, 4}, {2, 4, 5}},
                                   {{2, 3, 4}, {1, 4, 5}},
                                   {{7, 1}, {1, 9}},
                                   {{1, 300}, {300, 1}},
                                   {{300}, {300}},
                                   {{3, 37, 129}, {129, 65}},
                                   {{65, 17}, {3, 17, 33}}};
  std::uint64_t seed = 100;
  for (const Case& c : cases) {
    INFO(format_shape(c.a) << " @ " << format_shape(c.b));
    Tensor<float> a = uniform(c.a, seed++), b = uniform(c.b, seed++);
    Tensor<float> y;
    {
      autocast guard;
      y = matmul(a, b);
    }
    const xt::xarray<float> g = uniform(y.shape(), seed++, false).data();
    y.backward(g);
    const auto exact = [&](bool absolute) {
      const auto prepare = [absolute](const xt::xarray<float>& x) {
        xt::xarray<double> r = rounded(x);
        return absolute ? xt::xarray<double>(xt::abs(r)) : r;
      };
      Tensor<double> ad(prepare(a.data()), true), bd(prepare(b.data()), true);
      Tensor<double> yd = matmul(ad, bd);
      yd.backward(prepare(g));
      return std::vector<xt::xarray<double>>{yd.data(), ad.grad(), bd.grad()};
    };
    const auto want = exact(false), size = exact(true);
    // Each sum runs over the inner size, or over m or n times the batches a gradient is summed over.
    const std::size_t inner = c.a.back(), m = c.a.size() > 1 ? c.a[c.a.size() - 2] : 1;
    const std::size_t n = c.b.size() > 1 ? c.b.back() : 1, batches = y.numel() / (m * n);
    const std::size_t k = std::max({inner, m, n}) * batches;
    const double gamma = (k + 2) * kFloatUnit / (1 - (k + 2) * kFloatUnit);
    const std::vector<xt::xarray<float>> got = {y.data(), a.grad(), b.grad()};
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("result " << i);
      CHECK(worst_ratio(got[i], want[i], gamma * size[i]) <= 1);
    }
  }
}

TEST_CASE("linear_activation over several blocks of rows is the bfloat16-operand product", "[autocast]") {
  // 700 rows of 96 outputs run as blocks of 336, 336 and 28 rows, each a product on its slice of the
  // bfloat16 copy of x: y = relu(bf16(x) bf16(W)^T + b) and, with the mask tapegrad applied,
  // dz = g [y > 0], dx = bf16(dz) bf16(W) and dW = bf16(dz)^T bf16(x), to float32 accumulation.
  const std::size_t rows = 700, in = 64, out = 96;
  Tensor<float> x = uniform({rows, in}, 21), w = uniform({out, in}, 22), b = uniform({out}, 23);
  const Tensor<float> g = uniform({rows, out}, 24, false);
  Tensor<float> y;
  {
    autocast guard;
    y = linear_activation(x, w, b, Activation::ReLU);
  }
  y.backward(g.data());
  const xt::xarray<double> rx = rounded(x.data()), rw = rounded(w.data());
  auto [z_ref, z_bound] = product_and_bound(rx, transposed(rw));
  const double gamma = (in + 2) * kFloatUnit / (1 - (in + 2) * kFloatUnit);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < out; ++j) {
      z_ref(i, j) = std::max(0.0, z_ref(i, j) + b.data()(j));  // relu is 1-Lipschitz: the same bound
      z_bound(i, j) += gamma * std::abs(b.data()(j));
    }
  CHECK(worst_ratio(y.data(), z_ref, z_bound) <= 1);
  xt::xarray<float> dz = g.data();
  for (std::size_t i = 0; i < dz.size(); ++i)
    if (!(y.data().data()[i] > 0)) dz.data()[i] = 0;
  const xt::xarray<double> rdz = rounded(dz);
  const auto [dx_ref, dx_bound] = product_and_bound(rdz, rw);
  const auto [dw_ref, dw_bound] = product_and_bound(transposed(rdz), rx);
  CHECK(worst_ratio(x.grad(), dx_ref, dx_bound) <= 1);
  CHECK(worst_ratio(w.grad(), dw_ref, dw_bound) <= 1);
  // The bias gradient is a float sum of dz (not rounded: no product), to gamma_rows sum |dz|.
  xt::xarray<double> db_ref = xt::zeros<double>({out}), db_bound = xt::zeros<double>({out});
  const double gamma_rows = rows * kFloatUnit / (1 - rows * kFloatUnit);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < out; ++j) {
      db_ref(j) += dz(i, j);
      db_bound(j) += gamma_rows * std::abs(dz(i, j));
    }
  CHECK(worst_ratio(b.grad(), db_ref, db_bound) <= 1);
}

TEST_CASE("attention's backward runs in the precision of its forward", "[autocast]") {
  // The output and the returned weights (need_weights, their own backward), each with an upstream
  // gradient: recorded under autocast, the same bits whether backward runs inside the scope or after
  // it; recorded in float32, float32's bits either way. The two differ, by bfloat16 rounding (2^-5 in
  // norm allows for the few roundings on each path, ~2^-8 each).
  const Tensor<float> g = uniform({2, 2, 9, 16}, 4, false), gw = uniform({2, 2, 9, 9}, 5, false);
  const auto grads = [&](bool mixed_forward, bool mixed_backward) {
    Tensor<float> q = uniform({2, 2, 9, 16}, 1), k = uniform({2, 2, 9, 16}, 2), v = uniform({2, 2, 9, 16}, 3);
    Tensor<float> y, w;
    {
      autocast forward(mixed_forward);
      std::tie(y, w) = scaled_dot_product_attention(q, k, v, {}, 0.0, true, std::nullopt, /*need_weights=*/true);
    }
    {
      autocast backward(mixed_backward);
      add(sum(mul(y, g)), sum(mul(w, gw))).backward();
    }
    return std::vector<xt::xarray<float>>{y.data(), w.data(), q.grad(), k.grad(), v.grad()};
  };
  const auto mixed_out = grads(true, false), mixed_in = grads(true, true);
  const auto plain_out = grads(false, false), plain_in = grads(false, true);
  for (std::size_t i = 0; i < mixed_out.size(); ++i) {
    INFO("result " << i);
    CHECK(same_bits(mixed_out[i], mixed_in[i]));
    CHECK(same_bits(plain_out[i], plain_in[i]));
    CHECK_FALSE(same_bits(mixed_out[i], plain_out[i]));
    CHECK(relative_error(mixed_out[i], plain_out[i]) < 0x1p-5);
  }
}

TEST_CASE("autocast products give the same bits at any thread count", "[autocast]") {
  // Shapes large enough for gemm to cut the products into blocks (by rows and by columns), and an
  // attention with many (batch, head) pairs: the thread count must not move a bit, in bfloat16 as
  // in float32 (tests/autograd/test_matmul.cpp checks float32).
  for (const auto& [rows, in, out] :
       {std::tuple<std::size_t, std::size_t, std::size_t>{1200, 128, 2000}, {333, 64, 4001}, {5000, 32, 48}}) {
    INFO("x [" << rows << ", " << in << "], weight [" << out << ", " << in << "]");
    Tensor<float> x = uniform({rows, in}, 1), w = uniform({out, in}, 2), b = uniform({out}, 3);
    const Tensor<float> g = uniform({rows, out}, 4, false);
    check_same_bits_at_any_thread_count([&] {
      x.zero_grad();
      w.zero_grad();
      b.zero_grad();
      Tensor<float> y, z;
      {
        autocast guard;
        y = linear_activation(x, w, b, Activation::GELU);
        z = matmul(x, transpose(w, 0, 1));
      }
      sum(add(mul(y, g), mul(z, g))).backward();
      return std::vector<xt::xarray<float>>{y.data(), z.data(), x.grad(), w.grad(), b.grad()};
    });
  }
  INFO("attention");
  Tensor<float> q = uniform({4, 4, 70, 32}, 5), k = uniform({4, 4, 300, 32}, 6), v = uniform({4, 4, 300, 32}, 7);
  const Tensor<float> g = uniform({4, 4, 70, 32}, 8, false);
  check_same_bits_at_any_thread_count([&] {
    q.zero_grad();
    k.zero_grad();
    v.zero_grad();
    Tensor<float> y;
    {
      autocast guard;
      y = scaled_dot_product_attention(q, k, v).first;
    }
    y.backward(g.data());
    return std::vector<xt::xarray<float>>{y.data(), q.grad(), k.grad(), v.grad()};
  });
}

TEST_CASE("autocast products with zero-size dims", "[autocast]") {
  // The bfloat16 copies of empty operands are empty: the products must not read them.
  autocast guard;
  using TF = Tensor<float>;
  auto a = TF::zeros({2, 0}, true), b = TF::zeros({0, 3}, true);
  auto y = matmul(a, b);
  CHECK(y.data() == xt::xarray<float>(xt::zeros<float>({2, 3})));
  y.backward(xt::xarray<float>(xt::ones<float>({2, 3})));
  CHECK(a.grad().shape() == std::vector<std::size_t>{2, 0});
  CHECK(b.grad().shape() == std::vector<std::size_t>{0, 3});
  CHECK(matmul(TF::zeros({0, 3}), TF::ones({3, 4})).shape() == Shape{0, 4});
  CHECK(matmul(TF::ones({0, 2, 3}), TF::ones({3, 4})).shape() == Shape{0, 2, 4});
  // No input features: the bias on every row, for linear and linear_activation alike.
  auto x = TF::zeros({3, 0}, true), w = TF::zeros({4, 0}, true);
  auto bias = TF::from_vector({-1, 1, 2, 3}, {4}, true);
  const xt::xarray<float> rows = {{-1, 1, 2, 3}, {-1, 1, 2, 3}, {-1, 1, 2, 3}};
  auto z = linear(x, w, bias);
  CHECK(z.data() == rows);
  CHECK(linear_activation(x, w, bias, Activation::ReLU).data() == xt::xarray<float>(xt::maximum(rows, 0.0f)));
  z.backward(xt::xarray<float>(xt::ones<float>({3, 4})));
  CHECK(bias.grad() == xt::xarray<float>({3, 3, 3, 3}));
  CHECK(x.grad().size() == 0);
  // No rows: an empty output and a zero weight gradient.
  auto w2 = TF::ones({4, 3}, true);
  auto empty = linear(TF::zeros({2, 0, 3}), w2);
  CHECK(empty.shape() == Shape{2, 0, 4});
  empty.backward(xt::xarray<float>(xt::zeros<float>({2, 0, 4})));
  CHECK(w2.grad() == xt::xarray<float>(xt::zeros<float>({4, 3})));
}

TEST_CASE("NaN and infinity pass through autocast products", "[autocast]") {
  xt::xarray<float> a = uniform({3, 20}, 1, false).data(), b = uniform({20, 4}, 2, false).data();
  a(0, 3) = std::numeric_limits<float>::quiet_NaN();
  a(1, 5) = std::numeric_limits<float>::infinity();
  a(2, 0) = std::numeric_limits<float>::max();  // finite in float, infinite in bfloat16
  for (std::size_t j = 0; j < 4; ++j) b(0, j) = 1.0f;
  xt::xarray<float> y;
  {
    autocast guard;
    y = matmul(Tensor<float>(a), Tensor<float>(b)).data();
  }
  for (std::size_t j = 0; j < 4; ++j) {
    INFO("column " << j);
    CHECK(std::isnan(y(0, j)));
    CHECK((std::isinf(y(1, j)) || std::isnan(y(1, j))));  // inf * b, of either sign
    CHECK(std::isinf(y(2, j)));                           // FLT_MAX rounds to bfloat16's infinity, times b(0, j) = 1
  }
}

TEST_CASE("ops off the autocast list give the same bits inside and outside the scope", "[autocast]") {
  // torch's CPU autocast runs these in float (or leaves them to their inputs' dtype); tapegrad never
  // changes them: forward and backward identical to the bit.
  const IndexArray target = {1, 0, 3, 2, 4, 0};
  const BoolArray mask = xt::xarray<bool>({{false, false, true, true, false}});
  using Op = std::function<Tensor<float>(const std::vector<Tensor<float>>&)>;
  const std::vector<std::pair<std::string, Op>> ops = {
      {"softmax", [](const auto& in) { return softmax(in[0], -1); }},
      {"log_softmax", [](const auto& in) { return log_softmax(in[0], 1); }},
      {"masked softmax",
       [&](const auto& in) { return softmax(masked_fill(in[0], mask, -std::numeric_limits<float>::infinity()), -1); }},
      {"layer_norm", [](const auto& in) { return layer_norm(in[0], {5}, in[1], in[2]); }},
      {"rms_norm", [](const auto& in) { return rms_norm(in[0], {5}, in[1]); }},
      {"cross_entropy", [&](const auto& in) { return cross_entropy(in[0], target); }},
      {"mse_loss", [](const auto& in) { return mse_loss(in[0], in[3]); }},
      {"sum, mean, logsumexp",
       [](const auto& in) { return add(add(sum(in[0], {1}), mean(in[0], {1})), logsumexp(in[0], {1})); }},
      {"gelu, relu, mul", [](const auto& in) { return mul(gelu(in[0]), relu(in[3])); }},
  };
  for (const auto& entry : ops) {
    const Op& op = entry.second;
    DYNAMIC_SECTION(entry.first) {
      const auto run = [&](bool mixed) {
        std::vector<Tensor<float>> in = {uniform({6, 5}, 1), uniform({5}, 2), uniform({5}, 3), uniform({6, 5}, 4)};
        Tensor<float> y;
        {
          autocast guard(mixed);
          y = op(in);
        }
        y.backward(uniform(y.shape(), 5, false).data());
        std::vector<xt::xarray<float>> out = {y.data()};
        for (const auto& t : in) out.push_back(t.has_grad() ? t.grad() : xt::xarray<float>());
        return out;
      };
      const auto plain = run(false), mixed = run(true);
      for (std::size_t i = 0; i < plain.size(); ++i) {
        INFO("result " << i);
        CHECK(same_bits(mixed[i], plain[i]));
      }
    }
  }
}

TEST_CASE("a Transformer layer's gradients under autocast are float32's to bfloat16 rounding", "[autocast]") {
  // Every product of the layer (the attention's projections and scores, the feed-forward block)
  // multiplies operands rounded to bfloat16 (relative error <= 2^-8 each, ~2^-9.5 on average), forward
  // and backward; a parameter's gradient passes through ~10 such roundings of independent signs, so
  // with GELU its error in norm is ~sqrt(10) 2^-9.5 ~ 2^-8 of its size (seen: up to 1.3 2^-8):
  // allowed 4 2^-8. ReLU's slope jumps at 0: the pre-activations that bfloat16 moves across 0 (a
  // fraction ~ 2 phi(0) 2^-8 ~ 2^-8) take a gradient of g instead of 0 or back, which alone is a
  // relative error of ~sqrt(2^-8) = 2^-4 in the gradients behind it (seen: 10.4 2^-8 = 2^-4.6):
  // allowed 2^-3 there. The same bits as float32 would mean autocast did nothing: every parameter's
  // gradient must differ.
  struct Layer {
    const char* name;
    bool norm_first;
    nn::Activation activation;
    double bound;
  };
  for (const Layer& c : {Layer{"post-LN, GELU", false, nn::Activation::GELU, 4 * 0x1p-8},
                         Layer{"pre-LN, GELU", true, nn::Activation::GELU, 4 * 0x1p-8},
                         Layer{"post-LN, ReLU", false, nn::Activation::ReLU, 0x1p-3}}) {
    DYNAMIC_SECTION(c.name) {
      nn::TransformerLayerOptions options(64, 4);
      options.dim_feedforward = 128;
      options.dropout = 0.0;
      options.batch_first = true;
      options.norm_first = c.norm_first;
      options.activation = c.activation;
      Generator gen(11);
      nn::TransformerEncoderLayer<float> layer(options, gen);
      const Tensor<float> x = uniform({3, 12, 64}, 12, false);
      const Tensor<float> target = uniform({3, 12, 64}, 13, false);
      BoolArray padding = xt::zeros<bool>({3, 12});
      for (std::size_t j = 9; j < 12; ++j) padding(1, j) = true;
      const auto run = [&](bool mixed) {
        layer.zero_grad();
        Tensor<float> loss;
        {
          autocast guard(mixed);
          loss = mse_loss(layer.forward(x, {}, padding), target);
        }
        loss.backward();
        std::vector<std::pair<std::string, xt::xarray<float>>> grads = {{"loss", loss.data()}};
        for (const auto& [name, p] : layer.named_parameters()) grads.emplace_back(name, p.grad());
        return grads;
      };
      const auto plain = run(false), mixed = run(true);
      REQUIRE(plain.size() == mixed.size());
      REQUIRE(plain.size() > 10);
      for (std::size_t i = 0; i < plain.size(); ++i) {
        const double err = relative_error(mixed[i].second, plain[i].second);
        INFO(plain[i].first << ": relative error " << err << " (" << err / 0x1p-8 << " * 2^-8)");
        CHECK(err < c.bound);
        CHECK_FALSE(same_bits(mixed[i].second, plain[i].second));
      }
    }
  }
}
