/// @file
/// A byte-level tokenizer for English text. The rule is exact, so any implementation reproduces it:
///
///  1. ASCII lower-casing: bytes 'A'..'Z' become 'a'..'z'; every other byte is unchanged (no Unicode).
///  2. Then every occurrence of the 6 bytes "<br />" becomes one space, scanning left to right. Because
///     this runs after lower-casing, "<BR />" and "<Br />" are line breaks too; "<br/>" and "<br>" are
///     not (they tokenize as "<", "br", "/", ">").
///  3. Then every typographic or mis-encoded quote becomes its ASCII form, so that "isn’t" reads as
///     "isn't": in UTF-8, U+2018 ‘, U+2019 ’, U+00B4 ´ and U+0091, U+0092 (Windows-1252's single quotes
///     decoded as Latin-1, as some web text holds them) become "'", as does the byte '`';
///     U+201C “, U+201D ” and U+0093, U+0094 become '"'.
///  4. Then, scanning left to right:
///     - ASCII whitespace (space, `\t`, `\n`, `\v`, `\f`, `\r`) separates tokens and is dropped;
///     - a maximal run of bytes in [a-z0-9'] is one token ("don't", "1950's", "'90s", "''");
///     - every other byte is a one-byte token of its own: "great!!" gives "great", "!", "!", and
///       each byte of a multi-byte UTF-8 character is a separate token.
///  An empty or all-whitespace review has no tokens. Tokens are never empty and never hold whitespace.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tapegrad::datasets {

/// Calls f(std::string_view token) for each token of `text` in order, without allocating. The view
/// points into a buffer that is only valid during the call (the text is lower-cased on the fly).
template <typename F>
void for_each_token(std::string_view text, F&& f);

/// The tokens of `text` as strings (for_each_token collected).
std::vector<std::string> tokenize(std::string_view text);

/// ---- implementation ----

namespace detail {
inline bool is_ascii_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
inline unsigned char ascii_lower(unsigned char c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }
inline bool is_word_byte(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '\''; }
/// The ASCII quote that the typographic or mis-encoded quote at text[i] stands for, and its length in
/// bytes; {0, 0} when there is none (rule 3 of the file comment).
struct QuoteAt {
  char ascii;
  std::size_t length;
};
inline QuoteAt typographic_quote(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0; };
  const unsigned char c = at(0);
  if (c == '`') return {'\'', 1};
  if (c == 0xE2 && at(1) == 0x80) {
    if (at(2) == 0x98 || at(2) == 0x99) return {'\'', 3};  // U+2018, U+2019
    if (at(2) == 0x9C || at(2) == 0x9D) return {'"', 3};   // U+201C, U+201D
  }
  if (c == 0xC2) {
    if (at(1) == 0xB4 || at(1) == 0x91 || at(1) == 0x92) return {'\'', 2};  // U+00B4; U+0091, U+0092
    if (at(1) == 0x93 || at(1) == 0x94) return {'"', 2};                    // U+0093, U+0094
  }
  return {0, 0};
}
/// True when text[i..i+6) lower-cases to "<br />".
inline bool is_line_break(std::string_view text, std::size_t i) {
  static constexpr char kBr[] = "<br />";
  if (text.size() - i < 6) return false;
  for (std::size_t k = 0; k < 6; ++k)
    if (ascii_lower(static_cast<unsigned char>(text[i + k])) != static_cast<unsigned char>(kBr[k])) return false;
  return true;
}
}  // namespace detail

template <typename F>
void for_each_token(std::string_view text, F&& f) {
  std::string word;  ///< the current run of word bytes, lower-cased
  const auto flush = [&] {
    if (!word.empty()) {
      f(std::string_view(word));
      word.clear();
    }
  };
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const auto raw = static_cast<unsigned char>(text[i]);
    if (raw == '<' && detail::is_line_break(text, i)) {
      flush();
      i += 6;
      continue;
    }
    const detail::QuoteAt quote = detail::typographic_quote(text, i);
    const unsigned char c = quote.length ? static_cast<unsigned char>(quote.ascii) : detail::ascii_lower(raw);
    if (detail::is_word_byte(c)) {
      word.push_back(static_cast<char>(c));
    } else {
      flush();
      if (!detail::is_ascii_space(c)) {
        const char single = static_cast<char>(c);
        f(std::string_view(&single, 1));
      }
    }
    i += quote.length ? quote.length : 1;
  }
  flush();
}

}  // namespace tapegrad::datasets
