// The command line of train_translate: training (no subcommand), `evaluate` and `translate`. Exit codes:
// 0 done, 1 a runtime failure (unreadable run files), 2 a bad command line or setting (one line naming
// the flag), 130 stopped by Ctrl-C.
#pragma once

#include <istream>
#include <ostream>

#include "examples/common/parallel.hpp"

namespace translate {

// Results go to out, progress and errors to err; translate reads lines from in when given no text.
// interactive: draw the progress bar in place (stderr is a terminal). parallel: data-parallel training
// under mpirun (main.cpp; the default is one process); rank 0 alone prints and writes files; the
// subcommands run in one process only.
int run_cli(int argc, const char* const* argv, std::istream& in, std::ostream& out, std::ostream& err, bool interactive,
            const examples::Parallel& parallel = {});

}  // namespace translate
