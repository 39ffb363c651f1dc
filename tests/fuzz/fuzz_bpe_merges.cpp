// libFuzzer target: datasets::tokenizers::ByteLevelBPE::from_files with arbitrary bytes as merges.txt
// beside a small vocab.json (the 256 byte tokens and a few merged ones). Contract: a file that loads
// round-trips any text through encode and decode; anything else throws std::runtime_error.
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "tapegrad/datasets/tokenizers/byte_level_bpe.hpp"
#include "tapegrad/datasets/tokenizers/bytes_to_unicode.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace tk = tapegrad::datasets::tokenizers;

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static tapegrad::fuzz::ScratchFolder folder("tapegrad_fuzz_bpe_merges");
  static const std::string vocab_path = [] {
    const auto& bytes = tk::byte_to_unicode_strings();
    std::string json = "{";
    int id = 0;
    for (const auto& b : bytes) json += json_string(b) + ":" + std::to_string(id++) + ",";
    const std::string g = bytes[' '];
    for (const std::string& t :
         std::vector<std::string>{g + "t", "he", g + "the", "in", g + "a", "er", g + "w", g + "wer"})
      json += json_string(t) + ":" + std::to_string(id++) + ",";
    json.back() = '}';
    tapegrad::fuzz::write_text(folder.path / "vocab.json", json);
    return (folder.path / "vocab.json").string();
  }();
  const std::string& merges = tapegrad::fuzz::input_path(data, size);
  try {
    const auto bpe = tk::ByteLevelBPE::from_files(vocab_path, merges);
    const std::string text = "the tower in a wet inn\n\xE2\x80\x99 \xFF";
    if (bpe.decode(bpe.encode(text)) != text) __builtin_trap();
  } catch (const std::runtime_error&) {
  }
  return 0;
}
