// libFuzzer target: the tokenizer on arbitrary bytes. Contract (datasets/text/tokenizer.hpp): tokens
// are never empty and never hold ASCII whitespace or upper-case letters, and a vocabulary holding
// them all encodes the text to one known id (neither <pad> nor <unk>) per token.
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tapegrad/datasets/text/tokenizer.hpp"
#include "tapegrad/datasets/text/vocab.hpp"

namespace ds = tapegrad::datasets;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> tokens{std::string(ds::Vocabulary::pad_token), std::string(ds::Vocabulary::unk_token)};
  std::set<std::string> seen;
  std::size_t count = 0;
  ds::for_each_token(text, [&](std::string_view t) {
    if (t.empty()) __builtin_trap();
    for (const char c : t) {
      const auto b = static_cast<unsigned char>(c);
      if (ds::detail::is_ascii_space(b) || (b >= 'A' && b <= 'Z')) __builtin_trap();
    }
    if (seen.emplace(t).second) tokens.emplace_back(t);
    ++count;
  });
  if (ds::tokenize(text).size() != count) __builtin_trap();
  // Every token is in this vocabulary, so encoding gives one known id per token.
  const auto vocab = ds::Vocabulary::from_tokens(std::move(tokens));
  const auto ids = vocab.encode(text);
  if (ids.size() != count) __builtin_trap();
  for (const auto id : ids)
    if (id < 2 || static_cast<std::size_t>(id) >= vocab.size()) __builtin_trap();
  return 0;
}
