// The training loop's options from the flags every program takes: --log-every, --clip-norm, --resume, --accumulate,
// --precision (as the run resolved it) and --detect-anomaly (fields of the same names in each program's
// Config), with the program's epochs, steps, schedule and stopping rule.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "tapegrad/optim/schedule.hpp"
#include "tapegrad/train/loop.hpp"

namespace examples {

template <typename Config>
tapegrad::train::TrainerOptions trainer_options(const Config& c, std::int64_t epochs, std::int64_t steps_per_epoch,
                                                tapegrad::optim::Schedule schedule,
                                                const std::function<bool(std::int64_t step)>& stop_after_step) {
  tapegrad::train::TrainerOptions options;
  options.epochs = epochs;
  options.steps_per_epoch = steps_per_epoch;
  options.schedule = std::move(schedule);
  options.log_every = c.log_every;
  options.clip_norm = c.clip_norm;
  options.resume = c.resume;
  options.accumulate = c.accumulate;
  options.autocast = c.precision_resolved == "bf16";
  options.detect_anomaly = c.detect_anomaly;
  options.stop_after_step = stop_after_step;
  return options;
}

}  // namespace examples
