// SentencePiece's BPE segmentation: characters (user-defined symbols whole and frozen) merged pair by
// pair, the adjacent pair whose merged piece has the highest score first and the leftmost of equal
// ones, as sentencepiece's bpe_model does; an UNUSED piece that a merge made is cut back into the two
// pieces it was merged from.
#include <algorithm>
#include <queue>
#include <unordered_map>

#include "tapegrad/datasets/tokenizers/sentencepiece.hpp"

namespace tapegrad::datasets::tokenizers {

namespace {

// The length of the UTF-8 character that starts with byte c, by its lead byte alone (the normalized
// text is valid UTF-8), as sentencepiece's OneCharLen.
std::size_t one_char_length(unsigned char c) {
  static constexpr std::size_t kLength[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLength[c >> 4];
}

struct Symbol {
  int prev, next;
  bool frozen;
  std::string_view piece;
};

struct Pair {
  int left, right;
  float score;
  std::size_t size;
};

struct Lower {
  bool operator()(const Pair& a, const Pair& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

std::vector<SentencePiece::Segment> SentencePiece::segment_bpe(std::string_view normalized) const {
  const Data& d = *d_;
  std::vector<Symbol> symbols;
  for (std::string_view rest = normalized; !rest.empty();) {
    std::size_t n = user_defined_prefix(rest);
    const bool frozen = n > 0;
    if (!frozen) n = std::min(rest.size(), one_char_length(static_cast<unsigned char>(rest[0])));
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({index - 1, n == rest.size() ? -1 : index + 1, frozen, rest.substr(0, n)});
    rest.remove_prefix(n);
  }
  std::priority_queue<Pair, std::vector<Pair>, Lower> agenda;
  std::unordered_map<std::string_view, std::pair<std::string_view, std::string_view>> unmerge;
  const auto consider = [&](int left, int right) {
    if (left < 0 || right < 0 || symbols[left].frozen || symbols[right].frozen) return;
    const std::string_view merged(symbols[left].piece.data(), symbols[left].piece.size() + symbols[right].piece.size());
    const auto it = d.pieces.find(merged);
    if (it == d.pieces.end()) return;
    const auto& p = d.proto.pieces[static_cast<std::size_t>(it->second)];
    agenda.push({left, right, p.score, merged.size()});
    if (p.type == PieceType::unused) unmerge[merged] = {symbols[left].piece, symbols[right].piece};
  };
  for (std::size_t i = 1; i < symbols.size(); ++i) consider(static_cast<int>(i) - 1, static_cast<int>(i));
  while (!agenda.empty()) {
    const Pair top = agenda.top();
    agenda.pop();
    Symbol& left = symbols[top.left];
    Symbol& right = symbols[top.right];
    // A pair whose symbols have changed since it was queued is stale.
    if (left.piece.empty() || right.piece.empty() || left.piece.size() + right.piece.size() != top.size) continue;
    left.piece = std::string_view(left.piece.data(), top.size);
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    right.piece = std::string_view();
    consider(left.prev, top.left);
    consider(top.left, left.next);
  }
  std::vector<Segment> out;
  const auto emit = [&](auto&& self, std::string_view piece) -> void {
    const auto id = static_cast<std::int32_t>(piece_to_id(piece));
    if (d.proto.pieces[static_cast<std::size_t>(id)].type == PieceType::unused) {
      const auto it = unmerge.find(piece);
      if (it != unmerge.end()) {
        self(self, it->second.first);
        self(self, it->second.second);
        return;
      }
    }
    out.push_back({piece, id});
  };
  for (int i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) emit(emit, symbols[i].piece);
  return out;
}

}  // namespace tapegrad::datasets::tokenizers
