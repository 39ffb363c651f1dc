// What the programs' command lines share around their own work: --resume's settings taken from the run,
// the frame of the training command (Ctrl-C, rank 0 alone printing, the report afterwards), and the
// checks every subcommand makes.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "examples/common/flags.hpp"
#include "examples/common/parallel.hpp"
#include "examples/common/precision.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/train/errors.hpp"
#include "tapegrad/train/progress.hpp"
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

/// The settings checked (the program's `validate`), then against the run folder: a new run's folder
/// must be free (or --overwrite); a resumed run must hold `resume_files`, and keeps the precision it
/// started in and every setting that shapes it (check_resume_matches). Throws train::UsageError.
template <typename C>
C checked_against_run(const Flags<C>& flags, const C& settings, const tapegrad::train::RunDirectory& run,
                      std::initializer_list<const char*> resume_files,
                      std::optional<std::string> (*validate)(const C&)) {
  if (const auto problem = validate(settings)) throw tapegrad::train::UsageError(*problem);
  C config = settings;
  if (!config.resume) {
    run.check_new(config.overwrite);
    return config;
  }
  run.check_resumable(resume_files);
  const C saved = read_run_settings(flags, run, validate);
  // A run trains in one precision from start to end: the one it started in, wherever --precision auto
  // resolves now.
  config.precision_resolved = saved.precision_resolved;
  check_resume_matches(flags, config, saved, run.config());
  return config;
}

/// What every training does first: the settings checked against the run folder (checked_against_run),
/// the BLAS threads set, and the precision resolved and announced on progress (start_precision).
template <typename C>
C start_training(const Flags<C>& flags, const C& settings, const tapegrad::train::RunDirectory& run,
                 std::initializer_list<const char*> resume_files, std::optional<std::string> (*validate)(const C&),
                 tapegrad::train::Progress& progress) {
  C config = checked_against_run(flags, settings, run, resume_files, validate);
  tapegrad::set_num_threads(static_cast<int>(config.threads));
  config.precision_resolved = start_precision(config.precision, config.precision_resolved, config.resume, progress);
  return config;
}

/// The flags of a training's run itself, the same in every program: --resume, --overwrite and
/// --detect-anomaly (not saved).
template <typename C>
std::vector<Flag> run_flags() {
  return {
      flag("--resume", &C::resume,
           "continue the run in --out from its last checkpoint; the settings it keeps are the run's, and a flag "
           "that would change them is refused")
          .not_saved(),
      flag("--overwrite", &C::overwrite,
           "start a new run in --out even if it holds one, whose files wait in previous-run/ until the new run's "
           "first checkpoint (then deleted; put back if it stops before); without it a folder with a checkpoint or a "
           "model is refused")
          .not_saved(),
      flag("--detect-anomaly", &C::detect_anomaly,
           "check every op's output and gradients for NaN/inf and stop naming the op (slower)")
          .not_saved(),
  };
}

/// A new run's folder, once the data and the settings are known to work: created, the previous run's
/// files moved aside into previous-run/ with --overwrite (named on progress; the Trainer deletes them at
/// the new run's first checkpoint), the program's own files written (own_files: its vocabulary), then
/// config.json.
void start_run_folder(const tapegrad::train::RunDirectory& run, bool overwrite, const nlohmann::json& config,
                      tapegrad::train::Progress& progress, const std::function<void()>& own_files = {});

/// Before a training command reads anything of its run folder (a folder that does not exist yet has
/// nothing to settle): the process that writes the run's files settles what a killed one left there
/// (RunDirectory::settle: an overwritten run put back or deleted, the temporary files of killed saves
/// removed), a line on err for each thing done. Collective: every rank returns once it is done.
void settle_run_folder(const tapegrad::train::RunDirectory& run, const Parallel& parallel, std::ostream& err);

/// Trains the run in `run` through train(out, err, interactive), which returns whether it was
/// interrupted, with Ctrl-C stopping it between steps; ranks other than 0 train silently (their errors
/// still reach stderr through train::exit_code_of). A run started with --overwrite that fails or is
/// interrupted before its first checkpoint gets the previous run back (RunDirectory::restore_previous,
/// said on err). Then rank 0 writes the report once the run has a config.json (an interrupted run too):
/// write_report returns its path, printed as "report: PATH" (none when write_report is empty). Returns the exit code:
/// train::kInterruptedExitCode when interrupted, else 0.
int run_training(const Parallel& parallel, std::ostream& out, std::ostream& err, bool interactive,
                 const std::function<bool(std::ostream& out, std::ostream& err, bool interactive)>& train,
                 const tapegrad::train::RunDirectory& run, const std::function<std::filesystem::path()>& write_report);

/// The `report` subcommand of every program: run must hold config.json (else a train::UsageError
/// "<flag> DIR has no config.json"); every damaged line of its metrics.jsonl is named on err ("warning:
/// RUN/metrics.jsonl line 7: not a JSON object; skipped"), and a run that has trained (it holds a
/// checkpoint or a model) with no readable line left is a std::runtime_error naming the file (a run
/// still starting may have no line at all); then write_report writes the page, "report: PATH" on out.
/// Returns the exit code, 0.
int report_command(const tapegrad::train::RunDirectory& run, const std::function<std::filesystem::path()>& write_report,
                   std::ostream& out, std::ostream& err, const std::string& flag = "--run");

/// Before a subcommand of app runs: no training flag given (they live in option groups, which CLI11
/// keeps as unnamed subcommands) and one process only; else a train::UsageError naming the flag.
void check_subcommand(const CLI::App& app, const CLI::App& command, const Parallel& parallel);

}  // namespace examples
