// Data-parallel training of an example program under mpirun: what its training code is handed. The
// main() that hands it is examples/common/parallel_main.hpp; nothing here needs MPI, so the programs'
// libraries and tests build and run the same with or without it.
#pragma once

#include <functional>
#include <string>

#include "tapegrad/nn/module.hpp"
#include "tapegrad/train/replicas.hpp"

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

}  // namespace examples
