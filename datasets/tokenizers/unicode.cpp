#include "tapegrad/datasets/tokenizers/unicode.hpp"

#include <algorithm>
#include <string>

namespace tapegrad::datasets::tokenizers {

namespace {

bool is_trail(unsigned char c) { return (c & 0xC0) == 0x80; }

bool in_table(const detail::CodePointTable& table, char32_t cp) {
  const auto end = table.ranges + table.size;
  const auto it =
      std::upper_bound(table.ranges, end, cp, [](char32_t c, const detail::CodePointRange& r) { return c < r.first; });
  return it != table.ranges && cp <= (it - 1)->last;
}

}  // namespace

CodePoint decode_utf8(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const std::size_t left = text.size() - i;
  const unsigned char c = at(0);
  constexpr CodePoint invalid{0xFFFD, 1, false};
  if (c < 0x80) return {c, 1, true};
  if ((c & 0xE0) == 0xC0) {
    if (left < 2 || !is_trail(at(1))) return invalid;
    const char32_t cp = (char32_t(c & 0x1F) << 6) | (at(1) & 0x3F);
    return cp >= 0x80 ? CodePoint{cp, 2, true} : invalid;
  }
  if ((c & 0xF0) == 0xE0) {
    if (left < 3 || !is_trail(at(1)) || !is_trail(at(2))) return invalid;
    const char32_t cp = (char32_t(c & 0x0F) << 12) | (char32_t(at(1) & 0x3F) << 6) | (at(2) & 0x3F);
    return cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF) ? CodePoint{cp, 3, true} : invalid;
  }
  if ((c & 0xF8) == 0xF0) {
    if (left < 4 || !is_trail(at(1)) || !is_trail(at(2)) || !is_trail(at(3))) return invalid;
    const char32_t cp =
        (char32_t(c & 0x07) << 18) | (char32_t(at(1) & 0x3F) << 12) | (char32_t(at(2) & 0x3F) << 6) | (at(3) & 0x3F);
    return cp >= 0x10000 && cp <= 0x10FFFF ? CodePoint{cp, 4, true} : invalid;
  }
  return invalid;
}

void append_utf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_letter(char32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return in_table(detail::kLetters, cp);
}

bool is_number(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_table(detail::kNumbers, cp);
}

bool is_whitespace(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= '\t' && cp <= '\r');
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::string_view unicode_tables_version() { return detail::kUnicodeVersion; }

}  // namespace tapegrad::datasets::tokenizers
