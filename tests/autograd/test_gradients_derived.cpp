// The derivations of docs/gradients.md, each computed directly from its formula and compared with the
// framework's backward and, where the formula is a Jacobian, with jacobian(). All in double.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "tapegrad/autograd/jacobian.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::allclose;
using tapegrad::testing::rand_input;

namespace {

// The gradient backward() leaves on x for y = f(x) and an output gradient g.
xt::xarray<double> backward_grad(Tensor<double> x, const Tensor<double>& y, const xt::xarray<double>& g) {
  x.zero_grad();
  y.backward(g);
  return x.grad();
}

// g^T J: the vector-Jacobian product from a full Jacobian J [out..., in...] and g [out...].
xt::xarray<double> vjp(const Tensor<double>& jac, const xt::xarray<double>& g, const Shape& in_shape) {
  const std::size_t n_out = g.size(), n_in = numel(in_shape);
  xt::xarray<double> out = xt::zeros<double>(in_shape);
  for (std::size_t o = 0; o < n_out; ++o)
    for (std::size_t i = 0; i < n_in; ++i) out.data()[i] += g.data()[o] * jac.data().data()[o * n_in + i];
  return out;
}

xt::xarray<double> random_array(const Shape& shape, std::uint64_t seed) { return rand_input(shape, seed).data(); }

// The largest |jac[r, i, s, j] - expected| of a row-wise op's [rows, d, rows, d] Jacobian: expected(r, i, j)
// within row r, 0 across rows.
template <typename F>
double worst_rowwise_jacobian_error(const Tensor<double>& jac, std::size_t rows, std::size_t d, F expected) {
  double worst = 0;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t s = 0; s < rows; ++s)
      for (std::size_t i = 0; i < d; ++i)
        for (std::size_t j = 0; j < d; ++j) {
          const double want = r != s ? 0.0 : expected(r, i, j);
          worst = std::max(worst, std::abs(jac.data()(r, i, s, j) - want));
        }
  return worst;
}

}  // namespace

TEST_CASE("softmax: dx = y * (g - sum(g * y)) is g^T (diag(y) - y y^T)", "[gradients]") {
  const auto x = rand_input({4, 7}, 11, -3.0, 3.0);
  const auto y = softmax(x, 1);
  const auto g = random_array({4, 7}, 12);

  // The derived rule, row by row, without any n x n matrix.
  xt::xarray<double> derived = xt::zeros<double>({4, 7});
  for (std::size_t r = 0; r < 4; ++r) {
    double dot = 0;
    for (std::size_t j = 0; j < 7; ++j) dot += g(r, j) * y.data()(r, j);
    for (std::size_t j = 0; j < 7; ++j) derived(r, j) = y.data()(r, j) * (g(r, j) - dot);
  }
  CHECK(allclose(backward_grad(x, y, g), derived, 0.0, 1e-15));

  // The same from the materialized Jacobian, whose rows are diag(y) - y y^T.
  const auto jac = jacobian([](const Tensor<double>& v) { return softmax(v, 1); }, x);
  CHECK(allclose(vjp(jac, g, x.shape()), derived, 0.0, 1e-14));
  for (std::size_t r = 0; r < 4; ++r)
    for (std::size_t a = 0; a < 7; ++a)
      for (std::size_t b = 0; b < 7; ++b) {
        const double yr_a = y.data()(r, a), yr_b = y.data()(r, b);
        CHECK(std::abs(jac.data()(r, a, r, b) - ((a == b ? yr_a : 0.0) - yr_a * yr_b)) <= 1e-12);
      }
}

TEST_CASE("log_softmax: dx = g - softmax(x) * sum(g)", "[gradients]") {
  const auto x = rand_input({3, 5}, 13, -3.0, 3.0);
  const auto y = log_softmax(x, 1);
  const auto g = random_array({3, 5}, 14);
  const xt::xarray<double> p = xt::exp(y.data());
  xt::xarray<double> derived = xt::zeros<double>({3, 5});
  for (std::size_t r = 0; r < 3; ++r) {
    double s = 0;
    for (std::size_t j = 0; j < 5; ++j) s += g(r, j);
    for (std::size_t j = 0; j < 5; ++j) derived(r, j) = g(r, j) - p(r, j) * s;
  }
  CHECK(allclose(backward_grad(x, y, g), derived, 0.0, 1e-15));
}

