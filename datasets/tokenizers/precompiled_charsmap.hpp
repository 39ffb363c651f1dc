/// @file
/// SentencePiece's compiled normalization rules (NormalizerSpec.precompiled_charsmap, as the nmt_nfkc,
/// nfkc and nfkc_cf rules and user rule files compile): a Darts-clone double-array trie from input
/// byte strings to offsets of their replacements, which follow it NUL-terminated.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tapegrad::datasets::tokenizers {

/// The longest rule that matches a prefix of the input: its replacement and how many input bytes it
/// consumes (0 when no rule matches).
struct CharsmapMatch {
  std::string_view replacement;
  std::size_t consumed = 0;
};

/// SentencePiece's compiled normalization rules, read from a precompiled_charsmap.
class PrecompiledCharsmap {
 public:
  /// Takes the blob (a little-endian uint32 trie size, the trie's 32-bit units, the replacements).
  /// Throws std::runtime_error naming the problem when the sizes do not fit.
  explicit PrecompiledCharsmap(std::string_view blob);
  /// Throws std::runtime_error when the trie points outside the blob (a corrupt file).
  CharsmapMatch longest_prefix(std::string_view input) const;

 private:
  std::vector<std::uint32_t> units_;
  std::string replacements_;
};

}  // namespace tapegrad::datasets::tokenizers
