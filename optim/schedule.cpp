#include "tapegrad/optim/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tapegrad::optim {

namespace {

void check_lr(const char* schedule, const char* what, double lr) {
  if (!(lr >= 0.0) || !std::isfinite(lr)) {
    throw std::invalid_argument(fmt::format("{}: {} must be finite and >= 0, got {}", schedule, what, lr));
  }
}

void check_at_least(const char* schedule, const char* what, std::int64_t value, std::int64_t least) {
  if (value < least) {
    throw std::invalid_argument(fmt::format("{}: {} must be >= {}, got {}", schedule, what, least, value));
  }
}

void check_step(const char* schedule, std::int64_t step) { check_at_least(schedule, "step", step, 0); }

void check_warmup_total(const char* schedule, std::int64_t total, std::int64_t warmup) {
  check_at_least(schedule, "warmup_steps", warmup, 0);
  if (total <= warmup) {
    throw std::invalid_argument(
        fmt::format("{}: total_steps ({}) must be greater than warmup_steps ({})", schedule, total, warmup));
  }
}

double warmup_fraction(std::int64_t step, std::int64_t warmup) {
  return static_cast<double>(step) / static_cast<double>(warmup);
}

}  // namespace

LinearWarmup::LinearWarmup(double base_lr, std::int64_t warmup_steps) : base_lr_(base_lr), warmup_(warmup_steps) {
  check_lr("LinearWarmup", "base_lr", base_lr);
  check_at_least("LinearWarmup", "warmup_steps", warmup_steps, 0);
}

double LinearWarmup::operator()(std::int64_t step) const {
  check_step("LinearWarmup", step);
  if (step >= warmup_) return base_lr_;
  return base_lr_ * warmup_fraction(step, warmup_);
}

LinearDecay::LinearDecay(double base_lr, std::int64_t total_steps, std::int64_t warmup_steps)
    : base_lr_(base_lr), total_(total_steps), warmup_(warmup_steps) {
  check_lr("LinearDecay", "base_lr", base_lr);
  check_warmup_total("LinearDecay", total_steps, warmup_steps);
}

double LinearDecay::operator()(std::int64_t step) const {
  check_step("LinearDecay", step);
  if (step < warmup_) return base_lr_ * warmup_fraction(step, warmup_);
  if (step >= total_) return 0.0;
  return base_lr_ * static_cast<double>(total_ - step) / static_cast<double>(total_ - warmup_);
}

CosineDecay::CosineDecay(double base_lr, std::int64_t total_steps, std::int64_t warmup_steps, double min_lr)
    : base_lr_(base_lr), min_lr_(min_lr), total_(total_steps), warmup_(warmup_steps) {
  check_lr("CosineDecay", "base_lr", base_lr);
  check_lr("CosineDecay", "min_lr", min_lr);
  if (min_lr > base_lr) {
    throw std::invalid_argument(fmt::format("CosineDecay: min_lr ({}) must not exceed base_lr ({})", min_lr, base_lr));
  }
  check_warmup_total("CosineDecay", total_steps, warmup_steps);
}

double CosineDecay::operator()(std::int64_t step) const {
  check_step("CosineDecay", step);
  if (step < warmup_) return base_lr_ * warmup_fraction(step, warmup_);
  const double progress = std::min(1.0, static_cast<double>(step - warmup_) / static_cast<double>(total_ - warmup_));
  const double pi = std::acos(-1.0);
  return min_lr_ + (base_lr_ - min_lr_) * 0.5 * (1.0 + std::cos(pi * progress));
}

InverseSqrt::InverseSqrt(double base_lr, std::int64_t warmup_steps) : base_lr_(base_lr), warmup_(warmup_steps) {
  check_lr("InverseSqrt", "base_lr", base_lr);
  check_at_least("InverseSqrt", "warmup_steps", warmup_steps, 1);
}

double InverseSqrt::operator()(std::int64_t step) const {
  check_step("InverseSqrt", step);
  if (step < warmup_) return base_lr_ * warmup_fraction(step, warmup_);
  return base_lr_ * std::sqrt(static_cast<double>(warmup_) / static_cast<double>(step));
}

Noam::Noam(std::int64_t d_model, std::int64_t warmup_steps, double factor)
    : factor_(factor), d_model_(d_model), warmup_(warmup_steps) {
  check_at_least("Noam", "d_model", d_model, 1);
  check_at_least("Noam", "warmup_steps", warmup_steps, 1);
  check_lr("Noam", "factor", factor);
}

double Noam::operator()(std::int64_t step) const {
  check_step("Noam", step);
  if (step == 0) return 0.0;
  const double s = static_cast<double>(step);
  const double w = static_cast<double>(warmup_);
  return factor_ * std::pow(static_cast<double>(d_model_), -0.5) * std::min(std::pow(s, -0.5), s * std::pow(w, -1.5));
}

StepDecay::StepDecay(double base_lr, std::int64_t step_size, double gamma)
    : base_lr_(base_lr), gamma_(gamma), step_size_(step_size) {
  check_lr("StepDecay", "base_lr", base_lr);
  check_lr("StepDecay", "gamma", gamma);
  check_at_least("StepDecay", "step_size", step_size, 1);
}

double StepDecay::operator()(std::int64_t step) const {
  check_step("StepDecay", step);
  const std::int64_t decays = std::max<std::int64_t>(step - 1, 0) / step_size_;
  return base_lr_ * std::pow(gamma_, static_cast<double>(decays));
}

ExponentialDecay::ExponentialDecay(double base_lr, double gamma) : base_lr_(base_lr), gamma_(gamma) {
  check_lr("ExponentialDecay", "base_lr", base_lr);
  check_lr("ExponentialDecay", "gamma", gamma);
}

double ExponentialDecay::operator()(std::int64_t step) const {
  check_step("ExponentialDecay", step);
  return base_lr_ * std::pow(gamma_, static_cast<double>(std::max<std::int64_t>(step - 1, 0)));
}

}  // namespace tapegrad::optim
