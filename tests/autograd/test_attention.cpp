// scaled_dot_product_attention and its multi-head forms: the blocked kernel against the same
// computation from composed ops (scores, masks, softmax, dropout, product), gradchecks in double with
// every mask kind, and the errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <memory>

#include "tapegrad/autograd/gradcheck.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::allclose;
using tapegrad::testing::rand_input;

namespace {

using TD = Tensor<double>;
using Masks = AttentionMasks<double>;
constexpr double kInf = std::numeric_limits<double>::infinity();

std::int64_t i64(std::size_t v) { return static_cast<std::int64_t>(v); }

// The op from composed ops, as nn::MultiheadAttention computed it before the blocked kernel:
// q [B, H, L, D], k [B, H, S, D], v [B, H, S, Dv] -> (output, weights after dropout).
std::pair<TD, TD> composed(const TD& q, const TD& k, const TD& v, const Masks& m, double p, bool causal, double scale,
                           Generator* gen) {
  const std::size_t B = q.shape()[0], H = q.shape()[1], L = q.shape()[2], S = k.shape()[2];
  TD scores = matmul(q * scale, transpose(k, 2, 3));
  const std::vector<std::int64_t> full{i64(B), i64(H), i64(L), i64(S)};
  if (m.attn_bias) {
    const TD bias(*m.attn_bias);
    scores = scores + (bias.dim() == 2 ? bias : reshape(bias, full));
  }
  if (m.key_padding_bias) scores = scores + reshape(TD(*m.key_padding_bias), {i64(B), 1, 1, i64(S)});
  BoolArray blocked = BoolArray::from_shape({B, H, L, S});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t i = 0; i < L; ++i)
        for (std::size_t j = 0; j < S; ++j) {
          bool x = causal && j > i;
          if (m.attn_mask)
            x = x || m.attn_mask->data()[(m.attn_mask->dimension() > 2 ? (b * H + h) * L * S : 0) + i * S + j];
          if (m.key_padding_mask) x = x || (*m.key_padding_mask)(b, j);
          blocked(b, h, i, j) = x;
        }
  scores = masked_fill(scores, blocked, -kInf);
  BoolArray dead = BoolArray::from_shape({B, H, L, 1});
  for (std::size_t r = 0; r < B * H * L; ++r) {
    bool all = S > 0;
    for (std::size_t j = 0; j < S && all; ++j) all = scores.data().data()[r * S + j] == -kInf;
    dead.data()[r] = all;
  }
  scores = masked_fill(scores, dead, 0.0);
  TD w = masked_fill(softmax(scores, -1), dead, 0.0);
  if (p > 0) w = dropout(w, p, true, *gen);
  return {matmul(w, v), w};
}

struct Case {
  std::string name;
  std::size_t B, H, L, S, D, Dv;
  Masks masks;
  double p;
  bool causal;
};

std::shared_ptr<const BoolArray> bools(const Shape& shape, std::uint64_t seed, double rate) {
  Generator g(seed);
  BoolArray m = BoolArray::from_shape(shape);
  for (auto& x : m) x = g.uniform() < rate;
  return std::make_shared<const BoolArray>(std::move(m));
}

std::shared_ptr<const xt::xarray<double>> floats(const Shape& shape, std::uint64_t seed) {
  Generator g(seed);
  xt::xarray<double> m = TD::uniform(shape, -2, 1, g).data();
  for (std::size_t i = 0; i < m.size(); i += 7) m.data()[i] = -kInf;
  return std::make_shared<const xt::xarray<double>>(std::move(m));
}

