// What the programs' command lines share around their own work: --resume's settings taken from the run,
// the frame of the training command (Ctrl-C, rank 0 alone printing, the report afterwards), and the
// checks every subcommand makes.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>

#include "examples/common/flags.hpp"
#include "examples/common/parallel.hpp"
#include "tapegrad/train/errors.hpp"
#include "tapegrad/train/run_directory.hpp"

namespace examples {

/// --resume: `given` (the command line's settings) with the saved run's value of every saved flag that
/// the command line did not give and that may not change on resume.
template <typename C>
C with_saved_settings(const Flags<C>& flags, const CLI::App& app, const C& given, const C& saved) {
  return flags.with_saved(given, saved, [&](const Flag& f) { return given_on(app, f); });
}

/// Throws train::UsageError "--resume: --lr 0.5 differs from 0.02 in FILE" for the first flag that
/// config sets otherwise than the saved run (config_file) where --resume may not change it.
template <typename C>
void check_resume_matches(const Flags<C>& flags, const C& config, const C& saved,
                          const std::filesystem::path& config_file) {
  if (const auto conflict = flags.resume_conflict(config, saved)) {
    throw tapegrad::train::UsageError("--resume: " + *conflict + " in " + config_file.string());
  }
}

/// A run's config.json, read strictly (Flags::from_json) and checked (`validate`, the program's);
/// throws std::runtime_error naming the file and the key or setting at fault (it describes a run: not
/// the command line's fault, so not a UsageError).
template <typename C>
C read_run_settings(const Flags<C>& flags, const tapegrad::train::RunDirectory& run,
                    std::optional<std::string> (*validate)(const C&)) {
  C config;
  try {
    config = flags.from_json(run.read_config());
  } catch (const std::runtime_error& e) {
    // RunDirectory::read_config names the file already; from_json names only the key.
    const std::string message = e.what();
    if (message.rfind(run.config().string(), 0) == 0) throw;
    throw std::runtime_error(run.config().string() + ": " + message);
  }
  if (const auto problem = validate(config)) throw std::runtime_error(run.config().string() + ": " + *problem);
  return config;
}

/// Trains through train(out, err, interactive), which returns whether it was interrupted, with Ctrl-C
/// stopping it between steps; ranks other than 0 train silently (their errors still reach stderr
/// through train::exit_code_of). Then rank 0 writes the report once the run has a config.json (an
/// interrupted run too): write_report returns its path, printed as "report: PATH". Returns the exit
/// code: train::kInterruptedExitCode when interrupted, else 0.
int run_training(const Parallel& parallel, std::ostream& out, std::ostream& err, bool interactive,
                 const std::function<bool(std::ostream& out, std::ostream& err, bool interactive)>& train,
                 const std::filesystem::path& config_file, const std::function<std::filesystem::path()>& write_report);

/// Before a subcommand of app runs: no training flag given (they live in option groups, which CLI11
/// keeps as unnamed subcommands) and one process only; else a train::UsageError naming the flag.
void check_subcommand(const CLI::App& app, const CLI::App& command, const Parallel& parallel);

}  // namespace examples
