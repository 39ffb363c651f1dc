// libFuzzer target: datasets::tokenizers::SentencePiece::load on arbitrary bytes (a tokenizer.model).
// Contract: a model that loads encodes text to ids inside its vocabulary, and decodes them; anything
// else throws std::runtime_error; nothing else escapes.
#include <cstdint>
#include <stdexcept>

#include "tapegrad/datasets/tokenizers/sentencepiece.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = tapegrad::fuzz::input_path(data, size);
  try {
    const auto sp = tapegrad::datasets::tokenizers::SentencePiece::load(path);
    for (const std::string text : {"Hello  world, it's 1999!\n", " \xC3\xA9t\xC3\xA9 \xE2\x96\x81 \xFF\xEF\xBC\xA1 "}) {
      const auto ids = tapegrad::fuzz::encode_in_vocabulary(sp, text);
      sp.decode(ids);
      sp.encode_as_pieces(text);
    }
  } catch (const std::runtime_error&) {
  }
  return 0;
}
