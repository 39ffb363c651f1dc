// train_lm generate: continues a prompt with a causal run's model, printing the tokens as they come and
// the speed, with or without the key/value cache.
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

namespace lm {

struct GenerateArgs {
  std::string run;
  std::vector<std::string> prompt;  // words joined with spaces; stdin when empty
  std::int64_t max_new_tokens = 64;
  double temperature = 0.8;  // 0: greedy
  std::int64_t top_k = 0;    // 0: off
  double top_p = 0.95;       // 1: off
  std::int64_t seed = 0;
  bool no_cache = false;
  std::int64_t prompt_tokens = 0;  // keep only the last N tokens of the prompt; 0: all
  std::int64_t threads = 2;
  std::string precision;  // fp32 | bf16 | auto; empty: the run's
};

// Prints the prompt as the model reads it (a run's words joined by spaces, unknown ones as <unk>; a
// subword tokenizer's decoded text), then each new token as it is chosen, to out; the speed to err. The
// model is any folder model_folder.hpp reads. Throws train::UsageError for bad arguments.
int generate_command(const GenerateArgs& args, std::istream& in, std::ostream& out, std::ostream& err);

}  // namespace lm
