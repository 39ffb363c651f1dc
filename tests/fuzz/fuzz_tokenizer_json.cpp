// libFuzzer target: datasets::tokenizers::ByteLevelBPE::from_tokenizer_json on arbitrary bytes.
// Contract: a file that loads encodes any text to ids inside its vocabulary that decode to the text's
// bytes; anything else throws std::runtime_error; nothing else escapes.
#include <cstdint>
#include <stdexcept>

#include "tapegrad/datasets/tokenizers/byte_level_bpe.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = tapegrad::fuzz::input_path(data, size);
  try {
    const auto bpe = tapegrad::datasets::tokenizers::ByteLevelBPE::from_tokenizer_json(path);
    for (const std::string text : {"Hello world, it's 1999!  \n", "\xC3\xA9t\xC3\xA9 \xFF\x80<|endoftext|>"}) {
      const auto ids = tapegrad::fuzz::encode_in_vocabulary(bpe, text);
      if (bpe.decode(ids) != text) __builtin_trap();
    }
  } catch (const std::runtime_error&) {
  }
  return 0;
}
