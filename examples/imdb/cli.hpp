// The command line of train_imdb: training (no subcommand), `evaluate` and `predict`. Exit codes: 0 done,
// 1 a runtime failure (unreadable data or run files), 2 a bad command line or setting (one line naming
// the flag and the value), 130 stopped by Ctrl-C.
#pragma once

#include <istream>
#include <ostream>

#include "examples/imdb/train.hpp"

namespace imdb {

// Results go to out, progress and errors to err; predict reads reviews from in when given none.
// interactive: draw the progress bar in place (stderr is a terminal). parallel: data-parallel training
// under mpirun (main.cpp; the default is one process); the subcommands run in one process only.
int run_cli(int argc, const char* const* argv, std::istream& in, std::ostream& out, std::ostream& err, bool interactive,
            const Parallel& parallel = {});

}  // namespace imdb
