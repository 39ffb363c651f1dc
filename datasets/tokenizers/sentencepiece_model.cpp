#include "tapegrad/datasets/tokenizers/sentencepiece_model.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "tapegrad/datasets/tokenizers/protobuf_reader.hpp"
#include "tapegrad/datasets/tokenizers/read_file.hpp"

namespace tapegrad::datasets::tokenizers {

namespace {

constexpr std::string_view kWho = "SentencePiece";

// Reads every field of `message` with `on_field`, naming `where` (e.g. "pieces[3]") in errors.
template <typename F>
void for_each_field(std::string_view message, const std::string& source, const std::string& where, F&& on_field) {
  ProtoReader reader(message);
  ProtoField field;
  while (true) {
    try {
      if (!reader.next(field)) break;
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(
          fmt::format("{}: {}: {} is not a valid protobuf message: {}", kWho, source, where, e.what()));
    }
    on_field(field);
  }
}

void expect_wire(const ProtoField& f, std::uint32_t wire, const std::string& source, const std::string& where,
                 std::string_view name) {
  if (f.wire_type != wire)
    throw std::runtime_error(fmt::format("{}: {}: {}.{} (field {}) has wire type {}, expected {}", kWho, source, where,
                                         name, f.number, wire_type_name(f.wire_type), wire_type_name(wire)));
}

}  // namespace

std::string_view piece_type_name(PieceType type) {
  switch (type) {
    case PieceType::normal:
      return "NORMAL";
    case PieceType::unknown:
      return "UNKNOWN";
    case PieceType::control:
      return "CONTROL";
    case PieceType::user_defined:
      return "USER_DEFINED";
    case PieceType::unused:
      return "UNUSED";
    case PieceType::byte:
      return "BYTE";
  }
  return "?";
}

std::string_view model_type_name(SentencePieceModelType type) {
  switch (type) {
    case SentencePieceModelType::unigram:
      return "UNIGRAM";
    case SentencePieceModelType::bpe:
      return "BPE";
    case SentencePieceModelType::word:
      return "WORD";
    case SentencePieceModelType::character:
      return "CHAR";
  }
  return "?";
}

namespace {

std::string string_field(const ProtoField& f, const std::string& source, const std::string& where,
                         std::string_view name) {
  expect_wire(f, 2, source, where, name);
  return std::string(f.bytes);
}

const ProtoField& varint_field(const ProtoField& f, const std::string& source, const std::string& where,
                               std::string_view name) {
  expect_wire(f, 0, source, where, name);
  return f;
}

SentencePieceModelProto::Piece parse_piece(std::string_view bytes, const std::string& source,
                                           const std::string& where) {
  SentencePieceModelProto::Piece p;
  for_each_field(bytes, source, where, [&](const ProtoField& g) {
    if (g.number == 1) {
      p.piece = string_field(g, source, where, "piece");
    } else if (g.number == 2) {
      expect_wire(g, 5, source, where, "score");
      p.score = g.as_float();
    } else if (g.number == 3) {
      const std::int32_t t = varint_field(g, source, where, "type").as_int32();
      if (t < 1 || t > 6)
        throw std::runtime_error(
            fmt::format("{}: {}: {} has type {}, not one of NORMAL (1) .. BYTE (6)", kWho, source, where, t));
      p.type = static_cast<PieceType>(t);
    }
  });
  return p;
}

void parse_trainer_spec(std::string_view bytes, const std::string& source, SentencePieceModelProto& m) {
  const std::string where = "trainer_spec";
  for_each_field(bytes, source, where, [&](const ProtoField& g) {
    switch (g.number) {
      case 3: {
        const std::int32_t t = varint_field(g, source, where, "model_type").as_int32();
        if (t < 1 || t > 4)
          throw std::runtime_error(fmt::format(
              "{}: {}: trainer_spec.model_type is {}, not one of UNIGRAM (1), BPE, WORD, CHAR (4)", kWho, source, t));
        m.model_type = static_cast<SentencePieceModelType>(t);
        break;
      }
      case 24:
        m.treat_whitespace_as_suffix = varint_field(g, source, where, "treat_whitespace_as_suffix").as_bool();
        break;
      case 35:
        m.byte_fallback = varint_field(g, source, where, "byte_fallback").as_bool();
        break;
      case 44:
        m.unk_surface = string_field(g, source, where, "unk_surface");
        break;
      case 45:
        m.unk_piece = string_field(g, source, where, "unk_piece");
        break;
      case 46:
        m.bos_piece = string_field(g, source, where, "bos_piece");
        break;
      case 47:
        m.eos_piece = string_field(g, source, where, "eos_piece");
        break;
      case 48:
        m.pad_piece = string_field(g, source, where, "pad_piece");
        break;
      default:
        break;
    }
  });
}

void parse_normalizer_spec(std::string_view bytes, const std::string& source, SentencePieceModelProto& m) {
  const std::string where = "normalizer_spec";
  for_each_field(bytes, source, where, [&](const ProtoField& g) {
    switch (g.number) {
      case 1:
        m.normalizer_name = string_field(g, source, where, "name");
        break;
      case 2:
        m.precompiled_charsmap = string_field(g, source, where, "precompiled_charsmap");
        break;
      case 3:
        m.add_dummy_prefix = varint_field(g, source, where, "add_dummy_prefix").as_bool();
        break;
      case 4:
        m.remove_extra_whitespaces = varint_field(g, source, where, "remove_extra_whitespaces").as_bool();
        break;
      case 5:
        m.escape_whitespaces = varint_field(g, source, where, "escape_whitespaces").as_bool();
        break;
      default:
        break;
    }
  });
}

}  // namespace

SentencePieceModelProto parse_sentencepiece_model(std::string_view bytes, const std::string& source) {
  SentencePieceModelProto m;
  for_each_field(bytes, source, "the ModelProto", [&](const ProtoField& f) {
    switch (f.number) {
      case 1:  // pieces
        expect_wire(f, 2, source, "ModelProto", "pieces");
        m.pieces.push_back(parse_piece(f.bytes, source, fmt::format("pieces[{}]", m.pieces.size())));
        break;
      case 2:
        expect_wire(f, 2, source, "ModelProto", "trainer_spec");
        parse_trainer_spec(f.bytes, source, m);
        break;
      case 3:
        expect_wire(f, 2, source, "ModelProto", "normalizer_spec");
        parse_normalizer_spec(f.bytes, source, m);
        break;
      case 5:  // denormalizer_spec
        expect_wire(f, 2, source, "ModelProto", "denormalizer_spec");
        for_each_field(f.bytes, source, "denormalizer_spec", [&](const ProtoField& g) {
          if (g.number == 2 && g.wire_type == 2 && !g.bytes.empty()) m.has_denormalizer_rule = true;
        });
        break;
      default:
        break;  // self_test_data and fields of later versions change nothing here
    }
  });
  return m;
}

SentencePieceModelProto read_sentencepiece_model(const std::filesystem::path& path) {
  return parse_sentencepiece_model(read_whole_file(path, kWho), path.string());
}

}  // namespace tapegrad::datasets::tokenizers
