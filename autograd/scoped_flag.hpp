/// @file
/// ScopedFlag: the RAII shape shared by the guards of a global on/off switch (grad mode, anomaly
/// detection, autocast).
#pragma once

namespace tapegrad::detail {

/// Sets the switch that Get reads and Set writes to `value` while alive, then puts back the value it
/// found, so that scopes nest and an exception leaves the switch as it was.
template <bool (*Get)(), void (*Set)(bool)>
class ScopedFlag {
 public:
  explicit ScopedFlag(bool value) : previous_(Get()) { Set(value); }
  ~ScopedFlag() { Set(previous_); }
  ScopedFlag(const ScopedFlag&) = delete;
  ScopedFlag& operator=(const ScopedFlag&) = delete;

 private:
  bool previous_;
};

}  // namespace tapegrad::detail
