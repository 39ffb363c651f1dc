#include "tapegrad/datasets/tokenizers/piece_trie.hpp"

#include <algorithm>

namespace tapegrad::datasets::tokenizers {

PieceTrie::PieceTrie(const std::vector<std::pair<std::string_view, std::int32_t>>& keys) {
  // Built breadth by breadth from the sorted keys: a node's children are the distinct next bytes of
  // the range of keys that share its prefix, so every node's edges come out contiguous and sorted.
  std::vector<std::pair<std::string_view, std::int32_t>> sorted(keys);
  std::sort(sorted.begin(), sorted.end());
  struct Pending {
    std::uint32_t node;
    std::size_t begin, end, depth;  ///< the keys [begin, end) share the node's prefix of `depth` bytes
  };
  nodes_.emplace_back();
  std::vector<Pending> level{{0, 0, sorted.size(), 0}};
  while (!level.empty()) {
    std::vector<Pending> next;
    for (const Pending& p : level) {
      std::size_t k = p.begin;
      while (k < p.end && sorted[k].first.size() == p.depth) nodes_[p.node].value = sorted[k++].second;
      nodes_[p.node].first_edge = static_cast<std::uint32_t>(labels_.size());
      while (k < p.end) {
        const auto label = static_cast<unsigned char>(sorted[k].first[p.depth]);
        std::size_t e = k;
        while (e < p.end && static_cast<unsigned char>(sorted[e].first[p.depth]) == label) ++e;
        const auto child = static_cast<std::uint32_t>(nodes_.size());
        nodes_.emplace_back();
        labels_.push_back(label);
        targets_.push_back(child);
        ++nodes_[p.node].edge_count;
        next.push_back({child, k, e, p.depth + 1});
        k = e;
      }
    }
    level = std::move(next);
  }
  root_.assign(256, kNone);
  for (std::uint32_t e = 0; e < nodes_[0].edge_count; ++e) root_[labels_[e]] = targets_[e];
}

std::uint32_t PieceTrie::child(std::uint32_t node, unsigned char label) const {
  if (node == 0) return root_[label];
  const Node& n = nodes_[node];
  const auto begin = labels_.begin() + n.first_edge, end = begin + n.edge_count;
  const auto it = std::lower_bound(begin, end, label);
  if (it == end || *it != label) return kNone;
  return targets_[static_cast<std::size_t>(it - labels_.begin())];
}

}  // namespace tapegrad::datasets::tokenizers
