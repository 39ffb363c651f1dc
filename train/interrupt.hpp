/// @file
/// Ctrl-C during training: the first SIGINT only asks the loop to stop after the current step (so the
/// last complete checkpoint stays as it is); a second one kills the process as usual.
#pragma once

#include "tapegrad/train/errors.hpp"  // kInterruptedExitCode

namespace tapegrad::train {

/// Installs the handler; the request flag starts cleared.
void install_interrupt_handler();
/// Puts the default SIGINT action back.
void remove_interrupt_handler();
/// True once Ctrl-C has been pressed since install_interrupt_handler().
bool interrupt_requested();
/// For tests: behave as if Ctrl-C had been pressed (or clear that).
void set_interrupt_requested(bool requested);

}  // namespace tapegrad::train
