/// @file
/// bfloat16, the upper half of an IEEE float (8 exponent bits, 7 mantissa bits): the operand type of
/// mixed-precision products (autograd/autocast.hpp). Conversions round to nearest even, as torch's do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tapegrad {

/// A bfloat16 value, stored as its 16 bits.
struct bfloat16 {
  std::uint16_t bits = 0;
};

/// v rounded to the nearest bfloat16 (ties to even); NaN stays a quiet NaN, infinities stay infinite.
inline bfloat16 to_bfloat16(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bfloat16{static_cast<std::uint16_t>((u >> 16) | 0x40u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return bfloat16{static_cast<std::uint16_t>(u >> 16)};
}

/// The float a bfloat16 stands for (exact).
inline float to_float(bfloat16 v) {
  const std::uint32_t u = std::uint32_t{v.bits} << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// v rounded to bfloat16 precision and widened back: what a bfloat16 operand contributes to a product.
inline float round_to_bfloat16(float v) { return to_float(to_bfloat16(v)); }

/// n values at once.
///@{
void to_bfloat16(const float* in, bfloat16* out, std::size_t n);
void to_float(const bfloat16* in, float* out, std::size_t n);
///@}

}  // namespace tapegrad
