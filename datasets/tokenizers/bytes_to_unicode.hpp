/// @file
/// GPT-2's byte <-> character table: each of the 256 bytes stands for one printable Unicode character
/// in the token strings of vocab.json, merges.txt and tokenizer.json (the printable bytes of
/// '!'..'~', U+00A1..U+00AC and U+00AE..U+00FF for themselves, the others in order for U+0100...).
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace tapegrad::datasets::tokenizers {

/// The character that byte b stands for.
char32_t byte_to_unicode(std::uint8_t b);

/// The byte that character c stands for, or -1 when c stands for none.
int unicode_to_byte(char32_t c);

/// The UTF-8 encodings of the 256 characters, indexed by byte.
const std::array<std::string, 256>& byte_to_unicode_strings();

}  // namespace tapegrad::datasets::tokenizers
