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

SentencePieceModelProto parse_sentencepiece_model(std::string_view bytes, const std::string& source) {
  SentencePieceModelProto m;
  const auto string_field = [&](const ProtoField& f, const std::string& where, std::string_view name,
                                std::string& out) {
    expect_wire(f, 2, source, where, name);
    out.assign(f.bytes);
  };
  const auto varint_field = [&](const ProtoField& f, const std::string& where, std::string_view name) {
    expect_wire(f, 0, source, where, name);
    return f;
  };
  for_each_field(bytes, source, "the ModelProto", [&](const ProtoField& f) {
    switch (f.number) {
      case 1: {  // pieces
        const std::string where = fmt::format("pieces[{}]", m.pieces.size());
        expect_wire(f, 2, source, "ModelProto", "pieces");
        SentencePieceModelProto::Piece p;
        for_each_field(f.bytes, source, where, [&](const ProtoField& g) {
          if (g.number == 1) {
            string_field(g, where, "piece", p.piece);
          } else if (g.number == 2) {
            expect_wire(g, 5, source, where, "score");
            p.score = g.as_float();
          } else if (g.number == 3) {
            const std::int32_t t = varint_field(g, where, "type").as_int32();
            if (t < 1 || t > 6)
              throw std::runtime_error(
                  fmt::format("{}: {}: {} has type {}, not one of NORMAL (1) .. BYTE (6)", kWho, source, where, t));
            p.type = static_cast<PieceType>(t);
          }
        });
        m.pieces.push_back(std::move(p));
        break;
      }
      case 2: {  // trainer_spec
        expect_wire(f, 2, source, "ModelProto", "trainer_spec");
        const std::string where = "trainer_spec";
        for_each_field(f.bytes, source, where, [&](const ProtoField& g) {
          switch (g.number) {
            case 3: {
              const std::int32_t t = varint_field(g, where, "model_type").as_int32();
              if (t < 1 || t > 4)
                throw std::runtime_error(
                    fmt::format("{}: {}: trainer_spec.model_type is {}, not one of UNIGRAM (1), BPE, WORD, CHAR (4)",
                                kWho, source, t));
              m.model_type = static_cast<SentencePieceModelType>(t);
              break;
            }
            case 24:
              m.treat_whitespace_as_suffix = varint_field(g, where, "treat_whitespace_as_suffix").as_bool();
              break;
            case 35:
              m.byte_fallback = varint_field(g, where, "byte_fallback").as_bool();
              break;
            case 44:
              string_field(g, where, "unk_surface", m.unk_surface);
              break;
            case 45:
              string_field(g, where, "unk_piece", m.unk_piece);
              break;
            case 46:
              string_field(g, where, "bos_piece", m.bos_piece);
              break;
            case 47:
              string_field(g, where, "eos_piece", m.eos_piece);
              break;
            case 48:
              string_field(g, where, "pad_piece", m.pad_piece);
              break;
            default:
              break;
          }
        });
        break;
      }
      case 3: {  // normalizer_spec
        expect_wire(f, 2, source, "ModelProto", "normalizer_spec");
        const std::string where = "normalizer_spec";
        for_each_field(f.bytes, source, where, [&](const ProtoField& g) {
          switch (g.number) {
            case 1:
              string_field(g, where, "name", m.normalizer_name);
              break;
            case 2:
              string_field(g, where, "precompiled_charsmap", m.precompiled_charsmap);
              break;
            case 3:
              m.add_dummy_prefix = varint_field(g, where, "add_dummy_prefix").as_bool();
              break;
            case 4:
              m.remove_extra_whitespaces = varint_field(g, where, "remove_extra_whitespaces").as_bool();
              break;
            case 5:
              m.escape_whitespaces = varint_field(g, where, "escape_whitespaces").as_bool();
              break;
            default:
              break;
          }
        });
        break;
      }
      case 5: {  // denormalizer_spec
        expect_wire(f, 2, source, "ModelProto", "denormalizer_spec");
        for_each_field(f.bytes, source, "denormalizer_spec", [&](const ProtoField& g) {
          if (g.number == 2 && g.wire_type == 2 && !g.bytes.empty()) m.has_denormalizer_rule = true;
        });
        break;
      }
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
