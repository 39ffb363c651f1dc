#include "tapegrad/train/interrupt.hpp"

#include <csignal>

namespace tapegrad::train {

namespace {

volatile std::sig_atomic_t requested = 0;

extern "C" void on_sigint(int) {
  requested = 1;
  std::signal(SIGINT, SIG_DFL);
}

}  // namespace

void install_interrupt_handler() {
  requested = 0;
  std::signal(SIGINT, on_sigint);
}

void remove_interrupt_handler() { std::signal(SIGINT, SIG_DFL); }

bool interrupt_requested() { return requested != 0; }

void set_interrupt_requested(bool value) { requested = value ? 1 : 0; }

}  // namespace tapegrad::train
