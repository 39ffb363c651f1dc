// train_lm: the language-model example's command-line program (see examples/lm/cli.hpp). Started by
// mpirun (in a build with MPI), it trains data-parallel: `mpirun -np 2 train_lm --threads 1 ...`.
#include <iostream>

#include "examples/common/parallel_main.hpp"
#include "examples/lm/cli.hpp"
#include "tapegrad/train/progress.hpp"

int main(int argc, char** argv) {
  const bool interactive = tapegrad::train::Progress::stderr_is_terminal();
  return examples::parallel_main(argc, argv, "train_lm", [&](const examples::Parallel& parallel) {
    return lm::run_cli(argc, argv, std::cin, std::cout, std::cerr, interactive, parallel);
  });
}
