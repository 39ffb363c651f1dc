#include "tapegrad/train/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace tapegrad::train {

namespace {

constexpr int kBarCells = 24;
// A terminal redraw costs a write syscall; ten a second is smooth enough.
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);

}  // namespace

bool Progress::stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

Progress::Progress(std::ostream& out, bool interactive, std::size_t log_every)
    : out_(out), interactive_(interactive), log_every_(std::max<std::size_t>(1, log_every)) {}

void Progress::begin_epoch(std::int64_t epoch, std::int64_t epochs) {
  epoch_ = epoch;
  epochs_ = epochs;
  bar_shown_ = false;
  last_draw_ = {};
}

std::string Progress::bar_line(const StepStats& s) const {
  const double fraction = s.steps_in_epoch ? double(s.step_in_epoch) / double(s.steps_in_epoch) : 1.0;
  const int filled = static_cast<int>(fraction * kBarCells);
  const double eta =
      s.step_in_epoch ? s.epoch_seconds / double(s.step_in_epoch) * double(s.steps_in_epoch - s.step_in_epoch) : 0.0;
  return fmt::format("epoch {}/{} [{}{}] {}/{} loss {:.4f} acc {:.2f}% {} tok/s ETA {}", epoch_, epochs_,
                     std::string(filled, '#'), std::string(kBarCells - filled, '.'), s.step_in_epoch, s.steps_in_epoch,
                     s.loss, 100.0 * s.accuracy, format_rate(s.tokens_per_second), format_duration(eta));
}

void Progress::update(const StepStats& s) {
  if (interactive_) {
    const auto now = std::chrono::steady_clock::now();
    const bool last = s.step_in_epoch == s.steps_in_epoch;
    if (!last && bar_shown_ && now - last_draw_ < kRedrawInterval) return;
    last_draw_ = now;
    std::string line = bar_line(s);
    const std::size_t width = line.size();
    // Blank out what a longer previous line left behind.
    if (width < bar_width_) line += std::string(bar_width_ - width, ' ');
    bar_width_ = width;
    out_ << '\r' << line << std::flush;
    bar_shown_ = true;
    return;
  }
  if (s.step_in_epoch % log_every_ == 0 || s.step_in_epoch == s.steps_in_epoch) {
    out_ << fmt::format("epoch {}/{} step {}/{} (global {}) loss {:.4f} acc {:.2f}% lr {:.3g} {} tok/s elapsed {}\n",
                        epoch_, epochs_, s.step_in_epoch, s.steps_in_epoch, s.global_step, s.loss, 100.0 * s.accuracy,
                        s.lr, format_rate(s.tokens_per_second), format_duration(s.epoch_seconds))
         << std::flush;
  }
}

void Progress::clear_bar() {
  if (interactive_ && bar_shown_) out_ << '\r' << std::string(bar_width_, ' ') << '\r';
}

void Progress::end_epoch() {
  if (interactive_ && bar_shown_) out_ << '\n' << std::flush;
  bar_shown_ = false;
}

void Progress::message(const std::string& line) {
  clear_bar();
  out_ << line << '\n' << std::flush;
  bar_shown_ = false;
}

}  // namespace tapegrad::train
