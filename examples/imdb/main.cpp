// train_imdb: the IMDb sentiment example's command-line program (see examples/imdb/cli.hpp).
#include <iostream>

#include "examples/imdb/allocator.hpp"
#include "examples/imdb/cli.hpp"
#include "examples/imdb/progress.hpp"

int main(int argc, char** argv) {
  imdb::keep_freed_memory();
  return imdb::run_cli(argc, argv, std::cin, std::cout, std::cerr, imdb::Progress::stderr_is_terminal());
}
