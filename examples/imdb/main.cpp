// train_imdb: the IMDb sentiment example's command-line program (see examples/imdb/cli.hpp). Started
// by mpirun (in a build with MPI), it trains data-parallel: `mpirun -np 2 train_imdb --threads 1 ...`.
#include <iostream>

#include "examples/common/parallel_main.hpp"
#include "examples/imdb/cli.hpp"
#include "tapegrad/train/progress.hpp"

int main(int argc, char** argv) {
  const bool interactive = tapegrad::train::Progress::stderr_is_terminal();
  return examples::parallel_main(argc, argv, "train_imdb", [&](const examples::Parallel& parallel) {
    return imdb::run_cli(argc, argv, std::cin, std::cout, std::cerr, interactive, parallel);
  });
}
