// The main() of an example program that trains data-parallel under mpirun: included by the program's
// main.cpp alone, which the build compiles with TAPEGRAD_WITH_MPI where CMake finds MPI (and links
// tapegrad::distributed); without it the program runs as one process.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>

#include "examples/common/parallel.hpp"
#include "tapegrad/train/errors.hpp"
#ifdef TAPEGRAD_WITH_MPI
#include <fmt/format.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "tapegrad/distributed/communicator.hpp"
#include "tapegrad/distributed/trainer.hpp"
#endif

namespace examples {

/// Output that could not be written is an error, as for cat and sort: a program whose answers went nowhere
/// (a full disk, a closed stdout) ends with exit code 1 (or the run's own failing code) and a line on
/// stderr, never 0.
inline int check_output(const char* program, int code) {
  errno = 0;
  std::cout.flush();
  const bool failed = !std::cout.good() || std::fflush(stdout) != 0 || std::ferror(stdout);
  if (!failed) return code;
  const int error = errno;
  std::cerr << program << ": cannot write the output" << (error != 0 ? std::string(": ") + std::strerror(error) : "")
            << std::endl;
  return code == 0 ? 1 : code;
}

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
      parallel.attach = [&](tapegrad::nn::Module<float>& model, int zero_stage) {
        training =
            std::make_unique<dist::DataParallelTraining<float>>(model, world, dist::DataParallelOptions{}, zero_stage);
        return training->replicas();
      };
      parallel.shard_optimizer = [&](std::vector<tapegrad::Tensor<float>> params, const OptimizerFactory& make) {
        if (!training) throw std::logic_error("Parallel::optimizer: attach the model first");
        return training->optimizer(std::move(params), make);
      };
      parallel.verify_same = [&](const std::string& what, const std::string& text) {
        dist::verify_same_on_all_ranks(world, what, text);
      };
      parallel.barrier = [&] { world.barrier(); };
      const int code = check_output(program, run(parallel));
      if (code != 0 && code != tapegrad::train::kInterruptedExitCode && world.size() > 1) {
        dist::abort_job(fmt::format("{} failed (exit code {})", program, code), code);
      }
      return code;
    });
  }
#else
  (void)argc, (void)argv, (void)program;
#endif
  return check_output(program, run(Parallel{}));
}

}  // namespace examples
