/// @file
/// A byte trie over a tokenizer's pieces, for finding every piece that starts at a position of a text
/// in one walk (SentencePiece's unigram lattice and its user-defined symbols).
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace tapegrad::datasets::tokenizers {

/// A byte trie over pieces: every piece that starts at a position, in one walk.
class PieceTrie {
 public:
  PieceTrie() = default;
  /// Keys must be non-empty and distinct; values are returned by the walks.
  explicit PieceTrie(const std::vector<std::pair<std::string_view, std::int32_t>>& keys);

  /// Calls f(length, value) for each key that is a prefix of `text`, shortest first.
  template <typename F>
  void for_each_prefix(std::string_view text, F&& f) const {
    if (nodes_.empty()) return;
    std::uint32_t node = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
      node = child(node, static_cast<unsigned char>(text[i]));
      if (node == kNone) return;
      if (nodes_[node].value >= 0) f(i + 1, nodes_[node].value);
    }
  }
  bool empty() const { return nodes_.size() <= 1; }

 private:
  static constexpr std::uint32_t kNone = 0xFFFFFFFF;
  struct Node {
    std::uint32_t first_edge = 0, edge_count = 0;
    std::int32_t value = -1;
  };
  std::uint32_t child(std::uint32_t node, unsigned char label) const;
  std::vector<Node> nodes_;
  std::vector<unsigned char> labels_;   ///< edges, grouped by node and sorted by label
  std::vector<std::uint32_t> targets_;  ///< the node each edge leads to
  std::vector<std::uint32_t> root_;     ///< the root's 256 children (kNone: none), for the first step
};

}  // namespace tapegrad::datasets::tokenizers
