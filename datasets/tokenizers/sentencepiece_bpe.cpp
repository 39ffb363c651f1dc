// SentencePiece's BPE segmentation: characters (user-defined symbols whole and frozen) merged pair by
// pair, the adjacent pair whose merged piece has the highest score first and the leftmost of equal
// ones, as sentencepiece's bpe_model does; an UNUSED piece that a merge made is cut back into the two
// pieces it was merged from.
#include <algorithm>
#include <mutex>
#include <queue>
#include <unordered_map>

#include "tapegrad/datasets/tokenizers/sentencepiece.hpp"
#include "tapegrad/datasets/tokenizers/unicode.hpp"

namespace tapegrad::datasets::tokenizers {

namespace {

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

struct SentencePiece::Cache {
  static constexpr std::size_t kMaxEntries = 1 << 18;
  std::mutex mutex;
  std::unordered_map<std::string, std::vector<std::pair<std::uint32_t, std::int32_t>>> words;  ///< lengths, ids
};

SentencePiece::SentencePiece(std::shared_ptr<const Data> d) : d_(std::move(d)), cache_(std::make_shared<Cache>()) {}

std::vector<SentencePiece::Segment> SentencePiece::segment_bpe(std::string_view normalized) const {
  std::vector<Segment> out;
  if (!d_->bpe_by_word) {
    segment_bpe_span(normalized, out);
    return out;
  }
  // Words start at each "▁" that follows another character; merging them one by one gives the
  // merges of the whole text, since no piece crosses their starts.
  std::vector<Segment> word_segments;
  for (std::size_t start = 0; start < normalized.size();) {
    std::size_t end = start;
    bool previous_space = false;
    while (end < normalized.size()) {
      const bool space = normalized.compare(end, kSpaceSymbol.size(), kSpaceSymbol) == 0;
      if (space && end > start && !previous_space) break;
      previous_space = space;
      end += space ? kSpaceSymbol.size() : 1;
    }
    const std::string_view word = normalized.substr(start, end - start);
    bool cached = false;
    {
      std::lock_guard<std::mutex> lock(cache_->mutex);
      const auto it = cache_->words.find(std::string(word));
      if (it != cache_->words.end()) {
        std::size_t at = 0;
        for (const auto& [length, id] : it->second) {
          out.push_back({word.substr(at, length), id});
          at += length;
        }
        cached = true;
      }
    }
    if (!cached) {
      word_segments.clear();
      segment_bpe_span(word, word_segments);
      std::vector<std::pair<std::uint32_t, std::int32_t>> entry;
      entry.reserve(word_segments.size());
      for (const Segment& s : word_segments) entry.emplace_back(static_cast<std::uint32_t>(s.piece.size()), s.id);
      out.insert(out.end(), word_segments.begin(), word_segments.end());
      std::lock_guard<std::mutex> lock(cache_->mutex);
      if (cache_->words.size() >= Cache::kMaxEntries) cache_->words.clear();
      cache_->words.emplace(std::string(word), std::move(entry));
    }
    start = end;
  }
  return out;
}

void SentencePiece::segment_bpe_span(std::string_view normalized, std::vector<Segment>& out) const {
  const Data& d = *d_;
  std::vector<Symbol> symbols;
  for (std::string_view rest = normalized; !rest.empty();) {
    std::size_t n = user_defined_prefix(rest);
    const bool frozen = n > 0;
    if (!frozen) n = std::min(rest.size(), utf8_length_from_lead(static_cast<unsigned char>(rest[0])));
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
}

}  // namespace tapegrad::datasets::tokenizers