TEST_CASE("matmul with broadcast batch dims: dA and dB sum G B^T and A^T G over the broadcast dims", "[gradients]") {
  // A [2, 1, 3, 4] @ B [5, 4, 6] -> C [2, 5, 3, 6]: A is repeated over C's dim 1, B over C's dim 0.
  const auto a = rand_input({2, 1, 3, 4}, 15);
  const auto b = rand_input({5, 4, 6}, 16);
  const auto c = matmul(a, b);
  REQUIRE(c.shape() == Shape{2, 5, 3, 6});
  const auto g = random_array({2, 5, 3, 6}, 17);
  c.backward(g);

  // dA[i, 0] = sum_j G[i, j] B[j]^T;   dB[j] = sum_i A[i, 0]^T G[i, j].
  xt::xarray<double> da = xt::zeros<double>({2, 1, 3, 4});
  xt::xarray<double> db = xt::zeros<double>({5, 4, 6});
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 5; ++j)
      for (std::size_t m = 0; m < 3; ++m)
        for (std::size_t k = 0; k < 4; ++k)
          for (std::size_t n = 0; n < 6; ++n) {
            da(i, 0, m, k) += g(i, j, m, n) * b.data()(j, k, n);
            db(j, k, n) += a.data()(i, 0, m, k) * g(i, j, m, n);
          }
  CHECK(allclose(a.grad(), da, 0.0, 1e-13));
  CHECK(allclose(b.grad(), db, 0.0, 1e-13));

  // And both against the full Jacobians.
  const auto jac = jacobian<double>([](const std::vector<Tensor<double>>& in) { return matmul(in[0], in[1]); }, {a, b});
  CHECK(allclose(vjp(jac[0], g, a.shape()), da, 0.0, 1e-13));
  CHECK(allclose(vjp(jac[1], g, b.shape()), db, 0.0, 1e-13));
}

TEST_CASE("matmul with a 1-D operand: the promoted dim is added back and removed in the gradient", "[gradients]") {
  // v [4] @ B [3, 4, 2] -> [3, 2]: v is a row [1, 4], broadcast over the batch of 3.
  const auto v = rand_input({4}, 18);
  const auto b = rand_input({3, 4, 2}, 19);
  const auto c = matmul(v, b);
  REQUIRE(c.shape() == Shape{3, 2});
  const auto g = random_array({3, 2}, 20);
  c.backward(g);
  xt::xarray<double> dv = xt::zeros<double>({4});
  xt::xarray<double> db = xt::zeros<double>({3, 4, 2});
  for (std::size_t j = 0; j < 3; ++j)
    for (std::size_t k = 0; k < 4; ++k)
      for (std::size_t n = 0; n < 2; ++n) {
        dv(k) += g(j, n) * b.data()(j, k, n);
        db(j, k, n) = v.data()(k) * g(j, n);
      }
  CHECK(allclose(v.grad(), dv, 0.0, 1e-14));
  CHECK(allclose(b.grad(), db, 0.0, 1e-14));
}

TEST_CASE("layer_norm: the fused backward and its Jacobian", "[gradients]") {
  const std::size_t rows = 3, d = 8;
  const double eps = 1e-5;
  const auto x = rand_input({rows, d}, 21, -2.0, 2.0);
  const auto w = rand_input({d}, 22);
  const auto bias = rand_input({d}, 23);
  const auto y = layer_norm(x, {d}, w, bias, eps);
  const auto g = random_array({rows, d}, 24);
  y.backward(g);

  xt::xarray<double> dx = xt::zeros<double>({rows, d}), x_hat = xt::zeros<double>({rows, d});
  xt::xarray<double> dw = xt::zeros<double>({d}), db = xt::zeros<double>({d});
  std::vector<double> rstd(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (std::size_t j = 0; j < d; ++j) mean += x.data()(r, j) / d;
    for (std::size_t j = 0; j < d; ++j) var += (x.data()(r, j) - mean) * (x.data()(r, j) - mean) / d;
    rstd[r] = 1 / std::sqrt(var + eps);
    for (std::size_t j = 0; j < d; ++j) x_hat(r, j) = (x.data()(r, j) - mean) * rstd[r];
    // dx = rstd * (gh - mean(gh) - x_hat * mean(gh * x_hat)) with gh = g * w.
    double mean_gh = 0, mean_gh_xhat = 0;
    for (std::size_t j = 0; j < d; ++j) {
      mean_gh += g(r, j) * w.data()(j) / d;
      mean_gh_xhat += g(r, j) * w.data()(j) * x_hat(r, j) / d;
    }
    for (std::size_t j = 0; j < d; ++j) {
      dx(r, j) = rstd[r] * (g(r, j) * w.data()(j) - mean_gh - x_hat(r, j) * mean_gh_xhat);
      dw(j) += g(r, j) * x_hat(r, j);
      db(j) += g(r, j);
    }
  }
  CHECK(allclose(x.grad(), dx, 0.0, 1e-13));
  CHECK(allclose(w.grad(), dw, 0.0, 1e-13));
  CHECK(allclose(bias.grad(), db, 0.0, 1e-13));

  // dy_i / dx_j = w_i * rstd * (delta_ij - 1/D - x_hat_i x_hat_j / D) within a row, 0 across rows.
  const auto jac =
      jacobian([&](const Tensor<double>& v) { return layer_norm(v, {d}, Tensor<double>(w.data()), {}, eps); }, x);
  REQUIRE(jac.shape() == Shape{rows, d, rows, d});
  CHECK(worst_rowwise_jacobian_error(jac, rows, d, [&](std::size_t r, std::size_t i, std::size_t j) {
          return w.data()(i) * rstd[r] * ((i == j ? 1.0 : 0.0) - 1.0 / d - x_hat(r, i) * x_hat(r, j) / d);
        }) <= 1e-12);
}

