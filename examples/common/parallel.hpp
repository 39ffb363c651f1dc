// Data-parallel training of an example program under mpirun: what its training code is handed
// (Parallel), and the main() that hands it (parallel_main). Nothing here needs MPI unless the program
// is built with it (TAPEGRAD_WITH_MPI, set where CMake finds MPI): the programs' libraries and tests
// build and run the same without.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "tapegrad/nn/module.hpp"
#include "tapegrad/train/errors.hpp"
#include "tapegrad/train/replicas.hpp"
#ifdef TAPEGRAD_WITH_MPI
#include <fmt/format.h>

#include "tapegrad/distributed/communicator.hpp"
#include "tapegrad/distributed/trainer.hpp"
#endif

namespace examples {

/// This process's rank and the number of ranks, and `attach`, called on every rank once the model
/// exists, which wraps it for data-parallel training and returns the trainer's Replicas. The default is
/// one process. The programs keep --batch-size the global batch, cut into one part per rank, so that a
/// run's result does not depend on the number of ranks and --resume may use any number.
struct Parallel {
  int rank = 0, size = 1;
  std::function<tapegrad::train::Replicas(tapegrad::nn::Module<float>& model)> attach;
  /// Collective: throws on every rank, naming the ranks that differ, unless `text` is the same on all.
  std::function<void(const std::string& what, const std::string& text)> verify_same;
  bool writes_files() const { return rank == 0; }
};

/// A program's main: `run(Parallel{})` in one process; started by mpirun in a build with MPI, `run` on
/// every rank with that rank's Parallel, inside distributed::run (an exception on any rank ends the
/// whole job naming the rank). A rank whose run fails on its own (its message already printed) ends the
/// job too, so that no rank waits forever in a collective; Ctrl-C is agreed on by all ranks, which then
/// end normally.
inline int parallel_main(int argc, char** argv, const char* program, const std::function<int(const Parallel&)>& run) {
#ifdef TAPEGRAD_WITH_MPI
  namespace dist = tapegrad::distributed;
  if (dist::launched_by_mpirun()) {
    return dist::run(argc, argv, [&](const dist::Communicator& world) {
      std::unique_ptr<dist::DataParallelTraining<float>> training;
      Parallel parallel;
      parallel.rank = world.rank();
      parallel.size = world.size();
      parallel.attach = [&](tapegrad::nn::Module<float>& model) {
        training = std::make_unique<dist::DataParallelTraining<float>>(model, world);
        return training->replicas();
      };
      parallel.verify_same = [&](const std::string& what, const std::string& text) {
        dist::verify_same_on_all_ranks(world, what, text);
      };
      const int code = run(parallel);
      if (code != 0 && code != tapegrad::train::kInterruptedExitCode && world.size() > 1) {
        dist::abort_job(fmt::format("{} failed (exit code {})", program, code), code);
      }
      return code;
    });
  }
#else
  (void)argc, (void)argv, (void)program;
#endif
  return run(Parallel{});
}

}  // namespace examples
