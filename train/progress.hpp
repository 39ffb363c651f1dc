/// @file
/// Training progress on stderr: on a terminal a bar per epoch redrawn in place (step/total, running
/// loss and accuracy, tokens/s, ETA); otherwise plain lines every log_every steps, for logs.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

#include "tapegrad/train/timing.hpp"

namespace tapegrad::train {

/// What the progress display shows after a step.
struct StepStats {
  std::size_t step_in_epoch = 0;   ///< steps done in this epoch (1 after its first)
  std::size_t steps_in_epoch = 0;  ///< its total
  std::int64_t global_step = 0;    ///< steps done since the start of training
  double loss = 0.0;               ///< running mean over the epoch so far
  double accuracy = 0.0;           ///< running, over the epoch so far
  double tokens_per_second = 0.0;  ///< over the epoch so far
  double lr = 0.0;                 ///< of the step just taken
  double epoch_seconds = 0.0;      ///< since the epoch began
};

/// Training progress on a stream: a bar redrawn in place on a terminal, plain lines otherwise.
class Progress {
 public:
  /// interactive: draw a bar redrawn with a carriage return (a terminal), else write a line every log_every steps.
  Progress(std::ostream& out, bool interactive, std::size_t log_every);

  void begin_epoch(std::int64_t epoch, std::int64_t epochs);  ///< epoch counts from 1
  void update(const StepStats& stats);
  /// Leaves the bar's last state on its own line.
  void end_epoch();
  /// A line of its own, not overwritten by the bar.
  void message(const std::string& line);

  /// True when stderr is a terminal.
  static bool stderr_is_terminal();

 private:
  void clear_bar();
  std::string bar_line(const StepStats& stats) const;

  std::ostream& out_;
  bool interactive_;
  std::size_t log_every_;
  std::int64_t epoch_ = 0, epochs_ = 0;
  bool bar_shown_ = false;
  std::size_t bar_width_ = 0;  ///< characters of the bar line drawn last
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace tapegrad::train
