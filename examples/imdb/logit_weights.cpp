#include "examples/imdb/logit_weights.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace imdb {

namespace {

// Each part [N, C] for N labels in [0, C), every logit finite.
void check_part(std::size_t index, const xt::xarray<double>& part, const std::vector<std::int64_t>& labels) {
  if (part.dimension() != 2 || part.shape(0) != labels.size()) {
    throw std::invalid_argument(
        fmt::format("fit_logit_weights: part {} must be [N, C] for N = {} labels, got {} "
                    "dimensions",
                    index, labels.size(), part.dimension()));
  }
  const auto classes = static_cast<std::int64_t>(part.shape(1));
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      throw std::invalid_argument(
          fmt::format("fit_logit_weights: label {} of row {} is outside [0, {})", labels[i], i, classes));
    }
  }
  for (const double v : part) {
    if (!std::isfinite(v))
      throw std::invalid_argument(fmt::format("fit_logit_weights: a logit of part {} is not finite ({})", index, v));
  }
}

// The mean NLL of softmax(sum_k w_k parts[k]) and, when asked, its gradient and Hessian in w.
double stacked_nll(const std::vector<xt::xarray<double>>& parts, const std::vector<std::int64_t>& labels,
                   const std::vector<double>& w, std::vector<double>* gradient, std::vector<double>* hessian) {
  const std::size_t k = parts.size(), n = labels.size(), c = parts[0].shape(1);
  std::vector<double> z(c), p(c), expected(k);
  double nll = 0.0;
  if (gradient) gradient->assign(k, 0.0);
  if (hessian) hessian->assign(k * k, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < c; ++j) {
      z[j] = 0.0;
      for (std::size_t a = 0; a < k; ++a) z[j] += w[a] * parts[a](i, j);
    }
    const double top = *std::max_element(z.begin(), z.end());
    double norm = 0.0;
    for (std::size_t j = 0; j < c; ++j) norm += (p[j] = std::exp(z[j] - top));
    for (std::size_t j = 0; j < c; ++j) p[j] /= norm;
    nll += top + std::log(norm) - z[static_cast<std::size_t>(labels[i])];
    if (!gradient) continue;
    // d/dw_a = E_p[x_a] - x_a[label]; d2/dw_a dw_b = Cov_p(x_a, x_b), x_a the row of part a.
    for (std::size_t a = 0; a < k; ++a) {
      expected[a] = 0.0;
      for (std::size_t j = 0; j < c; ++j) expected[a] += p[j] * parts[a](i, j);
      (*gradient)[a] += expected[a] - parts[a](i, static_cast<std::size_t>(labels[i]));
    }
    if (!hessian) continue;
    for (std::size_t a = 0; a < k; ++a)
      for (std::size_t b = 0; b < k; ++b) {
        double second = 0.0;
        for (std::size_t j = 0; j < c; ++j) second += p[j] * parts[a](i, j) * parts[b](i, j);
        (*hessian)[a * k + b] += second - expected[a] * expected[b];
      }
  }
  const double scale = 1.0 / static_cast<double>(n);
  if (gradient)
    for (auto& g : *gradient) g *= scale;
  if (hessian)
    for (auto& h : *hessian) h *= scale;
  return nll * scale;
}

// Solves h x = g for a small symmetric positive semi-definite h by Gaussian elimination with partial
// pivoting, after adding `ridge` to the diagonal.
std::vector<double> solve(std::vector<double> h, std::vector<double> g, double ridge) {
  const std::size_t k = g.size();
  for (std::size_t a = 0; a < k; ++a) h[a * k + a] += ridge;
  for (std::size_t col = 0; col < k; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < k; ++r)
      if (std::abs(h[r * k + col]) > std::abs(h[pivot * k + col])) pivot = r;
    for (std::size_t j = 0; j < k; ++j) std::swap(h[col * k + j], h[pivot * k + j]);
    std::swap(g[col], g[pivot]);
    for (std::size_t r = col + 1; r < k; ++r) {
      const double f = h[r * k + col] / h[col * k + col];
      for (std::size_t j = col; j < k; ++j) h[r * k + j] -= f * h[col * k + j];
      g[r] -= f * g[col];
    }
  }
  std::vector<double> x(k);
  for (std::size_t r = k; r-- > 0;) {
    double v = g[r];
    for (std::size_t j = r + 1; j < k; ++j) v -= h[r * k + j] * x[j];
    x[r] = v / h[r * k + r];
  }
  return x;
}

}  // namespace

std::vector<double> fit_logit_weights(const std::vector<xt::xarray<double>>& parts,
                                      const std::vector<std::int64_t>& labels) {
  if (parts.empty()) throw std::invalid_argument("fit_logit_weights: no parts");
  for (std::size_t a = 0; a < parts.size(); ++a) {
    check_part(a, parts[a], labels);
    if (parts[a].shape() != parts[0].shape()) {
      throw std::invalid_argument(fmt::format("fit_logit_weights: part {} is [{}, {}] but part 0 is [{}, {}]", a,
                                              parts[a].shape(0), parts[a].shape(1), parts[0].shape(0),
                                              parts[0].shape(1)));
    }
  }
  const std::size_t k = parts.size();
  std::vector<double> w(k, 1.0);
  if (labels.empty()) return w;
  std::vector<double> gradient, hessian;
  double nll = stacked_nll(parts, labels, w, &gradient, &hessian);
  for (int step = 0; step < 100; ++step) {
    double trace = 0.0;
    for (std::size_t a = 0; a < k; ++a) trace += hessian[a * k + a];
    const std::vector<double> direction = solve(hessian, gradient, 1e-9 * std::max(trace, 1e-12));
    double decrement = 0.0;  // the Newton decrement, g . H^-1 g: how much the NLL can still fall
    for (std::size_t a = 0; a < k; ++a) decrement += gradient[a] * direction[a];
    if (!(decrement > 1e-14)) break;
    // Backtracking (Armijo) line search along -direction.
    double t = 1.0, next_nll = nll;
    std::vector<double> next(k);
    for (int halving = 0; halving < 60; ++halving, t *= 0.5) {
      for (std::size_t a = 0; a < k; ++a) next[a] = w[a] - t * direction[a];
      next_nll = stacked_nll(parts, labels, next, nullptr, nullptr);
      if (next_nll <= nll - 0.25 * t * decrement) break;
    }
    if (!(next_nll < nll)) break;
    // Separable data would push the weights without end: stop at the edge of [-1e3, 1e3], the range
    // fit_temperature searches.
    if (std::any_of(next.begin(), next.end(), [](double v) { return std::abs(v) > 1e3; })) break;
    w = next;
    nll = stacked_nll(parts, labels, w, &gradient, &hessian);
  }
  return w;
}

}  // namespace imdb
