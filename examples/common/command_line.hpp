// Parsing a program's command line with CLI11 the way all the example programs answer it: --help (of
// the program or of the subcommand given) on stdout with exit 0, any other parse error as one line
// "<program>: <what> (see <program> --help)" on stderr with exit 2.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <string_view>

namespace examples {

/// Parses argv into app. Returns nothing when the program should go on, else the exit code after the
/// help or the error has been printed.
std::optional<int> parse_command_line(CLI::App& app, int argc, const char* const* argv, std::ostream& out,
                                      std::ostream& err, std::string_view program);

}  // namespace examples
