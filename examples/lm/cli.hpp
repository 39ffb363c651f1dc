// train_lm's command line: training by default (flags in groups like train_imdb's), and the
// subcommands generate, evaluate and report.
#pragma once

#include <istream>
#include <ostream>

namespace lm {

// Exit codes: 0 done, 2 a bad flag or setting (one line naming it), 130 Ctrl-C, 1 anything else.
int run_cli(int argc, const char* const* argv, std::istream& in, std::ostream& out, std::ostream& err,
            bool interactive);

}  // namespace lm
