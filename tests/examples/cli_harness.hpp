// Runs a program's command line in-process, as its main() would, with stdin given and stdout/stderr
// captured: the harness both programs' tests share.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace tapegrad::testing {

struct CliResult {
  int code;
  std::string out, err;
};

// run_cli(argc, argv, in, out, err, interactive) is the program's entry point (imdb::run_cli,
// translate::run_cli); args exclude the program name.
template <typename RunCli>
CliResult run_cli_in_process(RunCli run_cli, const std::string& program, std::vector<std::string> args,
                             const std::string& input = "") {
  args.insert(args.begin(), program);
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::istringstream in(input);
  std::ostringstream out, err;
  const int code = run_cli(static_cast<int>(argv.size()), argv.data(), in, out, err, false);
  return {code, out.str(), err.str()};
}

}  // namespace tapegrad::testing