TEST_CASE("rms_norm: the fused backward and its Jacobian", "[gradients]") {
  const std::size_t rows = 3, d = 8;
  const double eps = 1e-5;
  const auto x = rand_input({rows, d}, 121, -2.0, 2.0);
  const auto w = rand_input({d}, 122);
  const auto y = rms_norm(x, {d}, w, eps);
  const auto g = random_array({rows, d}, 123);
  y.backward(g);

  xt::xarray<double> dx = xt::zeros<double>({rows, d}), x_hat = xt::zeros<double>({rows, d});
  xt::xarray<double> dw = xt::zeros<double>({d});
  std::vector<double> rstd(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    double ms = 0;
    for (std::size_t j = 0; j < d; ++j) ms += x.data()(r, j) * x.data()(r, j) / d;
    rstd[r] = 1 / std::sqrt(ms + eps);
    for (std::size_t j = 0; j < d; ++j) x_hat(r, j) = x.data()(r, j) * rstd[r];
    // dx = rstd * (gh - x_hat * mean(gh * x_hat)) with gh = g * w.
    double mean_gh_xhat = 0;
    for (std::size_t j = 0; j < d; ++j) mean_gh_xhat += g(r, j) * w.data()(j) * x_hat(r, j) / d;
    for (std::size_t j = 0; j < d; ++j) {
      dx(r, j) = rstd[r] * (g(r, j) * w.data()(j) - x_hat(r, j) * mean_gh_xhat);
      dw(j) += g(r, j) * x_hat(r, j);
    }
  }
  CHECK(allclose(x.grad(), dx, 0.0, 1e-13));
  CHECK(allclose(w.grad(), dw, 0.0, 1e-13));

  // dy_i / dx_j = w_i * rstd * (delta_ij - x_hat_i x_hat_j / D) within a row, 0 across rows.
  const auto jac =
      jacobian([&](const Tensor<double>& v) { return rms_norm(v, {d}, Tensor<double>(w.data()), eps); }, x);
  REQUIRE(jac.shape() == Shape{rows, d, rows, d});
  CHECK(worst_rowwise_jacobian_error(jac, rows, d, [&](std::size_t r, std::size_t i, std::size_t j) {
          return w.data()(i) * rstd[r] * ((i == j ? 1.0 : 0.0) - x_hat(r, i) * x_hat(r, j) / d);
        }) <= 1e-12);
}

