// The training progress display: plain lines for logs, a redrawn bar on a terminal, durations, rates.
#include <catch2/catch.hpp>
#include <sstream>

#include "tapegrad/train/progress.hpp"

TEST_CASE("train_imdb progress: plain lines every log-every steps, durations and rates", "[imdb]") {
  std::ostringstream out;
  tapegrad::train::Progress progress(out, false, 2);
  progress.begin_epoch(1, 3);
  tapegrad::train::StepStats s;
  s.steps_in_epoch = 5;
  for (std::size_t step = 1; step <= 5; ++step) {
    s.step_in_epoch = step;
    s.global_step = static_cast<std::int64_t>(step);
    progress.update(s);
  }
  progress.end_epoch();
  // Steps 2 and 4, and the last one.
  const std::string text = out.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == 3);
  CHECK(text.rfind("epoch 1/3 step 2/5", 0) == 0);
  CHECK(text.find("step 5/5") != std::string::npos);
  CHECK(text.find('\r') == std::string::npos);

  std::ostringstream tty;
  tapegrad::train::Progress bar(tty, true, 2);
  bar.begin_epoch(2, 3);
  s.step_in_epoch = 5;
  bar.update(s);
  bar.end_epoch();
  CHECK(tty.str().rfind("\repoch 2/3 [########################] 5/5", 0) == 0);

  CHECK(tapegrad::train::format_duration(7) == "0:07");
  CHECK(tapegrad::train::format_duration(754) == "12:34");
  CHECK(tapegrad::train::format_duration(3723) == "1:02:03");
  CHECK(tapegrad::train::format_rate(950) == "950");
  CHECK(tapegrad::train::format_rate(21340) == "21.3k");
  CHECK(tapegrad::train::format_rate(1.25e6) == "1.25M");
}

// ---- explain and report ----
