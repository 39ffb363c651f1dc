// SentencePiece's unigram segmentation: the path through the text's pieces of highest total score
// (Viterbi), as sentencepiece's optimized unigram encoder computes it, to the last bit: scores added in
// double and kept in float, a user-defined symbol scoring length * max_score - 0.1, a character that
// starts no piece of its own length scoring min_score - 10 as the unknown piece, and of equal paths
// the one found first.
#include <algorithm>

#include "tapegrad/datasets/tokenizers/sentencepiece.hpp"
#include "tapegrad/datasets/tokenizers/unicode.hpp"

namespace tapegrad::datasets::tokenizers {

namespace {

struct BestPath {
  std::int32_t id = -1;
  float score = 0;         ///< of the best path that ends here
  std::int64_t from = -1;  ///< where its last piece starts; -1: no path ends here yet
};

}  // namespace

std::vector<SentencePiece::Segment> SentencePiece::segment_unigram(std::string_view normalized) const {
  const Data& d = *d_;
  constexpr float kUnknownPenalty = 10.0f;
  const float unknown_score = d.min_score - kUnknownPenalty;
  const std::size_t size = normalized.size();
  std::vector<BestPath> best(size + 1);
  for (std::size_t start = 0; start < size;) {
    const float here = best[start].score;
    const std::size_t char_length =
        std::min(size - start, utf8_length_from_lead(static_cast<unsigned char>(normalized[start])));
    bool has_single = false;
    d.trie.for_each_prefix(normalized.substr(start), [&](std::size_t length, std::int32_t id) {
      const auto& p = d.proto.pieces[static_cast<std::size_t>(id)];
      if (p.type == PieceType::unused) return;
      const double score = p.type == PieceType::user_defined
                               ? static_cast<double>(static_cast<float>(length) * d.max_score) - 0.1
                               : static_cast<double>(p.score);
      const double candidate = score + static_cast<double>(here);
      BestPath& target = best[start + length];
      if (target.from < 0 || candidate > static_cast<double>(target.score)) {
        target.score = static_cast<float>(candidate);
        target.from = static_cast<std::int64_t>(start);
        target.id = id;
      }
      if (length == char_length) has_single = true;
    });
    if (!has_single) {
      const float candidate = unknown_score + here;
      BestPath& target = best[start + char_length];
      if (target.from < 0 || candidate > target.score) {
        target.score = candidate;
        target.from = static_cast<std::int64_t>(start);
        target.id = d.unk_id;
      }
    }
    start += char_length;
  }
  std::vector<Segment> out;
  for (std::size_t end = size; end > 0;) {
    const BestPath& b = best[end];
    const auto from = static_cast<std::size_t>(b.from);
    out.push_back({normalized.substr(from, end - from), b.id});
    end = from;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace tapegrad::datasets::tokenizers
