/// @file
/// The Unicode pieces the tokenizers need: strict UTF-8 decoding of one code point, and the classes
/// \\p{L}, \\p{N} and White_Space of regular expressions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tapegrad::datasets::tokenizers {

/// U+FFFD REPLACEMENT CHARACTER in UTF-8, what decoders write for bytes that are not valid UTF-8.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

/// One decoded code point and the bytes it took; `valid` is false for a byte that does not start a
/// well-formed UTF-8 sequence (an overlong form, a surrogate, beyond U+10FFFF, a cut or stray byte),
/// which then counts as one byte with code point 0xFFFD.
struct CodePoint {
  char32_t value;
  std::size_t length;
  bool valid;
};

/// The code point at text[i] (i < text.size()).
CodePoint decode_utf8(std::string_view text, std::size_t i);

/// The length of the UTF-8 sequence that lead byte c announces (1 for a byte that is no lead byte), as
/// sentencepiece reads a normalized text, which is valid UTF-8.
inline std::size_t utf8_length_from_lead(unsigned char c) {
  constexpr unsigned char kLength[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLength[c >> 4];
}

/// The UTF-8 encoding of a code point (at most U+10FFFF) appended to `out`.
void append_utf8(char32_t cp, std::string& out);

/// \\p{L}: general categories Lu, Ll, Lt, Lm, Lo.
bool is_letter(char32_t cp);
/// \\p{N}: general categories Nd, Nl, No.
bool is_number(char32_t cp);
/// The White_Space property, the \\s of the regex engines that GPT-2's tokenizers run on (Python's
/// regex, Rust's regex, Oniguruma): U+0009..U+000D, U+0020, U+0085, U+00A0, U+1680, U+2000..U+200A,
/// U+2028, U+2029, U+202F, U+205F, U+3000.
bool is_whitespace(char32_t cp);

/// The Unicode version of the \\p{L} and \\p{N} tables (make_unicode_tables.py).
std::string_view unicode_tables_version();

namespace detail {
struct CodePointRange {
  char32_t first, last;
};
struct CodePointTable {
  const CodePointRange* ranges;
  std::size_t size;
};
extern const CodePointTable kLetters;
extern const CodePointTable kNumbers;
extern const char kUnicodeVersion[];
}  // namespace detail

}  // namespace tapegrad::datasets::tokenizers