TEST_CASE("rotary_embedding: the Jacobian is a rotation per pair, so the backward is the inverse rotation",
          "[gradients]") {
  const std::size_t length = 3, d = 6, h = d / 2, offset = 4;
  const double base = 50.0;
  const auto [cos, sin] = rotary_tables<double>(d, offset + length, base);
  const Tensor<double> c(cos), s(sin);
  const auto x = rand_input({1, 1, length, d}, 124);
  const auto y = rotary_embedding(x, c, s, offset);
  const auto g = random_array({1, 1, length, d}, 125);
  y.backward(g);

  // dx[j] = g[j] c + g[j + h] s, dx[j + h] = g[j + h] c - g[j] s: R(theta)^T g = R(-theta) g.
  xt::xarray<double> dx = xt::zeros<double>(Shape{1, 1, length, d});
  for (std::size_t l = 0; l < length; ++l)
    for (std::size_t j = 0; j < h; ++j) {
      const double theta = static_cast<double>(offset + l) * std::pow(base, -2.0 * j / d);
      dx(0, 0, l, j) = g(0, 0, l, j) * std::cos(theta) + g(0, 0, l, j + h) * std::sin(theta);
      dx(0, 0, l, j + h) = g(0, 0, l, j + h) * std::cos(theta) - g(0, 0, l, j) * std::sin(theta);
    }
  CHECK(allclose(x.grad(), dx, 0.0, 1e-14));

  // Within a position, the 2x2 block of the pair (j, j + h) is [[c, -s], [s, c]]; everything else is 0.
  const auto jac = jacobian([&](const Tensor<double>& v) { return rotary_embedding(v, c, s, offset); }, x);
  double worst = 0;
  for (std::size_t l = 0; l < length; ++l)
    for (std::size_t m = 0; m < length; ++m)
      for (std::size_t i = 0; i < d; ++i)
        for (std::size_t j = 0; j < d; ++j) {
          const double theta = static_cast<double>(offset + l) * std::pow(base, -2.0 * (i % h) / d);
          double expected = 0;
          if (l == m && i == j) expected = std::cos(theta);
          if (l == m && i < h && j == i + h) expected = -std::sin(theta);
          if (l == m && i >= h && j == i - h) expected = std::sin(theta);
          worst = std::max(worst, std::abs(jac.data()(0, 0, l, i, 0, 0, m, j) - expected));
        }
  CHECK(worst <= 1e-15);
}

TEST_CASE("cross_entropy with label smoothing: loss -sum(q log p), gradient (p - q) / N", "[gradients]") {
  const std::size_t n = 5, classes = 4;
  const double smoothing = 0.1;
  const auto logits = rand_input({n, classes}, 25, -3.0, 3.0);
  const IndexArray target = {2, 0, -100, 3, 1};  // one ignored sample
  CrossEntropyOptions options;
  options.label_smoothing = smoothing;
  const auto loss = cross_entropy(logits, target, options);
  loss.backward();

  const xt::xarray<double> p = softmax(Tensor<double>(logits.data()), 1).data();
  double total = 0;
  std::size_t counted = 0;
  xt::xarray<double> q = xt::zeros<double>({n, classes});
  for (std::size_t i = 0; i < n; ++i) {
    if (target(i) == -100) continue;
    ++counted;
    for (std::size_t c = 0; c < classes; ++c) {
      // q: the smoothed one-hot, (1 - eps) on the target plus eps / C everywhere.
      q(i, c) = (c == static_cast<std::size_t>(target(i)) ? 1 - smoothing : 0.0) + smoothing / classes;
      total -= q(i, c) * std::log(p(i, c));
    }
  }
  CHECK(std::abs(loss.item() - total / counted) <= 1e-14);
  xt::xarray<double> derived = xt::zeros<double>({n, classes});
  for (std::size_t i = 0; i < n; ++i)
    if (target(i) != -100)
      for (std::size_t c = 0; c < classes; ++c) derived(i, c) = (p(i, c) - q(i, c)) / counted;
  CHECK(allclose(logits.grad(), derived, 0.0, 1e-15));

  // The gradient is also the (only) row of the loss's Jacobian.
  const auto jac = jacobian([&](const Tensor<double>& v) { return cross_entropy(v, target, options); }, logits);
  CHECK(allclose(jac.data(), derived, 0.0, 1e-15));
}

TEST_CASE("logsumexp: dx = g * exp(x - y), the softmax of each slice", "[gradients]") {
  // Slices far from 0 (values near 300): the rule holds however large the logits.
  const auto x = rand_input({3, 5}, 26, 297.0, 303.0);
  const auto y = logsumexp(x, 1);
  const auto g = random_array({3}, 27);
  xt::xarray<double> derived = xt::zeros<double>({3, 5});
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t j = 0; j < 5; ++j) derived(r, j) = g(r) * std::exp(x.data()(r, j) - y.data()(r));
  CHECK(allclose(backward_grad(x, y, g), derived, 0.0, 1e-15));
  // Row r of the Jacobian is softmax(x[r]) over its own slice and 0 elsewhere.
  const auto jac = jacobian([](const Tensor<double>& v) { return logsumexp(v, 1); }, x);
  const auto p = softmax(Tensor<double>(x.data()), 1).data();
  double worst = 0;
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t s = 0; s < 3; ++s)
      for (std::size_t j = 0; j < 5; ++j)
        worst = std::max(worst, std::abs(jac.data()(r, s, j) - (r == s ? p(s, j) : 0.0)));
  INFO("worst difference " << worst);
  CHECK(worst <= 1e-12);  // x - y near 300 carries the rounding of 300, about 6e-14
}

