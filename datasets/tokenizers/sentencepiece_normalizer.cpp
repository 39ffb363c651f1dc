// SentencePiece's normalizer, as sentencepiece's normalizer.cc: user-defined symbols kept whole, the
// compiled rules (or none: the identity rule), extra spaces dropped, the dummy prefix, and spaces
// written as "▁".
#include "tapegrad/datasets/tokenizers/sentencepiece.hpp"
#include "tapegrad/datasets/tokenizers/unicode.hpp"

namespace tapegrad::datasets::tokenizers {

std::string SentencePiece::normalize(std::string_view input) const {
  const auto& spec = d_->proto;
  // One step of the normalizer: a user-defined symbol as it is, else the longest compiled rule, else
  // one character (a byte that is not valid UTF-8 becomes U+FFFD).
  const auto step = [&](std::string_view rest) -> std::pair<std::string_view, std::size_t> {
    if (const std::size_t n = user_defined_prefix(rest)) return {rest.substr(0, n), n};
    if (d_->charsmap) {
      const CharsmapMatch m = d_->charsmap->longest_prefix(rest);
      if (m.consumed) return {m.replacement, m.consumed};
    }
    const CodePoint cp = decode_utf8(rest, 0);
    if (!cp.valid) return {kReplacementCharacter, 1};
    return {rest.substr(0, cp.length), cp.length};
  };
  std::string out;
  std::size_t i = 0;
  if (spec.remove_extra_whitespaces) {
    while (i < input.size()) {
      const auto [sp, consumed] = step(input.substr(i));
      if (sp != " ") break;
      i += consumed;
    }
  }
  if (i == input.size()) return out;
  out.reserve(3 * (input.size() - i) + 3);
  const std::string_view space = spec.escape_whitespaces ? kSpaceSymbol : " ";
  if (spec.add_dummy_prefix) out += space;
  bool previous_space = spec.remove_extra_whitespaces;
  while (i < input.size()) {
    auto [sp, consumed] = step(input.substr(i));
    while (previous_space && !sp.empty() && sp.front() == ' ') sp.remove_prefix(1);
    if (!sp.empty()) {
      for (const char c : sp) {
        if (c == ' ' && spec.escape_whitespaces)
          out += kSpaceSymbol;
        else
          out += c;
      }
      previous_space = sp.back() == ' ';
    }
    i += consumed;
    if (!spec.remove_extra_whitespaces) previous_space = false;
  }
  if (spec.remove_extra_whitespaces)
    while (out.size() >= space.size() && std::string_view(out).substr(out.size() - space.size()) == space)
      out.resize(out.size() - space.size());
  return out;
}

}  // namespace tapegrad::datasets::tokenizers
