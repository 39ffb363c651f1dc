#include "tapegrad/datasets/tokenizers/bytes_to_unicode.hpp"

#include "tapegrad/datasets/tokenizers/unicode.hpp"

namespace tapegrad::datasets::tokenizers {

namespace {

bool stands_for_itself(int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

struct Table {
  std::array<char32_t, 256> to_char{};
  std::array<std::string, 256> to_string;
  Table() {
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      to_char[b] = stands_for_itself(b) ? static_cast<char32_t>(b) : next++;
      append_utf8(to_char[b], to_string[b]);
    }
  }
};

const Table& table() {
  static const Table t;
  return t;
}

}  // namespace

char32_t byte_to_unicode(std::uint8_t b) { return table().to_char[b]; }

int unicode_to_byte(char32_t c) {
  if (c < 256) return stands_for_itself(static_cast<int>(c)) ? static_cast<int>(c) : -1;
  // The 68 bytes that do not stand for themselves take U+0100.. in ascending byte order.
  if (c >= 256 + 68) return -1;
  int n = 256;
  for (int b = 0; b < 256; ++b)
    if (!stands_for_itself(b) && n++ == static_cast<int>(c)) return b;
  return -1;
}

const std::array<std::string, 256>& byte_to_unicode_strings() { return table().to_string; }

}  // namespace tapegrad::datasets::tokenizers
