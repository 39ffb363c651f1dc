// libFuzzer target: datasets::read_imdb on an arbitrary (compressed) tar archive. Contract: a valid
// archive gives both splits, anything else throws std::runtime_error; nothing else escapes.
#include <cstdint>
#include <stdexcept>

#include "tapegrad/datasets/imdb/imdb.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = tapegrad::fuzz::input_path(data, size);
  tapegrad::datasets::ImdbLimits limits;  // small caps: a fuzz input must not expand for long
  limits.max_archive_bytes = 64 << 20;
  limits.max_total_bytes = 16 << 20;
  try {
    const auto d = tapegrad::datasets::read_imdb(path, tapegrad::datasets::ImdbSplits::Both, limits);
    if (d.train.empty() || d.test.empty()) __builtin_trap();
  } catch (const std::runtime_error&) {
  }
  return 0;
}
