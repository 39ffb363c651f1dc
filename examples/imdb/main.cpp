// train_imdb: the IMDb sentiment example's command-line program (see examples/imdb/cli.hpp).
#include <iostream>

#include "examples/imdb/cli.hpp"
#include "tapegrad/train/allocator.hpp"
#include "tapegrad/train/progress.hpp"

int main(int argc, char** argv) {
  tapegrad::train::keep_freed_memory();
  return imdb::run_cli(argc, argv, std::cin, std::cout, std::cerr, tapegrad::train::Progress::stderr_is_terminal());
}