TEST_CASE("maximum and minimum: a tie gives each side half, so maximum(x, x) has the gradient of x", "[gradients]") {
  const auto a = rand_input({2, 4}, 28);
  auto b_values = rand_input({2, 4}, 29).data();
  b_values(0, 1) = a.data()(0, 1);  // two ties
  b_values(1, 3) = a.data()(1, 3);
  const Tensor<double> b(b_values, true);
  const auto g = random_array({2, 4}, 30);
  maximum(a, b).backward(g);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 4; ++j) {
      const double x = a.data()(i, j), y = b.data()(i, j);
      const double share = x == y ? 0.5 : x > y ? 1.0 : 0.0;  // a's share; b's is 1 - share
      CHECK(a.grad()(i, j) == g(i, j) * share);
      CHECK(b.grad()(i, j) == g(i, j) * (1 - share));
    }
  // The halves add up to the whole where both sides are the same tensor: max(x, x) = x.
  const auto x = rand_input({3}, 31);
  const auto gx = random_array({3}, 32);
  CHECK((backward_grad(x, maximum(x, x), gx) == gx));
  CHECK((backward_grad(x, minimum(x, x), gx) == gx));
}

TEST_CASE("clamp: dx = g inside [min, max], bounds included, and 0 outside", "[gradients]") {
  auto x = rand_input({12}, 33, -2.0, 2.0);
  x.mutable_data()(0) = -0.5;  // exactly at the bounds: the derivative from inside, 1
  x.mutable_data()(1) = 0.75;
  const auto g = random_array({12}, 34);
  xt::xarray<double> derived = xt::zeros<double>({12});
  for (std::size_t i = 0; i < 12; ++i) derived(i) = x.data()(i) >= -0.5 && x.data()(i) <= 0.75 ? g(i) : 0.0;
  CHECK((backward_grad(x, clamp(x, -0.5, 0.75), g) == derived));
  // min > max: the output is max everywhere, a constant.
  CHECK((backward_grad(x, clamp(x, 0.75, -0.5), g) == xt::xarray<double>(xt::zeros<double>({12}))));
}

TEST_CASE("gather: the Jacobian is one-hot rows, so dx scatter-adds g over repeated positions", "[gradients]") {
  const auto x = rand_input({3, 4}, 35);
  const IndexArray index = {{0, 0, 3}, {1, 1, 1}, {2, 0, 2}};
  const auto g = random_array({3, 3}, 36);
  xt::xarray<double> derived = xt::zeros<double>({3, 4});
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j) derived(i, static_cast<std::size_t>(index(i, j))) += g(i, j);
  CHECK((backward_grad(x, gather(x, 1, index), g) == derived));
  // dy[i, j] / dx[s, t] = [s = i and t = index[i, j]].
  const auto jac = jacobian([&](const Tensor<double>& v) { return gather(v, 1, index); }, x);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t s = 0; s < 3; ++s)
        for (std::size_t t = 0; t < 4; ++t)
          CHECK(jac.data()(i, j, s, t) == (s == i && t == static_cast<std::size_t>(index(i, j)) ? 1.0 : 0.0));
}

