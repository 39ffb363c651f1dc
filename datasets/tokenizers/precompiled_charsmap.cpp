#include "tapegrad/datasets/tokenizers/precompiled_charsmap.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace tapegrad::datasets::tokenizers {

namespace {

std::uint32_t read_le32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

// A Darts-clone unit's parts.
bool has_leaf(std::uint32_t unit) { return (unit >> 8) & 1; }
std::uint32_t value(std::uint32_t unit) { return unit & ((1U << 31) - 1); }
std::uint32_t label(std::uint32_t unit) { return unit & ((1U << 31) | 0xFF); }
std::uint32_t offset(std::uint32_t unit) { return (unit >> 10) << ((unit & (1U << 9)) >> 6); }

}  // namespace

PrecompiledCharsmap::PrecompiledCharsmap(std::string_view blob) {
  if (blob.size() <= 4)
    throw std::runtime_error(fmt::format("precompiled_charsmap has {} bytes, too few for its header", blob.size()));
  const std::uint32_t trie_size = read_le32(blob.data());
  if (trie_size >= blob.size() - 4 + 1 || trie_size % 4 != 0)
    throw std::runtime_error(
        fmt::format("precompiled_charsmap's trie of {} bytes does not fit the blob of {} bytes in whole 32-bit units",
                    trie_size, blob.size()));
  units_.resize(trie_size / 4);
  for (std::size_t i = 0; i < units_.size(); ++i) units_[i] = read_le32(blob.data() + 4 + 4 * i);
  replacements_.assign(blob.substr(4 + trie_size));
  if (units_.empty()) throw std::runtime_error("precompiled_charsmap's trie is empty");
}

CharsmapMatch PrecompiledCharsmap::longest_prefix(std::string_view input) const {
  const auto corrupt = [&](std::size_t pos) {
    return std::runtime_error(
        fmt::format("precompiled_charsmap is corrupt: its trie points at unit {} of {}", pos, units_.size()));
  };
  CharsmapMatch best;
  std::size_t node = offset(units_[0]);
  for (std::size_t i = 0; i < input.size(); ++i) {
    const auto c = static_cast<unsigned char>(input[i]);
    node ^= c;
    if (node >= units_.size()) return best;  // no unit there: the key leaves the trie
    const std::uint32_t unit = units_[node];
    if (label(unit) != c) return best;
    node ^= offset(unit);
    if (has_leaf(unit)) {
      if (node >= units_.size()) throw corrupt(node);
      const std::uint32_t at = value(units_[node]);
      if (at >= replacements_.size() || replacements_.find('\0', at) == std::string::npos)
        throw std::runtime_error(fmt::format(
            "precompiled_charsmap is corrupt: a replacement at byte {} is not NUL-terminated within its {} bytes", at,
            replacements_.size()));
      best.replacement = std::string_view(replacements_.data() + at);
      best.consumed = i + 1;
    }
  }
  return best;
}

}  // namespace tapegrad::datasets::tokenizers
