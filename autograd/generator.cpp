#include "tapegrad/autograd/generator.hpp"

#include <cmath>
#include <numeric>
#include <stdexcept>

namespace tapegrad {

namespace {
std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

Generator::Generator(std::uint64_t seed) { manual_seed(seed); }

void Generator::manual_seed(std::uint64_t seed) {
  state_ = State{};
  for (auto& word : state_.s) word = splitmix64(seed);
}

std::uint64_t Generator::next_u64() {
  auto& s = state_.s;
  const std::uint64_t result = rotl(s[1] * 5, 7) * 9;
  const std::uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double Generator::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double Generator::normal() {
  if (state_.has_spare_normal) {
    state_.has_spare_normal = false;
    return state_.spare_normal;
  }
  // 1 - uniform() lies in (0, 1], so the log is finite.
  const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform()));
  const double angle = 2.0 * M_PI * uniform();
  state_.spare_normal = radius * std::sin(angle);
  state_.has_spare_normal = true;
  return radius * std::cos(angle);
}

std::uint64_t Generator::randint(std::uint64_t n) {
  if (n == 0) throw std::invalid_argument("Generator::randint: n must be positive, got 0");
  // Rejection sampling keeps the draw unbiased for any n.
  const std::uint64_t limit = (~std::uint64_t{0}) - (~std::uint64_t{0}) % n;
  std::uint64_t x;
  do {
    x = next_u64();
  } while (x >= limit);
  return x % n;
}

std::vector<std::size_t> Generator::permutation(std::size_t n) {
  std::vector<std::size_t> p(n);
  std::iota(p.begin(), p.end(), std::size_t{0});
  for (std::size_t i = n; i > 1; --i) std::swap(p[i - 1], p[randint(i)]);
  return p;
}

}  // namespace tapegrad
