// The three programs' command lines run in-process (cli_harness.hpp), as their tests call them: args
// without the program's name, input as stdin.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "examples/imdb/cli.hpp"
#include "examples/lm/cli.hpp"
#include "examples/translate/cli.hpp"
#include "tests/examples/cli_harness.hpp"

namespace tapegrad::testing {

inline CliResult run_imdb(std::vector<std::string> args, const std::string& input = "") {
  return run_cli_in_process([](auto&&... a) { return imdb::run_cli(a...); }, "train_imdb", std::move(args), input);
}

inline CliResult run_lm(std::vector<std::string> args, const std::string& input = "") {
  return run_cli_in_process([](auto&&... a) { return lm::run_cli(a...); }, "train_lm", std::move(args), input);
}

inline CliResult run_translate(std::vector<std::string> args, const std::string& input = "") {
  return run_cli_in_process([](auto&&... a) { return translate::run_cli(a...); }, "train_translate", std::move(args),
                            input);
}

}  // namespace tapegrad::testing
