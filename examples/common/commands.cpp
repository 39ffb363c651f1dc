#include "examples/common/commands.hpp"

#include <fmt/format.h>

#include "tapegrad/train/interrupt.hpp"
#include "tapegrad/train/metrics.hpp"

namespace examples {

namespace tt = tapegrad::train;

namespace {

// What report checks of a run's metrics.jsonl before drawing it (report_command).
void check_run_metrics(const tt::RunDirectory& run, std::ostream& err) {
  std::vector<tt::DamagedLine> damaged;
  const auto lines = tt::read_metrics(run.metrics(), &damaged);
  for (const auto& d : damaged) {
    err << fmt::format("warning: {} line {}: {}; skipped\n", run.metrics().string(), d.line, d.problem);
  }
  if (!lines.empty()) return;
  for (const auto& trained : {run.checkpoint(), run.model()}) {
    if (!std::filesystem::exists(trained)) continue;
    throw std::runtime_error(fmt::format(
        "{}: {}, yet the run has trained ({} exists): its log is lost or damaged, so there is nothing to report",
        run.metrics().string(), std::filesystem::exists(run.metrics()) ? "no readable line" : "missing",
        trained.string()));
  }
}

// The previous run back in place of one that stopped before its first checkpoint (rank 0); whether it was.
bool put_back_previous(const Parallel& parallel, const tt::RunDirectory& run, std::ostream& err) {
  if (!parallel.writes_files()) return false;
  try {
    const auto names = run.restore_previous();
    if (names.empty()) return false;
    err << fmt::format(
               "--overwrite: this run stopped before its first checkpoint, so the previous run's {} are back "
               "in {}\n",
               fmt::join(names, ", "), run.dir().string())
        << std::flush;
    return true;
  } catch (const std::exception& e) {
    err << fmt::format("--overwrite: the previous run could not be put back from {}: {}\n", run.previous().string(),
                       e.what())
        << std::flush;
    return false;
  }
}

}  // namespace

void settle_run_folder(const tt::RunDirectory& run, const Parallel& parallel, std::ostream& err) {
  if (parallel.writes_files() && std::filesystem::is_directory(run.dir())) {
    for (const auto& line : run.settle()) err << line << '\n';
    err << std::flush;
  }
  // The other ranks read the folder next (--resume): not before rank 0 has put it in order.
  if (parallel.barrier) parallel.barrier();
}

int run_training(const Parallel& parallel, std::ostream& out, std::ostream& err, bool interactive,
                 const std::function<bool(std::ostream& out, std::ostream& err, bool interactive)>& train,
                 const tt::RunDirectory& run, const std::function<std::filesystem::path()>& write_report) {
  tt::install_interrupt_handler();
  bool interrupted = false;
  try {
    std::ostream silent(nullptr);
    const bool rank0 = parallel.writes_files();
    interrupted = train(rank0 ? out : silent, rank0 ? err : silent, interactive && rank0);
  } catch (...) {
    tt::remove_interrupt_handler();
    put_back_previous(parallel, run, err);
    throw;
  }
  tt::remove_interrupt_handler();
  const bool restored = interrupted && put_back_previous(parallel, run, err);
  if (write_report && parallel.writes_files() && !restored && std::filesystem::exists(run.config())) {
    out << fmt::format("report: {}\n", write_report().string()) << std::flush;
  }
  return interrupted ? tt::kInterruptedExitCode : 0;
}

void start_run_folder(const tt::RunDirectory& run, bool overwrite, const nlohmann::json& config, tt::Progress& progress,
                      const std::function<void()>& own_files) {
  if (const auto moved = run.start_new(overwrite); !moved.empty()) {
    progress.message(
        fmt::format("--overwrite: the previous run's {} moved to {}, to be deleted once this run has its "
                    "first checkpoint (and put back if it stops before)",
                    fmt::join(moved, ", "), run.previous().string()));
  }
  if (own_files) own_files();
  run.write_config(config);
}

int report_command(const tt::RunDirectory& run, const std::function<std::filesystem::path()>& write_report,
                   std::ostream& out, std::ostream& err, const std::string& flag) {
  run.check_has({tt::RunDirectory::kConfig}, flag);
  check_run_metrics(run, err);
  out << fmt::format("report: {}\n", write_report().string());
  return 0;
}

void check_subcommand(const CLI::App& app, const CLI::App& command, const Parallel& parallel) {
  for (const CLI::App* group : app.get_subcommands([](const CLI::App* sub) { return sub->get_name().empty(); })) {
    for (const CLI::Option* option : group->get_options()) {
      if (option->count() == 0) continue;
      throw tt::UsageError(fmt::format("{} is a training flag; put {} flags after the subcommand", option->get_name(),
                                       command.get_name()));
    }
  }
  if (parallel.size > 1) {
    throw tt::UsageError(fmt::format("{} runs in one process: start it without mpirun", command.get_name()));
  }
}

}  // namespace examples
