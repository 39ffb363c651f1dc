/// @file
/// GPT-2's pre-tokenization: the text cut into the pieces that byte-level BPE then encodes one by one,
/// by the regular expression
///     's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+
/// matched leftmost-first (as Python's regex, tiktoken and Hugging Face's tokenizers match it),
/// implemented as a scanner. \\s is Unicode's White_Space (unicode.hpp), and a byte that is not part
/// of well-formed UTF-8 counts as a character of the class [^\\s\\p{L}\\p{N}], so that every byte string
/// is cut into pieces that concatenate back to it.
#pragma once

#include <string_view>
#include <vector>

namespace tapegrad::datasets::tokenizers {

/// Replaces `pieces` with the pieces of `text` in order (views into `text`; never empty).
void gpt2_pretokenize(std::string_view text, std::vector<std::string_view>& pieces);

/// The pieces of `text` as a new vector.
std::vector<std::string_view> gpt2_pretokenize(std::string_view text);

}  // namespace tapegrad::datasets::tokenizers
