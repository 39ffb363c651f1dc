// bfloat16 conversions (autograd/bfloat16.hpp, the bulk ones in blas.cpp): round to nearest even
// against an independent reference in double, ties, NaN, infinities, overflow, subnormals, signed
// zeros, and the round trip of all 65536 bfloat16 bit patterns.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "tapegrad/autograd/bfloat16.hpp"

using namespace tapegrad;

namespace {

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
std::uint16_t to_bits(float f) { return to_bfloat16(f).bits; }

bool is_nan_bits(std::uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

// The bfloat16 nearest to a finite float, ties to the even significand, by value in double (not by
// bit arithmetic): the candidates are the bfloat16 values just below and above (the truncation and
// its successor in magnitude); beyond the largest finite bfloat16, IEEE rounding gives infinity from
// max + half an ulp on (the tie goes to the even "significand" of infinity).
std::uint16_t reference_bits(float f) {
  const std::uint32_t u = bits_of(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint16_t down = static_cast<std::uint16_t>((u >> 16) & 0x7fffu);  // truncated magnitude
  const std::uint16_t up = static_cast<std::uint16_t>(down + 1);
  const double x = std::fabs(static_cast<double>(f));
  const double lo = static_cast<double>(to_float(bfloat16{down}));
  // The successor of the largest finite value is infinity; as a rounding target it sits where the
  // next value would be (max + one ulp = 2^128), which makes max + half an ulp the tie.
  const double hi = up == 0x7f80u ? std::ldexp(1.0, 128) : static_cast<double>(to_float(bfloat16{up}));
  std::uint16_t pick;
  if (x - lo < hi - x) {
    pick = down;
  } else if (x - lo > hi - x) {
    pick = up;
  } else {
    pick = (down & 1u) ? up : down;
  }
  return static_cast<std::uint16_t>(sign | pick);
}

}  // namespace

TEST_CASE("bfloat16 rounds to nearest, ties to even", "[autocast][bfloat16]") {
  // 1 + 2^-8 lies halfway between 1 (even) and 1 + 2^-7 (odd): down. 1 + 3 2^-8 lies halfway between
  // 1 + 2^-7 (odd) and 1 + 2^-6 (even): up. Just off a tie goes to the nearer side.
  CHECK(to_bits(from_bits(0x3f808000u)) == 0x3f80u);
  CHECK(to_bits(from_bits(0x3f818000u)) == 0x3f82u);
  CHECK(to_bits(from_bits(0x3f808001u)) == 0x3f81u);
  CHECK(to_bits(from_bits(0x3f807fffu)) == 0x3f80u);
  CHECK(to_bits(from_bits(0x3f817fffu)) == 0x3f81u);
  CHECK(to_bits(1.0f + std::ldexp(1.0f, -8)) == 0x3f80u);
  CHECK(to_bits(-(1.0f + 3 * std::ldexp(1.0f, -8))) == 0xbf82u);  // the same, negative: symmetric
  CHECK(to_bits(from_bits(0xbf808000u)) == 0xbf80u);
  // A tie whose rounding up carries into the exponent: 2 - 2^-8 is halfway between 2 - 2^-7 (odd
  // significand 0x7f) and 2 (even).
  CHECK(to_bits(2.0f - std::ldexp(1.0f, -8)) == 0x4000u);
  // Values that are bfloat16 already do not move; 0.1f does, to the nearer neighbour.
  CHECK(to_bits(3.140625f) == 0x4049u);
  CHECK(to_float(to_bfloat16(0.1f)) == 0.10009765625f);
  CHECK(round_to_bfloat16(0.1f) == 0.10009765625f);
}

TEST_CASE("bfloat16 rounding agrees with a reference in double on every bfloat16 interval", "[autocast][bfloat16]") {
  // For every bfloat16 bit pattern below infinity, both signs, the float values at and next to the
  // interval's ends and its middle: 0 (exact), 1, the tie -1, the tie, the tie +1, the last.
  const std::uint32_t lows[] = {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x4000u, 0xc000u};
  std::size_t mismatches = 0, checked = 0;
  for (std::uint32_t hi = 0; hi < 0x7f80u; ++hi) {
    for (const std::uint32_t sign : {0x0u, 0x80000000u}) {
      for (const std::uint32_t low : lows) {
        const float f = from_bits(sign | (hi << 16) | low);
        const std::uint16_t want = reference_bits(f);
        const std::uint16_t got = to_bits(f);
        ++checked;
        if (got != want) {
          if (++mismatches <= 5)
            FAIL_CHECK("float bits " << std::hex << bits_of(f) << ": got " << got << ", want " << want);
        }
        if (round_to_bfloat16(f) != to_float(bfloat16{want}) && mismatches <= 5)
          FAIL_CHECK("round_to_bfloat16 of float bits " << std::hex << bits_of(f));
      }
    }
  }
  CHECK(checked == 0x7f80u * 2 * 8);
  CHECK(mismatches == 0);
}

TEST_CASE("bfloat16 keeps NaN a quiet NaN, infinities infinite, and overflows to infinity", "[autocast][bfloat16]") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(to_bits(inf) == 0x7f80u);
  CHECK(to_bits(-inf) == 0xff80u);
  CHECK(std::isinf(to_float(bfloat16{0x7f80u})));
  CHECK(to_float(bfloat16{0xff80u}) == -inf);
  // NaN: quiet NaN, sign kept, never infinity, also when the payload is all in the low 16 bits
  // (truncation would give infinity there, and rounding up would carry into the sign).
  const std::uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7f80ffffu,
                                0x7fbf0000u, 0x7fffffffu, 0xffffffffu, 0x7f817fffu, 0x7fa00000u};
  for (const std::uint32_t n : nans) {
    INFO("float bits " << std::hex << n);
    const float f = from_bits(n);
    REQUIRE(std::isnan(f));
    const std::uint16_t b = to_bits(f);
    CHECK(is_nan_bits(b));
    CHECK((b & 0x0040u) != 0);  // quiet
    CHECK((b & 0x8000u) == ((n >> 16) & 0x8000u));
    CHECK(std::isnan(to_float(bfloat16{b})));
    CHECK(std::isnan(round_to_bfloat16(f)));
  }
  CHECK(std::isnan(round_to_bfloat16(std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isnan(round_to_bfloat16(std::numeric_limits<float>::signaling_NaN())));
  // The largest finite bfloat16 is 0x7f7f (3.3895e38); floats from it + half an ulp (0x7f7f8000, a
  // tie with an odd significand) round to infinity, as does FLT_MAX; just below stays finite.
  CHECK(to_bits(from_bits(0x7f7f7fffu)) == 0x7f7fu);
  CHECK(to_bits(from_bits(0x7f7f8000u)) == 0x7f80u);
  CHECK(to_bits(std::numeric_limits<float>::max()) == 0x7f80u);
  CHECK(to_bits(-std::numeric_limits<float>::max()) == 0xff80u);
  CHECK(to_bits(from_bits(0xff7f7fffu)) == 0xff7fu);
  CHECK(round_to_bfloat16(std::numeric_limits<float>::max()) == inf);
  CHECK(to_float(bfloat16{0x7f7fu}) == std::ldexp(255.0f, 120));
}

TEST_CASE("bfloat16 subnormals and signed zeros", "[autocast][bfloat16]") {
  // Zeros keep their sign both ways.
  CHECK(to_bits(0.0f) == 0x0000u);
  CHECK(to_bits(-0.0f) == 0x8000u);
  CHECK(std::signbit(to_float(bfloat16{0x8000u})));
  CHECK(to_float(bfloat16{0x8000u}) == 0.0f);
  CHECK(std::signbit(round_to_bfloat16(-0.0f)));
  // Float subnormals below half the smallest bfloat16 subnormal (2^-133) flush to a zero of their sign;
  // the tie at exactly half goes to the even 0; just above it, to 2^-133.
  CHECK(to_bits(from_bits(0x00000001u)) == 0x0000u);
  CHECK(to_bits(from_bits(0x80000001u)) == 0x8000u);
  CHECK(std::signbit(round_to_bfloat16(from_bits(0x80000001u))));
  CHECK(to_bits(from_bits(0x00008000u)) == 0x0000u);
  CHECK(to_bits(from_bits(0x00008001u)) == 0x0001u);
  CHECK(to_bits(from_bits(0x00018000u)) == 0x0002u);  // tie, odd -> even
  CHECK(to_float(bfloat16{0x0001u}) == std::ldexp(1.0f, -133));
  CHECK(to_float(bfloat16{0x807fu}) == -std::ldexp(127.0f, -133));
  // The largest subnormal rounds up into the smallest normal (2^-126) across the exponent boundary.
  CHECK(to_bits(from_bits(0x007fffffu)) == 0x0080u);
  CHECK(to_float(bfloat16{0x0080u}) == std::numeric_limits<float>::min());
  CHECK(to_bits(from_bits(0x007f7fffu)) == 0x007fu);
}

TEST_CASE("every bfloat16 value converts to float exactly and back to itself", "[autocast][bfloat16]") {
  std::size_t nan_patterns = 0;
  for (std::uint32_t b = 0; b <= 0xffffu; ++b) {
    const bfloat16 v{static_cast<std::uint16_t>(b)};
    const float f = to_float(v);
    // Exact: the float is the bfloat16's bits followed by 16 zero bits.
    if (bits_of(f) != (b << 16)) FAIL_CHECK("to_float of " << std::hex << b);
    const std::uint16_t back = to_bfloat16(f).bits;
    if (is_nan_bits(static_cast<std::uint16_t>(b))) {
      ++nan_patterns;
      // NaN stays NaN of the same sign and payload, quieted (signalling ones get the quiet bit).
      if (back != (b | 0x0040u)) FAIL_CHECK("NaN " << std::hex << b << " came back as " << back);
    } else if (back != b) {
      FAIL_CHECK(std::hex << b << " came back as " << back);
    }
    if (!is_nan_bits(static_cast<std::uint16_t>(b)) && bits_of(round_to_bfloat16(f)) != (b << 16))
      FAIL_CHECK("round_to_bfloat16 moved " << std::hex << b);
  }
  CHECK(nan_patterns == 2 * 127);
}

TEST_CASE("the bulk bfloat16 conversions equal the scalar ones", "[autocast][bfloat16]") {
  std::vector<float> in;
  for (std::uint32_t hi = 0; hi <= 0xffffu; hi += 7)
    for (const std::uint32_t low : {0x0000u, 0x7fffu, 0x8000u, 0x8001u, 0xc0deu})
      in.push_back(from_bits((hi << 16) | low));
  std::vector<bfloat16> half(in.size());
  to_bfloat16(in.data(), half.data(), in.size());
  std::vector<float> back(in.size());
  to_float(half.data(), back.data(), half.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    bad += half[i].bits != to_bfloat16(in[i]).bits;
    bad += bits_of(back[i]) != bits_of(to_float(half[i]));
  }
  CHECK(bad == 0);
  to_bfloat16(in.data(), half.data(), 0);  // n = 0 touches nothing
  to_float(half.data(), back.data(), 0);
}
