/// @file
/// Inverted dropout: in training each element is zeroed with probability p and the rest scaled by
/// 1 / (1 - p); in eval, or with p = 0, it is the identity; with p = 1 it zeroes everything.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// p must lie in [0, 1] (ShapeError, a std::invalid_argument, naming p otherwise). In eval or with
/// p = 0 the result is x itself (as torch returns its input) and gen is not touched; with p = 1 it is
/// x * 0, as torch computes it (zeros, NaN where x is not finite), also without a draw. Otherwise the
/// call draws one gen.next_u64() as its seed and keeps element i (row-major) by the rule of
/// detail::DropoutMask, so a seeded generator reproduces the mask; the backward multiplies by the
/// same scaled mask (recomputed from the seed, not stored).
template <typename T>
Tensor<T> dropout(const Tensor<T>& x, double p, bool training, Generator& gen);

namespace detail {

/// The mask rule, shared with the fused attention kernel: element i is kept when the high 32 bits of
/// splitmix64's finalizer applied to seed + (i + 1) * 0x9e3779b97f4a7c15 are >= round(p * 2^32). A
/// counter-based rule (like torch's Philox) lets every element be decided independently: vectorized,
/// split over threads, and recomputed in the backward instead of stored.
struct DropoutMask {
  DropoutMask(std::uint64_t seed, double p)
      : seed(seed), threshold(static_cast<std::uint64_t>(p * 4294967296.0 + 0.5)) {}
  bool keep(std::size_t i) const {
    std::uint64_t z = seed + (static_cast<std::uint64_t>(i) + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (z >> 32) >= threshold;
  }
  /// out[i] = keep(first + i) ? in[i] * scale : 0 for i < n (in may equal out). Everything the loop
  /// reads is a local, so the compiler vectorizes it (the hash in 64-bit lanes), branch-free.
  template <typename T>
  void apply(const T* in, T* out, T scale, std::size_t first, std::size_t n) const {
    const DropoutMask m = *this;
    const T s = scale;
    for (std::size_t i = 0; i < n; ++i) {
      const T v = in[i];
      out[i] = m.keep(first + i) ? v * s : T(0);
    }
  }
  /// out[i] = keep(first + i) ? scale : 0 for i < n: the mask's factors, for a caller that applies one
  /// mask to several arrays.
  template <typename T>
  void factors(T* out, T scale, std::size_t first, std::size_t n) const {
    const DropoutMask m = *this;
    const T s = scale;
    for (std::size_t i = 0; i < n; ++i) out[i] = m.keep(first + i) ? s : T(0);
  }
  std::uint64_t seed, threshold;
};

}  // namespace detail

}  // namespace tapegrad
