/// @file
/// exp, erfc and row reductions for the hot loops of softmax-like kernels and activations, written so
/// that the compiler vectorizes them (std::exp, std::erfc and plain float reductions do not vectorize
/// without -ffast-math).
/// fast_exp(float) uses a range reduction and a degree-5 polynomial (within 2 ulp of std::exp);
/// fast_exp(double) stays std::exp (gradchecks run in double and want the exact one); fast_expm1 and
/// fast_log1p likewise.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tapegrad::detail {

inline float fast_exp(float x) {
  /// exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2]; ln 2 is split in a
  /// part exact in float and a correction so that r keeps full precision.
  /// Written so that NaN fails both tests and becomes -87: the int conversion below then only ever
  /// sees n in [-126, 127] (converting NaN or a huge float to int is undefined behaviour).
  float clamped = x > -87.0f ? x : -87.0f;
  clamped = clamped < 88.0f ? clamped : 88.0f;
  /// Round to nearest by adding and subtracting 1.5 * 2^23 (std::floor keeps the loop from vectorizing).
  const float n = (clamped * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = clamped - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  /// n + 127 is in [1, 254]: a valid, positive biased exponent, shifted as unsigned.
  const std::uint32_t bits = static_cast<std::uint32_t>(static_cast<std::int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  float y = p * scale;
  /// Below -87 the result would be denormal: 0 instead (exp(-inf) = 0 exactly); NaN stays NaN.
  y = x > 88.0f ? HUGE_VALF : y;
  y = x < -87.0f ? 0.0f : y;
  y = x != x ? x : y;
  return y;
}

inline double fast_exp(double x) { return std::exp(x); }

/// exp(x) - 1 without the cancellation of fast_exp(x) - 1 near 0 (ELU's negative side, as torch's
/// expm1): a degree-8 Taylor polynomial for |x| < ln(2) / 2 (truncation below 1e-9 relative),
/// fast_exp(x) - 1 beyond, where the subtraction loses at most a factor 2.4 of relative accuracy.
/// Branch-free, so loops over it vectorize; double stays std::expm1.
inline float fast_expm1(float x) {
  float p = 1.0f / 40320.0f;
  p = p * x + 1.0f / 5040.0f;
  p = p * x + 1.0f / 720.0f;
  p = p * x + 1.0f / 120.0f;
  p = p * x + 1.0f / 24.0f;
  p = p * x + 1.0f / 6.0f;
  p = p * x + 0.5f;
  const float small = x + x * x * p;
  const float large = fast_exp(x) - 1.0f;
  return std::fabs(x) < 0.34657359f ? small : large;
}

inline double fast_expm1(double x) { return std::expm1(x); }

/// log(1 + z) for float z >= -1 (softplus's log1p(exp(x))), branch-free so that loops over it
/// vectorize (std::log1p does not); within a few ulp. u = 1 + z is split as m 2^k with m in
/// [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) with s = (m - 1) / (m + 1) as an odd series to s^9
/// (|s| < 0.172), and the rounding of 1 + z is corrected by (z - (u - 1)) / u. inf gives inf, -1
/// gives -inf, NaN stays NaN. double stays std::log1p.
inline float fast_log1p(float z) {
  const float u = 1.0f + z;
  std::uint32_t bits;
  std::memcpy(&bits, &u, sizeof bits);
  // k = the exponent of u relative to a mantissa in [sqrt(1/2), sqrt(2)) (0x3f3504f3 is sqrt(1/2)).
  const std::int32_t k = static_cast<std::int32_t>(bits - 0x3f3504f3u) >> 23;
  const std::uint32_t mbits = bits - (static_cast<std::uint32_t>(k) << 23);
  float m;
  std::memcpy(&m, &mbits, sizeof m);
  const float f = m - 1.0f;
  const float s = f / (2.0f + f);
  const float s2 = s * s;
  float q = 2.0f / 9.0f;
  q = q * s2 + 2.0f / 7.0f;
  q = q * s2 + 2.0f / 5.0f;
  q = q * s2 + 2.0f / 3.0f;
  const float log_m = 2.0f * s + s * s2 * q;
  const float kf = static_cast<float>(k);
  const float c = (z - (u - 1.0f)) / u;
  float y = kf * 0.693359375f + (log_m + (c + kf * -2.12194440e-4f));
  y = u == HUGE_VALF ? HUGE_VALF : y;
  y = u == 0.0f ? -HUGE_VALF : y;
  y = u < 0.0f ? NAN : y;
  y = z != z ? z : y;
  return y;
}

inline double fast_log1p(double z) { return std::log1p(z); }

/// erfc(z) for float z >= 0 (NaN propagates), and exp(-z^2) beside it (GELU's density needs it too),
/// branch-free so that loops over it vectorize; within about 6 ulp (relative error below 4e-7 where
/// the result is a normal float; z is clamped at 10, past which erfc underflows anyway).
/// erfc(z) = t exp(-z^2) Q(t) with t = 1 / (1 + z / 2) and Q a degree-8 polynomial in t - 0.6,
/// least-squares fitted (Lawson's weights, toward the minimax relative error) to erfc(z) exp(z^2) / t
/// on z in [0, 10]: 4.3e-8 at most. z^2 is split by an FMA into its float and the rounding error,
/// which goes into a first-order correction, so the large exponent costs no accuracy.
[[gnu::always_inline]] inline float fast_erfc_gauss(float z, float* gauss) {
  z = z > 10.0f ? 10.0f : z;
  const float t = 1.0f / (1.0f + 0.5f * z);
  const float u = t - 0.6f;
  float q = -5.906882510e-02f;
  q = q * u + 1.043998287e-03f;
  q = q * u + 1.125997901e-01f;
  q = q * u - 3.896390647e-02f;
  q = q * u - 2.077905238e-01f;
  q = q * u + 6.873618811e-02f;
  q = q * u + 5.914708972e-01f;
  q = q * u + 8.025881052e-01f;
  q = q * u + 5.852245092e-01f;
  const float zz = z * z;
  const float zz_low = std::fma(z, z, -zz);  // z^2 = zz + zz_low exactly
  const float g = fast_exp(-zz) * (1.0f - zz_low);
  *gauss = g;
  return t * g * q;
}

/// Sums and maxima over 16 interleaved lanes, combined in a fixed order: deterministic, and one vector
/// operation per 16 elements. Always inlined: rows are often short (64 elements), so a call per row
/// costs as much as the row.
constexpr std::size_t kLanes = 16;

/// The lanes' total, halving: lane k + w is added to lane k for w = 8, 4, 2, 1 (four vector steps,
/// where a running sum over the lanes was 16 dependent scalar additions per row).
template <typename T>
[[gnu::always_inline]] inline T lane_total(T (&acc)[kLanes]) {
  for (std::size_t w = kLanes / 2; w > 0; w /= 2)
    for (std::size_t k = 0; k < w; ++k) acc[k] += acc[k + w];
  return acc[0];
}

template <typename T, typename F>
[[gnu::always_inline]] inline T lane_sum(std::size_t n, F&& value) {
  T acc[kLanes] = {};
  std::size_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (std::size_t k = 0; k < kLanes; ++k) acc[k] += value(j + k);
  for (std::size_t k = 0; j + k < n; ++k) acc[k] += value(j + k);
  return lane_total(acc);
}

/// The maximum of x[0..n), ignoring NaNs (-inf for n = 0): a softmax row with a NaN turns NaN through
/// its sum anyway.
template <typename T>
[[gnu::always_inline]] inline T row_max(const T* x, std::size_t n) {
  T acc[kLanes];
  for (auto& a : acc) a = -HUGE_VAL;
  std::size_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (std::size_t k = 0; k < kLanes; ++k) {
      acc[k] = x[j + k] > acc[k] ? x[j + k] : acc[k];
    }
  for (std::size_t k = 0; j + k < n; ++k) {
    acc[k] = x[j + k] > acc[k] ? x[j + k] : acc[k];
  }
  for (std::size_t w = kLanes / 2; w > 0; w /= 2)
    for (std::size_t k = 0; k < w; ++k) acc[k] = acc[k + w] > acc[k] ? acc[k + w] : acc[k];
  return acc[0];
}

}  // namespace tapegrad::detail
