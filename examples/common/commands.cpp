#include "examples/common/commands.hpp"

#include <fmt/format.h>

#include "tapegrad/train/interrupt.hpp"

namespace examples {

namespace tt = tapegrad::train;

int run_training(const Parallel& parallel, std::ostream& out, std::ostream& err, bool interactive,
                 const std::function<bool(std::ostream& out, std::ostream& err, bool interactive)>& train,
                 const std::filesystem::path& config_file, const std::function<std::filesystem::path()>& write_report) {
  tt::install_interrupt_handler();
  bool interrupted = false;
  try {
    std::ostream silent(nullptr);
    const bool rank0 = parallel.writes_files();
    interrupted = train(rank0 ? out : silent, rank0 ? err : silent, interactive && rank0);
  } catch (...) {
    tt::remove_interrupt_handler();
    throw;
  }
  tt::remove_interrupt_handler();
  if (parallel.writes_files() && std::filesystem::exists(config_file)) {
    out << fmt::format("report: {}\n", write_report().string()) << std::flush;
  }
  return interrupted ? tt::kInterruptedExitCode : 0;
}

void start_run_folder(const tt::RunDirectory& run, bool overwrite, const nlohmann::json& config, tt::Progress& progress,
                      const std::function<void()>& own_files) {
  for (const auto& name : run.start_new(overwrite)) {
    progress.message(fmt::format("--overwrite: removed the previous run's {} from {}", name, run.dir().string()));
  }
  if (own_files) own_files();
  run.write_config(config);
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
