// train_lm: the language-model example's command-line program (see examples/lm/cli.hpp).
#include <iostream>

#include "examples/lm/cli.hpp"
#include "tapegrad/train/progress.hpp"

int main(int argc, char** argv) {
  return lm::run_cli(argc, argv, std::cin, std::cout, std::cerr, tapegrad::train::Progress::stderr_is_terminal());
}
