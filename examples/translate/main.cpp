// train_translate: trains the encoder-decoder Transformer on numbers in English words <-> digits
// (datasets/numbers.hpp), then evaluates it on the test set; `evaluate`, `translate` and `report` reuse
// a run (see examples/translate/cli.hpp).
//
//   train_translate [--direction words2digits|digits2words] [--out DIR] [flags]   train, then test
//   train_translate --out DIR --resume                                             continue a run
//   train_translate evaluate --out DIR [--beam K] [--split valid|test]
//   train_translate translate --out DIR [--beam K] [--attention FILE.svg] [TEXT...]   (else stdin lines)
//
// Started by mpirun (in a build with MPI), it trains data-parallel: `mpirun -np 2 train_translate
// --threads 1 ...`, --batch-size staying the global batch.
#include <iostream>

#include "examples/common/parallel_main.hpp"
#include "examples/translate/cli.hpp"
#include "tapegrad/train/progress.hpp"

int main(int argc, char** argv) {
  const bool interactive = tapegrad::train::Progress::stderr_is_terminal();
  return examples::parallel_main(argc, argv, "train_translate", [&](const examples::Parallel& parallel) {
    return translate::run_cli(argc, argv, std::cin, std::cout, std::cerr, interactive, parallel);
  });
}
