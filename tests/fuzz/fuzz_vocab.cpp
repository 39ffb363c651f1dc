// libFuzzer target: datasets::Vocabulary::load on arbitrary bytes. Contract: a valid file loads and
// round-trips its tokens, anything else throws std::runtime_error; nothing else escapes.
#include <cstdint>
#include <stdexcept>

#include "tapegrad/datasets/text/vocab.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = tapegrad::fuzz::input_path(data, size);
  try {
    const auto vocab = tapegrad::datasets::Vocabulary::load(path);
    for (std::size_t i = 0; i < vocab.size(); ++i) {
      if (vocab.id(vocab.token(static_cast<std::int64_t>(i))) != static_cast<std::int64_t>(i)) __builtin_trap();
    }
  } catch (const std::runtime_error&) {
  }
  return 0;
}
