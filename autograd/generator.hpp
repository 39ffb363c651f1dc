/// @file
/// A seeded, portable random number generator (xoshiro256**): the same seed gives the same numbers on
/// every machine and compiler, unlike std::*_distribution, so runs and checkpoints are reproducible.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace tapegrad {

/// xoshiro256** seeded through splitmix64, with uniform and normal draws (Box-Muller) and a
/// saveable state.
class Generator {
 public:
  /// Everything needed to continue the stream exactly (saved in training checkpoints).
  struct State {
    std::array<std::uint64_t, 4> s{};
    bool has_spare_normal = false;
    double spare_normal = 0.0;
  };

  explicit Generator(std::uint64_t seed = 0);

  void manual_seed(std::uint64_t seed);
  std::uint64_t next_u64();
  /// Uniform in [0, 1) with 53 random bits.
  double uniform();
  /// Standard normal (Box-Muller; the second value of each pair is kept for the next call).
  double normal();
  /// Uniform integer in [0, n); n must be > 0.
  std::uint64_t randint(std::uint64_t n);
  /// Fisher-Yates permutation of 0..n-1.
  std::vector<std::size_t> permutation(std::size_t n);

  State state() const { return state_; }
  void set_state(const State& state) { state_ = state; }

 private:
  State state_;
};

}  // namespace tapegrad
