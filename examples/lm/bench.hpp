// train_lm bench: the generation speed of a causal run's model with and without the key/value cache, at
// several lengths of context, and whether both ways choose the same (greedy) tokens.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace lm {

struct BenchArgs {
  std::string run;
  std::vector<std::int64_t> contexts = {64, 256, 1024};  // tokens of context when the last new token is chosen
  std::int64_t new_tokens = 32;                          // per measurement; the prompt is context - new_tokens
  std::int64_t repeats = 3;                              // the fastest of these is reported
  std::int64_t seed = 0;                                 // of the prompt's random tokens
  std::int64_t threads = 2;
  std::string precision;  // fp32 | bf16 | auto; empty: the run's
};

// Prints one line per context: the prompt's prefill time with the cache, and new tokens per second with
// and without it. The prompt is seeded random tokens (speed does not depend on them); decoding is
// greedy. Throws train::UsageError for bad arguments (a context beyond the model's, fewer than 2 new
// tokens), std::runtime_error if the two ways choose different tokens.
int bench_command(const BenchArgs& args, std::ostream& out, std::ostream& err);

}  // namespace lm
