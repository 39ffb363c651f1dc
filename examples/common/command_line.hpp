// Parsing a program's command line with CLI11 the way all the example programs answer it: --help (of
// the program or of the subcommand given) on stdout with exit 0, any other parse error as one line
// "<program>: <what> (see <program> --help)" on stderr with exit 2.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <string_view>

#include "examples/common/precision.hpp"

namespace examples {

/// Parses argv into app. Returns nothing when the program should go on, else the exit code after the
/// help or the error has been printed. Every numeric option of app and its subcommands is read
/// strictly first, where CLI11 alone would not: an INT or UINT value must be a decimal integer within
/// 64 bits ("99999999999999999999" was clamped to 2^63 - 1, "010" read as octal 8) and a UINT one
/// not negative ("-1" became 2^64 - 1); a FLOAT value must be within a double's range ("1e999"). The
/// error names the flag and the value.
std::optional<int> parse_command_line(CLI::App& app, int argc, const char* const* argv, std::ostream& out,
                                      std::ostream& err, std::string_view program);

/// --threads (BLAS threads) and --precision of a subcommand that runs a model, into args.threads and
/// args.precision.
template <typename Args>
void add_threads_and_precision(CLI::App& subcommand, Args& args) {
  subcommand.add_option("--threads", args.threads, "BLAS threads")->capture_default_str();
  subcommand.add_option("--precision", args.precision, kSubcommandPrecisionHelp);
}

}  // namespace examples
