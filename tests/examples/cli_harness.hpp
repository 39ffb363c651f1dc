// Runs a program's command line in-process, as its main() would, with stdin given and stdout/stderr
// captured, or a shell command in a child process: the harness the programs' tests share.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
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

// What a program says, refusing it, when --resume of the run in `run` is given `flag value` where its
// config.json holds `saved`.
inline std::string resume_conflict(const std::string& program, const std::string& flag, const std::string& value,
                                   const std::string& saved, const std::filesystem::path& run) {
  return program + ": --resume: " + flag + " " + value + " differs from " + saved + " in " +
         (run / "config.json").string() + "\n";
}

// Runs `command` with /bin/sh (popen), returning its exit code (-1 when it did not exit) and stdout.
inline std::pair<int, std::string> shell(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("popen failed for: " + command);
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace tapegrad::testing
