/// @file
/// Timing for training programs: a stopwatch on the steady clock, and durations and rates as the
/// progress lines and summaries print them.
#pragma once

#include <chrono>
#include <string>

namespace tapegrad::train {

/// Seconds elapsed since start on the steady clock.
double seconds_since(std::chrono::steady_clock::time_point start);

/// Measures wall time from its construction (or the last restart()).
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const { return seconds_since(start_); }  ///< since the start
  void restart() { start_ = std::chrono::steady_clock::now(); }

 private:
  std::chrono::steady_clock::time_point start_;
};

/// "0:07", "12:34", "1:02:03"; "?" for a negative or non-finite value.
std::string format_duration(double seconds);
/// "950", "21.3k", "1.25M".
std::string format_rate(double per_second);

}  // namespace tapegrad::train
