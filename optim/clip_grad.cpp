#include "tapegrad/optim/clip_grad.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "tapegrad/autograd/elementwise_kernels.hpp"
#include "tapegrad/autograd/parallel.hpp"
#include "tapegrad/autograd/vector_math.hpp"

namespace tapegrad::optim {

namespace {

// Sum of squares in double over fixed blocks of elements (the blocks depend on n only): each block in
// detail::lane_sum's lanes, the blocks split over the threads, their sums added in block order. The
// same value for any thread count, and vectorized (a plain running sum in double is neither).
template <typename T>
double sum_of_squares(const T* d, std::size_t n) {
  constexpr std::size_t kBlock = std::size_t{1} << 14;
  const std::size_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(blocks);
  tapegrad::detail::parallel_for(blocks, 4, [&](std::size_t b0, std::size_t b1) {
    for (std::size_t b = b0; b < b1; ++b) {
      const T* x = d + b * kBlock;
      partial[b] = tapegrad::detail::lane_sum<double>(std::min(kBlock, n - b * kBlock), [x](std::size_t k) {
        const double v = static_cast<double>(x[k]);
        return v * v;
      });
    }
  });
  double total = 0.0;
  for (double v : partial) total += v;
  return total;
}

// One gradient's p-norm, accumulated in double.
template <typename T>
double p_norm(const T* d, std::size_t n, double p) {
  double acc = 0.0;
  if (std::isinf(p)) {
    for (std::size_t k = 0; k < n; ++k) acc = std::max(acc, std::abs(static_cast<double>(d[k])));
    return acc;
  }
  if (p == 2.0) return std::sqrt(sum_of_squares(d, n));
  if (p == 1.0) {
    for (std::size_t k = 0; k < n; ++k) acc += std::abs(static_cast<double>(d[k]));
    return acc;
  }
  for (std::size_t k = 0; k < n; ++k) acc += std::pow(std::abs(static_cast<double>(d[k])), p);
  return std::pow(acc, 1.0 / p);
}

}  // namespace

void check_clip_grad_norm_arguments(double max_norm, double norm_type) {
  if (std::isnan(max_norm)) throw std::invalid_argument("clip_grad_norm_: max_norm is NaN");
  if (!(norm_type > 0.0)) {
    throw std::invalid_argument(fmt::format("clip_grad_norm_: norm_type must be > 0, got {}", norm_type));
  }
}

template <typename T>
double grad_norm(const Tensor<T>& param, double norm_type) {
  return p_norm(param.grad().data(), param.grad().size(), norm_type);
}

double total_norm(const std::vector<double>& norms, double norm_type) {
  if (norms.empty()) return 0.0;
  if (std::isinf(norm_type)) return *std::max_element(norms.begin(), norms.end());
  return p_norm(norms.data(), norms.size(), norm_type);
}

template <typename T>
void scale_grads_to_norm(const std::vector<Tensor<T>>& params, double max_norm, double total_norm) {
  const double clip_coef = max_norm / (total_norm + 1e-6);
  // Like torch's clamp(clip_coef, max=1): a NaN norm makes every gradient NaN rather than passing silently.
  if (clip_coef >= 1.0) return;
  const T c = static_cast<T>(clip_coef);
  for (auto p : params) {
    if (!p.defined() || !p.has_grad()) continue;
    auto& g = p.mutable_grad();
    T* d = g.data();
    tapegrad::detail::parallel_for(g.size(), tapegrad::detail::kElementwiseGrain,
                                   [d, c](std::size_t begin, std::size_t end) {
                                     T* __restrict x = d;
                                     for (std::size_t k = begin; k < end; ++k) x[k] *= c;
                                   });
  }
}

template <typename T>
double clip_grad_norm_(const std::vector<Tensor<T>>& params, double max_norm, double norm_type) {
  check_clip_grad_norm_arguments(max_norm, norm_type);
  std::vector<double> norms;
  for (const auto& p : params) {
    if (p.defined() && p.has_grad()) norms.push_back(grad_norm(p, norm_type));
  }
  if (norms.empty()) return 0.0;
  const double total = total_norm(norms, norm_type);
  scale_grads_to_norm(params, max_norm, total);
  return total;
}

template <typename T>
void clip_grad_value_(const std::vector<Tensor<T>>& params, double clip_value) {
  if (!(clip_value >= 0.0)) {
    throw std::invalid_argument(fmt::format("clip_grad_value_: clip_value must be >= 0, got {}", clip_value));
  }
  const T hi = static_cast<T>(clip_value), lo = -hi;
  for (auto p : params) {
    if (!p.defined() || !p.has_grad()) continue;
    auto& g = p.mutable_grad();
    T* d = g.data();
    for (std::size_t k = 0, n = g.size(); k < n; ++k) d[k] = std::min(std::max(d[k], lo), hi);
  }
}

template double grad_norm<float>(const Tensor<float>&, double);
template double grad_norm<double>(const Tensor<double>&, double);
template void scale_grads_to_norm<float>(const std::vector<Tensor<float>>&, double, double);
template void scale_grads_to_norm<double>(const std::vector<Tensor<double>>&, double, double);
template double clip_grad_norm_<float>(const std::vector<Tensor<float>>&, double, double);
template double clip_grad_norm_<double>(const std::vector<Tensor<double>>&, double, double);
template void clip_grad_value_<float>(const std::vector<Tensor<float>>&, double);
template void clip_grad_value_<double>(const std::vector<Tensor<double>>&, double);

}  // namespace tapegrad::optim