// Every mask kind, alone and together, with dead rows, dropout, causal and L != S.
std::vector<Case> cases(std::size_t B, std::size_t H, std::size_t L, std::size_t S, std::size_t D, std::size_t Dv) {
  std::vector<Case> c;
  // Masks are {attn_mask, attn_bias (a float attn_mask), key_padding_mask, key_padding_bias}.
  const auto add = [&](const char* name, Masks masks, double p, bool causal) {
    c.push_back({name, B, H, L, S, D, Dv, std::move(masks), p, causal});
  };
  add("no mask", {}, 0.0, false);
  add("causal, dropout", {}, 0.3, true);
  add("bool attn_mask [L, S]", {bools({L, S}, 1, 0.3)}, 0.0, false);
  add("bool attn_mask [B * H, L, S], dropout", {bools({B * H, L, S}, 2, 0.5)}, 0.25, false);
  add("float attn_mask [B, H, L, S], causal", {nullptr, floats({B, H, L, S}, 3)}, 0.0, true);
  add("float attn_mask [L, S], dropout", {nullptr, floats({L, S}, 4)}, 0.4, false);
  BoolArray kpm = xt::zeros<bool>({B, S});
  for (std::size_t j = 0; j < S; ++j) kpm(0, j) = true;  // batch 0: every key is padding (dead rows)
  for (std::size_t b = 1; b < B; ++b) kpm(b, S - 1) = true;
  add("bool key padding, a fully padded batch, dropout", {nullptr, nullptr, std::make_shared<const BoolArray>(kpm)},
      0.2, false);
  add("float key padding", {nullptr, nullptr, nullptr, floats({B, S}, 5)}, 0.0, false);
  // Padded tails of different lengths (the kernels stop at each batch's last visible key), as bool and
  // as -inf, with a few visible keys in the bool tail's range left to the float one.
  BoolArray tail = xt::zeros<bool>({B, S});
  xt::xarray<double> tail_bias = xt::zeros<double>({B, S});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t j = S - S * b / (B + 1); j < S; ++j) tail(b, j) = true;
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t j = S - (S * (b + 1)) / (B + 2); j < S; ++j) tail_bias(b, j) = -kInf;
  add("padded tails of different lengths, dropout",
      {nullptr, nullptr, std::make_shared<const BoolArray>(tail),
       std::make_shared<const xt::xarray<double>>(tail_bias)},
      0.2, false);
  add("every mask at once, causal, dropout",
      {bools({L, S}, 6, 0.2), floats({L, S}, 7), bools({B, S}, 8, 0.2), floats({B, S}, 9)}, 0.3, true);
  return c;
}

// Output, weights and the gradients of q, k, v of the op and of the composed ops must agree.
void check_against_composed(const Case& c, std::uint64_t seed) {
  INFO(c.name << ": B " << c.B << " H " << c.H << " L " << c.L << " S " << c.S << " D " << c.D << " Dv " << c.Dv);
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.D));
  const auto q0 = rand_input({c.B, c.H, c.L, c.D}, seed, -2, 2), k0 = rand_input({c.B, c.H, c.S, c.D}, seed + 1, -2, 2),
             v0 = rand_input({c.B, c.H, c.S, c.Dv}, seed + 2);
  Generator rg(seed + 3);
  const TD r_out = TD::uniform({c.B, c.H, c.L, c.Dv}, -1, 1, rg), r_w = TD::uniform({c.B, c.H, c.L, c.S}, -1, 1, rg);
  const auto run = [&](bool reference) {
    TD q(q0.data(), true), k(k0.data(), true), v(v0.data(), true);
    Generator gen(42);
    auto [out, w] = reference ? composed(q, k, v, c.masks, c.p, c.causal, scale, &gen)
                              : scaled_dot_product_attention(q, k, v, c.masks, c.p, c.causal, std::nullopt, true, &gen);
    sum(out * r_out + sum(w * r_w)).backward();
    return std::vector<xt::xarray<double>>{out.data(), w.data(), q.grad(), k.grad(), v.grad()};
  };
  const auto got = run(false), want = run(true);
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("result " << i << " (output, weights, dq, dk, dv)");
    CHECK(allclose(got[i], want[i], 1e-10, 1e-12));
  }
  // Without the weights: the same output and gradients, and nothing [L, S] returned.
  TD q(q0.data(), true), k(k0.data(), true), v(v0.data(), true);
  Generator gen(42);
  auto [out, w] = scaled_dot_product_attention(q, k, v, c.masks, c.p, c.causal, std::nullopt, false, &gen);
  CHECK_FALSE(w.defined());
  sum(out * r_out).backward();
  TD q2(q0.data(), true), k2(k0.data(), true), v2(v0.data(), true);
  Generator gen2(42);
  sum(composed(q2, k2, v2, c.masks, c.p, c.causal, scale, &gen2).first * r_out).backward();
  CHECK(allclose(out.data(), got[0], 1e-12, 1e-13));
  CHECK(allclose(q.grad(), q2.grad(), 1e-10, 1e-12));
  CHECK(allclose(k.grad(), k2.grad(), 1e-10, 1e-12));
  CHECK(allclose(v.grad(), v2.grad(), 1e-10, 1e-12));
}

}  // namespace

TEST_CASE("scaled_dot_product_attention matches the composed ops for every mask kind", "[attention]") {
  SECTION("one block, self-attention shapes") {
    for (const auto& c : cases(2, 2, 5, 5, 4, 4)) check_against_composed(c, 10);
  }
  SECTION("cross-attention, L != S, Dv != D") {
    for (const auto& c : cases(2, 3, 4, 7, 3, 5)) check_against_composed(c, 20);
    for (const auto& c : cases(1, 2, 7, 3, 4, 2)) check_against_composed(c, 30);
  }
  SECTION("several blocks of queries and keys (the online softmax across blocks)") {
    for (const auto& c : cases(2, 1, 130, 300, 4, 3)) check_against_composed(c, 40);
  }
}

