#include "tapegrad/datasets/tokenizers/gpt2_pretokenizer.hpp"

#include "tapegrad/datasets/tokenizers/unicode.hpp"

namespace tapegrad::datasets::tokenizers {

namespace {

enum class CharClass { letter, number, space, other };

struct Char {
  CharClass cls;
  std::size_t length;
};

Char char_at(std::string_view text, std::size_t i) {
  const CodePoint cp = decode_utf8(text, i);
  if (!cp.valid) return {CharClass::other, 1};
  if (is_letter(cp.value)) return {CharClass::letter, cp.length};
  if (is_number(cp.value)) return {CharClass::number, cp.length};
  if (is_whitespace(cp.value)) return {CharClass::space, cp.length};
  return {CharClass::other, cp.length};
}

// The length of the contraction ('s 't 're 've 'm 'll 'd) at text[i] == '\'', or 0.
std::size_t contraction_at(std::string_view text, std::size_t i) {
  const std::size_t left = text.size() - i;
  if (left >= 2) {
    const char a = text[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (left >= 3) {
      const char b = text[i + 2];
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    }
  }
  return 0;
}

// The end of the run of characters of class `cls` that starts at j.
std::size_t run_end(std::string_view text, std::size_t j, CharClass cls) {
  while (j < text.size()) {
    const Char c = char_at(text, j);
    if (c.cls != cls) break;
    j += c.length;
  }
  return j;
}

}  // namespace

void gpt2_pretokenize(std::string_view text, std::vector<std::string_view>& pieces) {
  pieces.clear();
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    if (text[i] == '\'') {
      if (const std::size_t len = contraction_at(text, i)) {
        pieces.push_back(text.substr(i, len));
        i += len;
        continue;
      }
    }
    // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+": an optional space before a run of one class.
    std::size_t j = i;
    Char c = char_at(text, i);
    if (text[i] == ' ' && i + 1 < n) {
      const Char next = char_at(text, i + 1);
      if (next.cls != CharClass::space) {
        j = i + 1;
        c = next;
      }
    }
    if (c.cls != CharClass::space) {
      const std::size_t end = run_end(text, j + c.length, c.cls);
      pieces.push_back(text.substr(i, end - i));
      i = end;
      continue;
    }
    // "\s+(?!\S)" takes a run of whitespace that ends the text whole, and otherwise all of it but its
    // last character, which then starts the next piece; "\s+" takes a single whitespace character
    // before a non-space.
    const std::size_t end = run_end(text, i, CharClass::space);
    std::size_t take = end - i;
    if (end < n) {
      std::size_t last = i;  // the start of the run's last character
      for (std::size_t k = i; k < end; k += char_at(text, k).length) last = k;
      if (last > i) take = last - i;
    }
    pieces.push_back(text.substr(i, take));
    i += take;
  }
}

std::vector<std::string_view> gpt2_pretokenize(std::string_view text) {
  std::vector<std::string_view> pieces;
  gpt2_pretokenize(text, pieces);
  return pieces;
}

}  // namespace tapegrad::datasets::tokenizers