TEST_CASE("norm: dx = g sgn(x) |x|^(p-1) / norm^(p-1), 0 at a zero slice, p = inf ties share g", "[gradients]") {
  const auto x = rand_input({3, 4}, 40);
  const auto g = random_array({3}, 41);
  for (double p : {1.0, 1.5, 2.0, 3.0, 0.5}) {
    INFO("p " << p);
    const auto y = norm(x, p, {1});
    xt::xarray<double> derived = xt::zeros<double>({3, 4});
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t j = 0; j < 4; ++j) {
        const double v = x.data()(i, j), s = v > 0 ? 1.0 : -1.0;
        derived(i, j) = g(i) * s * std::pow(std::abs(v), p - 1) / std::pow(y.data()(i), p - 1);
      }
    CHECK(allclose(backward_grad(x, y, g), derived, 1e-12, 1e-14));
    const auto jac = jacobian([&](const Tensor<double>& v) { return norm(v, p, {1}); }, x);
    CHECK(allclose(vjp(jac, g, {3, 4}), derived, 1e-12, 1e-14));
  }
  // A zero slice: 0 for every p (torch 1.13's choice: the smallest subgradient, and no 0 / 0).
  auto z = Tensor<double>::from_vector({0, 0, 0, 1, -2, 0}, {2, 3}, true);
  for (double p : {1.0, 2.0, 3.0, 0.5, std::numeric_limits<double>::infinity()}) {
    INFO("p " << p);
    const xt::xarray<double> dz = backward_grad(z, norm(z, p, {1}), xt::xarray<double>({5.0, 1.0}));
    CHECK(dz(0, 0) == 0.0);
    CHECK(dz(0, 2) == 0.0);
    CHECK(dz(1, 2) == 0.0);  // a zero element of a non-zero slice: 0 also for p < 1 (|0|^(p-1) = inf)
  }
  // p = inf: |x| = 2 twice; each tied maximum gets g / 2 with its sign.
  auto t = Tensor<double>::from_vector({2, 1, -2}, {3}, true);
  CHECK((backward_grad(t, norm(t, std::numeric_limits<double>::infinity()), xt::xarray<double>(3.0)) ==
         xt::xarray<double>({1.5, 0, -1.5})));
}

TEST_CASE("std: dx = g (x - mean) / (divisor std), and 0 at a constant slice", "[gradients]") {
  auto x = Tensor<double>::from_vector({1, 2, 4, 3, 3, 3}, {2, 3}, true);
  const auto g = xt::xarray<double>({2.0, 7.0});
  const auto y = tapegrad::std(x, 1);
  const double mean = 7.0 / 3, sd = y.data()(0);
  const xt::xarray<double> dx = backward_grad(x, y, g);
  for (std::size_t j = 0; j < 3; ++j) {
    CHECK(dx(0, j) == Approx(2.0 * (x.data()(0, j) - mean) / (2 * sd)).epsilon(1e-13));
    CHECK(dx(1, j) == 0.0);
  }
}

TEST_CASE("normalize: dx = (g - y (g . y)) / norm above eps, g / eps below", "[gradients]") {
  const auto x = rand_input({2, 5}, 42);
  const auto g = random_array({2, 5}, 43);
  const auto y = normalize(x);
  xt::xarray<double> derived = xt::zeros<double>({2, 5});
  for (std::size_t i = 0; i < 2; ++i) {
    double n = 0, gy = 0;
    for (std::size_t j = 0; j < 5; ++j) n += x.data()(i, j) * x.data()(i, j);
    n = std::sqrt(n);
    for (std::size_t j = 0; j < 5; ++j) gy += g(i, j) * y.data()(i, j);
    for (std::size_t j = 0; j < 5; ++j) derived(i, j) = (g(i, j) - y.data()(i, j) * gy) / n;
  }
  CHECK(allclose(backward_grad(x, y, g), derived, 1e-12, 1e-14));
  // Below eps the denominator is the constant eps: dx = g / eps, at a zero row too.
  auto small = Tensor<double>::from_vector({1e-3, 0, 0, 0}, {2, 2}, true);
  const xt::xarray<double> ds = backward_grad(small, normalize(small, 2, 1, 0.1), xt::xarray<double>({{1, 2}, {3, 4}}));
  CHECK(allclose(ds, xt::xarray<double>({{10, 20}, {30, 40}}), 1e-14));
}

