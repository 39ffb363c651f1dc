// train_lm: the language-model example's command-line program (see examples/lm/cli.hpp). Started by
// mpirun (in a build with MPI), it trains data-parallel: `mpirun -np 2 train_lm --threads 1 ...`.
#include <iostream>
#include <memory>

#include "examples/lm/cli.hpp"
#include "tapegrad/train/errors.hpp"
#include "tapegrad/train/progress.hpp"
#ifdef TAPEGRAD_WITH_MPI
#include <fmt/format.h>

#include "tapegrad/distributed/communicator.hpp"
#include "tapegrad/distributed/trainer.hpp"
#endif

int main(int argc, char** argv) {
  const bool interactive = tapegrad::train::Progress::stderr_is_terminal();
#ifdef TAPEGRAD_WITH_MPI
  namespace dist = tapegrad::distributed;
  if (dist::launched_by_mpirun()) {
    return dist::run(argc, argv, [&](const dist::Communicator& world) {
      std::unique_ptr<dist::DataParallelTraining<float>> training;
      lm::Parallel parallel;
      parallel.rank = world.rank();
      parallel.size = world.size();
      parallel.attach = [&](tapegrad::nn::Module<float>& model) {
        training = std::make_unique<dist::DataParallelTraining<float>>(model, world);
        return training->replicas();
      };
      parallel.verify_same = [&](const std::string& what, const std::string& text) {
        dist::verify_same_on_all_ranks(world, what, text);
      };
      const int code = lm::run_cli(argc, argv, std::cin, std::cout, std::cerr, interactive, parallel);
      // A rank that failed on its own (its message is printed) must not leave the others waiting in a
      // collective; Ctrl-C is agreed on by all ranks, which then end normally.
      if (code != 0 && code != tapegrad::train::kInterruptedExitCode && world.size() > 1) {
        dist::abort_job(fmt::format("train_lm failed (exit code {})", code), code);
      }
      return code;
    });
  }
#endif
  return lm::run_cli(argc, argv, std::cin, std::cout, std::cerr, interactive);
}
