/// @file
/// A SentencePiece tokenizer (tokenizer.model, as Llama 2 ships it), exact to the sentencepiece
/// library: the normalizer (its compiled rules, the dummy prefix, extra whitespace removed, spaces
/// written as "▁" U+2581), then BPE (the adjacent pair whose merged piece scores highest first, the
/// leftmost of equal ones) or unigram (the Viterbi path of highest total score, an unknown character
/// scoring the lowest piece score minus 10), then unknown pieces as their UTF-8 bytes <0xXX> when the
/// model has byte fallback. decode(encode(text)) gives back the normalized text, without its dummy
/// prefix and with "▁" as spaces: under the identity rule with remove_extra_whitespaces off (Llama's
/// settings), the text itself when it is valid UTF-8 and holds no "▁" of its own.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tapegrad/datasets/tokenizers/piece_trie.hpp"
#include "tapegrad/datasets/tokenizers/precompiled_charsmap.hpp"
#include "tapegrad/datasets/tokenizers/sentencepiece_model.hpp"

namespace tapegrad::datasets::tokenizers {

/// SentencePiece's whitespace marker "▁" (U+2581), in UTF-8: what spaces become in pieces.
inline constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";

/// A SentencePiece tokenizer (BPE or unigram) read from a tokenizer.model.
class SentencePiece {
 public:
  /// Reads tokenizer.model. Throws std::runtime_error naming the file and the problem: a malformed
  /// protobuf, an empty or repeated piece, no or two UNKNOWN pieces, BYTE pieces without byte_fallback
  /// or not all 256 with it, and what tapegrad does not support, by name (model types WORD and CHAR,
  /// treat_whitespace_as_suffix, a denormalizer).
  static SentencePiece load(const std::filesystem::path& path);
  /// From a parsed model; `source` names it in errors.
  static SentencePiece from_proto(SentencePieceModelProto proto, const std::string& source);

  /// The ids of `text` (no BOS or EOS: add bos_id() / eos_id() where a model wants them).
  std::vector<std::int64_t> encode(std::string_view text) const;
  /// The pieces of `text` (what encode's ids stand for; byte pieces as "<0xXX>").
  std::vector<std::string> encode_as_pieces(std::string_view text) const;
  /// The text of `ids` as sentencepiece decodes it: "▁" as a space, the first piece's leading one
  /// dropped, control pieces as nothing, the unknown piece as the model's unk_surface (" ⁇ "), runs
  /// of byte pieces as their bytes with each byte that is not part of valid UTF-8 as U+FFFD. Throws
  /// std::invalid_argument naming an id outside [0, vocab_size()).
  std::string decode(const std::vector<std::int64_t>& ids) const;
  /// The normalizer's output for `text` (with "▁" for spaces and the dummy prefix).
  std::string normalize(std::string_view text) const;

  std::size_t vocab_size() const { return d_->proto.pieces.size(); }
  SentencePieceModelType model_type() const { return d_->proto.model_type; }
  /// The piece of an id; throws std::invalid_argument outside [0, vocab_size()).
  const std::string& id_to_piece(std::int64_t id) const;
  /// The id of a piece, or unk_id() when there is none.
  std::int64_t piece_to_id(std::string_view piece) const;
  float score(std::int64_t id) const { return piece(id).score; }
  PieceType type(std::int64_t id) const { return piece(id).type; }
  std::int64_t unk_id() const { return d_->unk_id; }
  /// The ids of the model's BOS, EOS and padding pieces (trainer_spec's bos_piece ...), or -1 when the
  /// model has no such control piece.
  std::int64_t bos_id() const { return d_->bos_id; }
  std::int64_t eos_id() const { return d_->eos_id; }
  std::int64_t pad_id() const { return d_->pad_id; }
  const SentencePieceModelProto& proto() const { return d_->proto; }

 private:
  /// A piece of the normalized text and its id, before byte fallback.
  struct Segment {
    std::string_view piece;
    std::int32_t id;
  };
  struct Data {
    SentencePieceModelProto proto;
    std::unordered_map<std::string_view, std::int32_t> pieces;    ///< NORMAL, USER_DEFINED, UNUSED
    std::unordered_map<std::string_view, std::int32_t> reserved;  ///< the other types
    PieceTrie trie;                                               ///< the pieces above (unigram)
    PieceTrie user_defined;
    std::optional<PrecompiledCharsmap> charsmap;
    std::int32_t unk_id = -1, bos_id = -1, eos_id = -1, pad_id = -1;
    std::int32_t byte_ids[256];
    float min_score = 0, max_score = 0;  ///< over NORMAL pieces, as the unigram model keeps them
    /// BPE: no piece holds a "▁" after another character and none is UNUSED, so no merge crosses the
    /// start of a word, and each word can be merged alone (and cached).
    bool bpe_by_word = false;
  };
  struct Cache;

  explicit SentencePiece(std::shared_ptr<const Data> d);
  const SentencePieceModelProto::Piece& piece(std::int64_t id) const;
  /// The length of the user-defined symbol at the start of `text`, or 0.
  std::size_t user_defined_prefix(std::string_view text) const;
  std::vector<Segment> segment_bpe(std::string_view normalized) const;
  void segment_bpe_span(std::string_view span, std::vector<Segment>& out) const;
  std::vector<Segment> segment_unigram(std::string_view normalized) const;
  std::vector<Segment> segment(std::string_view normalized) const;

  std::shared_ptr<const Data> d_;
  std::shared_ptr<Cache> cache_;  ///< BPE's segmentations of words, shared by copies
};

}  // namespace tapegrad::datasets::tokenizers
