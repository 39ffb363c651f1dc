// train_lm's command line: training by default (flags in groups like train_imdb's), and the
// subcommands generate, evaluate, bench and report.
#pragma once

#include <istream>
#include <ostream>

#include "examples/lm/train.hpp"

namespace lm {

// Exit codes: 0 done, 2 a bad flag or setting (one line naming it), 130 Ctrl-C, 1 anything else.
// parallel: data-parallel training under mpirun (main.cpp; the default is one process); the subcommands run in one
// process only.
int run_cli(int argc, const char* const* argv, std::istream& in, std::ostream& out, std::ostream& err, bool interactive,
            const Parallel& parallel = {});

}  // namespace lm
