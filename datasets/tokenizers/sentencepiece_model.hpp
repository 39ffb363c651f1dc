/// @file
/// The contents of a SentencePiece model file (tokenizer.model: a serialized ModelProto of
/// sentencepiece_model.proto), the fields that change encoding and decoding, with proto2's defaults
/// for the fields a file leaves out.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace tapegrad::datasets::tokenizers {

/// ModelProto.SentencePiece.Type.
enum class PieceType : std::int32_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

/// TrainerSpec.ModelType.
enum class SentencePieceModelType : std::int32_t { unigram = 1, bpe = 2, word = 3, character = 4 };

/// A ModelProto as read from a file.
struct SentencePieceModelProto {
  /// One piece of the vocabulary: its text, score and type.
  struct Piece {
    std::string piece;
    float score = 0.0f;
    PieceType type = PieceType::normal;
  };
  std::vector<Piece> pieces;  ///< in id order
  // TrainerSpec
  SentencePieceModelType model_type = SentencePieceModelType::unigram;
  bool byte_fallback = false;
  bool treat_whitespace_as_suffix = false;
  std::string unk_surface = " \xE2\x81\x87 ";  ///< what decode writes for the unknown piece (" ⁇ ")
  std::string unk_piece = "<unk>", bos_piece = "<s>", eos_piece = "</s>", pad_piece = "<pad>";
  // NormalizerSpec
  std::string normalizer_name;
  std::string precompiled_charsmap;  ///< empty: no normalization (the "identity" rule)
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
  // denormalizer_spec: only whether it holds a rule, which decoding does not implement
  bool has_denormalizer_rule = false;
};

/// Parses a serialized ModelProto; `source` names it in errors. Throws std::runtime_error naming the
/// source, the message (pieces[i], trainer_spec, ...) and the problem for malformed wire format, a
/// field of the wrong wire type, an unknown piece type or model type.
SentencePieceModelProto parse_sentencepiece_model(std::string_view bytes, const std::string& source);

/// Reads and parses a tokenizer.model file.
SentencePieceModelProto read_sentencepiece_model(const std::filesystem::path& path);

/// "NORMAL", "BPE", ...: the names sentencepiece_model.proto gives.
std::string_view piece_type_name(PieceType type);
/// "UNIGRAM", "BPE", "WORD", "CHAR".
std::string_view model_type_name(SentencePieceModelType type);

}  // namespace tapegrad::datasets::tokenizers
