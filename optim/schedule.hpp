/// @file
/// Learning-rate schedules: pure functions of the step number that work with any optimizer:
///   optimizer.set_lr(schedule(step)); optimizer.step();
/// Each is a small copyable object; call it with the step about to be taken (the first step is 1,
/// as in the Noam formula; step 0 is defined too and gives the value written below). A negative
/// step, or a bad constructor argument, throws std::invalid_argument naming the value.
#pragma once

#include <cstdint>
#include <functional>

namespace tapegrad::optim {

/// Any schedule, for code that takes one as a parameter.
using Schedule = std::function<double(std::int64_t step)>;

/// lr(step) = base_lr * min(1, step / warmup_steps), then constant at base_lr.
/// step 0 gives 0; warmup_steps = 0 gives base_lr at every step.
class LinearWarmup {
 public:
  LinearWarmup(double base_lr, std::int64_t warmup_steps);
  double operator()(std::int64_t step) const;

 private:
  double base_lr_;
  std::int64_t warmup_;
};

/// Linear warmup, then linear decay to 0 at total_steps (and 0 after it):
///   step < warmup_steps:  base_lr * step / warmup_steps
///   otherwise:            base_lr * max(0, (total_steps - step) / (total_steps - warmup_steps))
/// step 0 gives 0 if warmup_steps > 0, else base_lr. Needs 0 <= warmup_steps < total_steps.
class LinearDecay {
 public:
  LinearDecay(double base_lr, std::int64_t total_steps, std::int64_t warmup_steps = 0);
  double operator()(std::int64_t step) const;

 private:
  double base_lr_;
  std::int64_t total_, warmup_;
};

/// Linear warmup, then half a cosine from base_lr down to min_lr at total_steps (min_lr after it):
///   step < warmup_steps:  base_lr * step / warmup_steps
///   otherwise:            min_lr + (base_lr - min_lr) * (1 + cos(pi * p)) / 2,
///                         p = min(1, (step - warmup_steps) / (total_steps - warmup_steps))
/// step 0 gives 0 if warmup_steps > 0, else base_lr. Needs 0 <= warmup_steps < total_steps and
/// 0 <= min_lr <= base_lr.
class CosineDecay {
 public:
  CosineDecay(double base_lr, std::int64_t total_steps, std::int64_t warmup_steps = 0, double min_lr = 0.0);
  double operator()(std::int64_t step) const;

 private:
  double base_lr_, min_lr_;
  std::int64_t total_, warmup_;
};

/// Linear warmup, then decay with the inverse square root of the step:
///   step < warmup_steps:  base_lr * step / warmup_steps
///   otherwise:            base_lr * sqrt(warmup_steps / step)
/// Continuous at step = warmup_steps (both give base_lr); step 0 gives 0. Needs warmup_steps >= 1.
class InverseSqrt {
 public:
  InverseSqrt(double base_lr, std::int64_t warmup_steps);
  double operator()(std::int64_t step) const;

 private:
  double base_lr_;
  std::int64_t warmup_;
};

/// The original Transformer's schedule (Vaswani et al. 2017, "Noam"):
///   lr(step) = factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)
/// It rises linearly for warmup_steps steps, peaks at factor * (d_model * warmup_steps)^-0.5, then
/// decays as step^-0.5. step 0 gives 0 (the min's second term; the first is infinite there).
/// Needs d_model >= 1, warmup_steps >= 1 and factor >= 0.
class Noam {
 public:
  Noam(std::int64_t d_model, std::int64_t warmup_steps, double factor = 1.0);
  double operator()(std::int64_t step) const;

 private:
  double factor_;
  std::int64_t d_model_, warmup_;
};

/// torch.optim.lr_scheduler.StepLR stepped once per optimizer step: base_lr for the first step_size
/// steps, then times gamma every step_size steps:
///   lr(step) = base_lr * gamma^floor((step - 1) / step_size)   (step 0 gives base_lr, as step 1)
/// Needs step_size >= 1 and 0 <= gamma (finite).
class StepDecay {
 public:
  StepDecay(double base_lr, std::int64_t step_size, double gamma = 0.1);
  double operator()(std::int64_t step) const;

 private:
  double base_lr_, gamma_;
  std::int64_t step_size_;
};

/// torch.optim.lr_scheduler.ExponentialLR stepped once per optimizer step:
///   lr(step) = base_lr * gamma^(step - 1)   (step 0 gives base_lr, as step 1)
/// Needs 0 <= gamma (finite).
class ExponentialDecay {
 public:
  ExponentialDecay(double base_lr, double gamma);
  double operator()(std::int64_t step) const;

 private:
  double base_lr_, gamma_;
};

}  // namespace tapegrad::optim