TEST_CASE("cosine_similarity: dx1 = g (x2 - w12 x1 / s1) / sqrt(s1 s2) with the clamped squared norms", "[gradients]") {
  // Row 0 ordinary, row 1 below eps (1e-9), row 2 zero: the same formula throughout, as torch.
  auto x1 = Tensor<double>::from_vector({0.3, -1.2, 0.5, 1e-9, -2e-9, 0, 0, 0, 0}, {3, 3}, true);
  auto x2 = Tensor<double>::from_vector({1.1, 0.4, -0.7, 0.2, 0.9, -0.3, 1, 2, 2}, {3, 3}, true);
  const auto g = xt::xarray<double>({0.7, -1.3, 2.0});
  const double eps2 = 1e-16;
  xt::xarray<double> d1 = xt::zeros<double>({3, 3}), d2 = xt::zeros<double>({3, 3});
  xt::xarray<double> value = xt::zeros<double>({3});
  for (std::size_t i = 0; i < 3; ++i) {
    double w12 = 0, s1 = 0, s2 = 0;
    for (std::size_t j = 0; j < 3; ++j) {
      const double a = x1.data()(i, j), b = x2.data()(i, j);
      w12 += a * b;
      s1 += a * a;
      s2 += b * b;
    }
    s1 = std::max(s1, eps2);
    s2 = std::max(s2, eps2);
    const double denom = 1 / std::sqrt(s1 * s2);
    value(i) = w12 * denom;
    for (std::size_t j = 0; j < 3; ++j) {
      d1(i, j) = g(i) * denom * (x2.data()(i, j) - w12 * x1.data()(i, j) / s1);
      d2(i, j) = g(i) * denom * (x1.data()(i, j) - w12 * x2.data()(i, j) / s2);
    }
  }
  const auto y = cosine_similarity(x1, x2);
  CHECK(allclose(y.data(), value, 1e-14, 1e-15));
  y.backward(g);
  CHECK(allclose(x1.grad(), d1, 1e-12));
  CHECK(allclose(x2.grad(), d2, 1e-12, 1e-14));
}

TEST_CASE("kl_div: dx = -t, dt = log t + 1 - x (NaN at t = 0), and the log_target forms", "[gradients]") {
  auto x = Tensor<double>::from_vector({-1.2, -0.4, -2.0, -0.9}, {2, 2}, true);
  auto t = Tensor<double>::from_vector({0.2, 0.8, 0.0, 1.0}, {2, 2}, true);
  const auto g = xt::xarray<double>({{1.5, -0.5}, {2.0, 0.25}});
  kl_div(x, t, Reduction::None).backward(g);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 2; ++j) {
      const double tv = t.data()(i, j), xv = x.data()(i, j);
      CHECK(x.grad()(i, j) == Approx(-g(i, j) * tv).margin(1e-15));
      if (tv == 0)
        CHECK(std::isnan(t.grad()(i, j)));
      else
        CHECK(t.grad()(i, j) == Approx(g(i, j) * (std::log(tv) + 1 - xv)).epsilon(1e-14));
    }
  // log_target: l = exp(t) (t - x), dx = -exp(t), dt = exp(t) (t - x + 1); batchmean divides by N = 2.
  auto lx = Tensor<double>::from_vector({-1.2, -0.4, -2.0, -0.9}, {2, 2}, true);
  auto lt = Tensor<double>::from_vector({-1.0, -0.5, -3.0, -0.1}, {2, 2}, true);
  kl_div(lx, lt, Reduction::BatchMean, true).backward();
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 2; ++j) {
      const double tv = lt.data()(i, j), xv = lx.data()(i, j);
      CHECK(lx.grad()(i, j) == Approx(-std::exp(tv) / 2).epsilon(1e-14));
      CHECK(lt.grad()(i, j) == Approx(std::exp(tv) * (tv - xv + 1) / 2).epsilon(1e-14));
    }
}

TEST_CASE("topk and sort: dx scatters g to the picked positions, ties by position", "[gradients]") {
  // Ties at 3 (positions 1 and 3) and 1 (positions 0, 2, 6): the stable order decides who gets which g.
  auto x = Tensor<double>::from_vector({1, 3, 1, 3, 2, 0, 1}, {7}, true);
  const auto g = xt::xarray<double>({10, 20, 30});
  const auto top = topk(x, 3);  // 3 (pos 1), 3 (pos 3), 2 (pos 4)
  CHECK((backward_grad(x, top.values, g) == xt::xarray<double>({0, 10, 0, 20, 30, 0, 0})));
  const auto low = topk(x, 2, 0, false);  // 0 (pos 5), then the first of the tied 1s (pos 0)
  CHECK((backward_grad(x, low.values, xt::xarray<double>({10, 20})) == xt::xarray<double>({20, 0, 0, 0, 0, 10, 0})));
  const auto s = sort(x);
  const auto gs = random_array({7}, 44);
  const xt::xarray<double> ds = backward_grad(x, s.values, gs);
  for (std::size_t r = 0; r < 7; ++r) CHECK(ds(static_cast<std::size_t>(s.indices(r))) == gs(r));
}