TEST_CASE("scaled_dot_product_attention passes gradcheck in double with every mask kind", "[attention][gradcheck]") {
  for (const auto& c : cases(2, 2, 3, 4, 3, 2)) {
    INFO(c.name);
    CHECK_GRADCHECK(
        ([&](const std::vector<TD>& in) {
          Generator g(3);  // the same dropout mask on every evaluation
          auto [out, w] = scaled_dot_product_attention(in[0], in[1], in[2], c.masks, c.p, c.causal, 0.7, true, &g);
          return out + sum(w * w);
        }),
        (std::vector<TD>{rand_input({2, 2, 3, 3}, 31), rand_input({2, 2, 4, 3}, 32), rand_input({2, 2, 4, 2}, 33)}));
  }
  SECTION("3-d inputs, causal with L > S, no weights") {
    CHECK_GRADCHECK(
        ([&](const std::vector<TD>& in) {
          Generator g(4);
          return scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.5, true, std::nullopt, false, &g).first;
        }),
        (std::vector<TD>{rand_input({2, 5, 3}, 34), rand_input({2, 3, 3}, 35), rand_input({2, 3, 4}, 36)}));
  }
  SECTION("only some of q, k and v require grad (a frozen projection's output): the others get none") {
    for (int wanted = 1; wanted < 8; ++wanted) {
      INFO("q, k, v require grad: " << (wanted & 1) << (wanted >> 1 & 1) << (wanted >> 2 & 1));
      std::vector<TD> in{rand_input({2, 2, 5, 3}, 40), rand_input({2, 2, 5, 3}, 41), rand_input({2, 2, 5, 2}, 42)};
      for (int i = 0; i < 3; ++i) in[i].requires_grad_((wanted >> i & 1) != 0);
      CHECK_GRADCHECK(([&](const std::vector<TD>& x) {
                        auto [out, w] =
                            scaled_dot_product_attention(x[0], x[1], x[2], {}, 0.0, true, std::nullopt, true, nullptr);
                        return out + sum(w * w);
                      }),
                      in);
    }
  }
  SECTION("dropout_p = 1: every weight dropped") {
    CHECK_GRADCHECK(([&](const std::vector<TD>& in) {
                      Generator g(5);
                      auto [out, w] =
                          scaled_dot_product_attention(in[0], in[1], in[2], {}, 1.0, false, std::nullopt, true, &g);
                      return out + sum(w * w);
                    }),
                    (std::vector<TD>{rand_input({2, 4, 3}, 37), rand_input({2, 3, 3}, 38), rand_input({2, 3, 2}, 39)}));
  }
}

TEST_CASE("multi_head_attention and multi_head_self_attention equal the op on split heads", "[attention]") {
  const std::size_t B = 2, L = 5, S = 6, H = 3, D = 2;
  Masks m;
  m.key_padding_mask = bools({B, S}, 1, 0.3);
  m.attn_bias = floats({B * H, L, S}, 2);
  // [B, L, H * D] -> [B, H, L, D]
  const auto heads = [&](const TD& x) {
    return permute(reshape(x, {i64(B), i64(x.shape()[1]), i64(H), i64(x.shape()[2] / H)}), {0, 2, 1, 3});
  };
  const auto merge = [&](const TD& x) {
    return reshape(permute(x, {0, 2, 1, 3}), {i64(B), i64(x.shape()[2]), i64(x.shape()[1] * x.shape()[3])});
  };
  SECTION("cross-attention") {
    const auto q0 = rand_input({B, L, H * D}, 1), k0 = rand_input({B, S, H * D}, 2), v0 = rand_input({B, S, H * 4}, 3);
    const auto run = [&](bool split) {
      TD q(q0.data(), true), k(k0.data(), true), v(v0.data(), true);
      Generator g(7);
      auto [out, w] =
          split ? scaled_dot_product_attention(heads(q), heads(k), heads(v), m, 0.3, false, std::nullopt, true, &g)
                : multi_head_attention(q, k, v, H, m, 0.3, false, std::nullopt, true, &g);
      if (split) out = merge(out);
      Generator rg(8);
      sum(out * TD::uniform(out.shape(), -1, 1, rg) + sum(w * w)).backward();
      return std::vector<xt::xarray<double>>{out.data(), w.data(), q.grad(), k.grad(), v.grad()};
    };
    const auto a = run(false), b = run(true);
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(allclose(a[i], b[i], 1e-12, 1e-13));
    CHECK_GRADCHECK(([&](const std::vector<TD>& in) {
                      Generator g(9);
                      auto [out, w] =
                          multi_head_attention(in[0], in[1], in[2], H, m, 0.3, false, std::nullopt, true, &g);
                      return out + sum(w * w);
                    }),
                    (std::vector<TD>{q0, k0, v0}));
  }
  SECTION("packed self-attention, causal") {
    Masks self;
    self.key_padding_mask = bools({B, L}, 3, 0.3);
    const auto x0 = rand_input({B, L, 3 * H * D}, 4);
    const auto run = [&](bool split) {
      TD x(x0.data(), true);
      Generator g(7);
      std::pair<TD, TD> r;
      if (split) {
        auto parts = chunk(x, 3, -1);
        r = scaled_dot_product_attention(heads(parts[0]), heads(parts[1]), heads(parts[2]), self, 0.2, true,
                                         std::nullopt, false, &g);
        r.first = merge(r.first);
      } else {
        r = multi_head_self_attention(x, H, self, 0.2, true, std::nullopt, false, &g);
      }
      Generator rg(8);
      sum(r.first * TD::uniform(r.first.shape(), -1, 1, rg)).backward();
      return std::vector<xt::xarray<double>>{r.first.data(), x.grad()};
    };
    const auto a = run(false), b = run(true);
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(allclose(a[i], b[i], 1e-12, 1e-13));
    CHECK_GRADCHECK(([&](const std::vector<TD>& in) {
                      Generator g(9);
                      return multi_head_self_attention(in[0], H, self, 0.2, true, std::nullopt, false, &g).first;
                    }),
                    (std::vector<TD>{x0}));
  }
}

TEST_CASE("scaled_dot_product_attention: float agrees with double, and bad arguments throw", "[attention][errors]") {
  const auto q = rand_input({2, 2, 70, 8}, 1), k = rand_input({2, 2, 300, 8}, 2), v = rand_input({2, 2, 300, 8}, 3);
  Masks m;
  m.key_padding_mask = bools({2, 300}, 4, 0.3);
  AttentionMasks<float> mf;
  mf.key_padding_mask = m.key_padding_mask;
  const auto f = [](const TD& x) { return Tensor<float>(xt::xarray<float>(xt::cast<float>(x.data()))); };
  Generator gd(1), gf(1);
  const auto d = scaled_dot_product_attention(q, k, v, m, 0.2, true, std::nullopt, false, &gd).first;
  const auto fl = scaled_dot_product_attention(f(q), f(k), f(v), mf, 0.2, true, std::nullopt, false, &gf).first;
  CHECK(allclose(xt::xarray<double>(xt::cast<double>(fl.data())), d.data(), 1e-4, 1e-5));

  Generator g(0);
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, rand_input({2, 2, 300, 7}, 5), v),
                    Catch::Contains("scaled_dot_product_attention") && Catch::Contains("[2, 2, 300, 7]"));
  Masks bad;
  bad.key_padding_mask = bools({2, 299}, 4, 0.3);
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, k, v, bad),
                    Catch::Contains("key_padding_mask") && Catch::Contains("[2, 299]"));
  Masks bad_attn;
  bad_attn.attn_bias = floats({70, 299}, 5);
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, k, v, bad_attn), Catch::Contains("attn_bias"));
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, k, v, {}, 1.5, false, std::nullopt, false, &g),
                    Catch::Contains("got 1.5"));
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, k, v, {}, 0.1), Catch::Contains("generator"));
  CHECK_THROWS_AS(multi_head_self_attention(rand_input({2, 3, 12}, 6), 5), ShapeError);
  CHECK_THROWS_WITH(
      multi_head_attention(rand_input({3, 5, 8}, 1), rand_input({3, 4, 8}, 2), rand_input({3, 5, 8}, 3), 2),
      Catch::Contains("multi_head_attention") && Catch::Contains("[3, 4, 8]"));
}

TEST_CASE("scaled_dot_product_attention with dropout_p = 1 drops every weight: zero output and gradients, no draw",
          "[attention][dropout]") {
  auto q = rand_input({2, 2, 5, 4}, 11), k = rand_input({2, 2, 6, 4}, 12), v = rand_input({2, 2, 6, 3}, 13);
  Generator g(3);
  const auto before = g.state();
  auto [out, weights] = scaled_dot_product_attention(q, k, v, {}, 1.0, false, std::nullopt, true, &g);
  CHECK(g.state().s == before.s);
  CHECK(out.data() == xt::zeros<double>({2, 2, 5, 3}));
  CHECK(weights.data() == xt::zeros<double>({2, 2, 5, 6}));
  sum(out).backward();
  CHECK(q.grad() == xt::zeros<double>(q.shape()));
  CHECK(k.grad() == xt::zeros<double>(k.shape()));
  CHECK(v.grad() == xt::zeros<double>(v.shape()));
}
