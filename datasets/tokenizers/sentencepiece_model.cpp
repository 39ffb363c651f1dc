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

// The names sentencepiece_model.proto gives an enum's values 1, 2, ...
constexpr std::string_view kPieceTypeNames[] = {"NORMAL", "UNKNOWN", "CONTROL", "USER_DEFINED", "UNUSED", "BYTE"};
constexpr std::string_view kModelTypeNames[] = {"UNIGRAM", "BPE", "WORD", "CHAR"};

template <std::size_t N>
std::string_view value_name(const std::string_view (&names)[N], std::int32_t value) {
  return value >= 1 && static_cast<std::size_t>(value) <= N ? names[value - 1] : "?";
}

}  // namespace

std::string_view piece_type_name(PieceType type) {
  return value_name(kPieceTypeNames, static_cast<std::int32_t>(type));
}

std::string_view model_type_name(SentencePieceModelType type) {
  return value_name(kModelTypeNames, static_cast<std::int32_t>(type));
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
      if (value_name(kPieceTypeNames, t) == "?")
        throw std::runtime_error(
            fmt::format("{}: {}: {} has type {}, not one of NORMAL (1) .. BYTE (6)", kWho, source, where, t));
      p.type = static_cast<PieceType>(t);
    }
  });
  return p;
}

// A string or bool field of a spec message that the model keeps: its number and name in
// sentencepiece_model.proto, and the member it is read into (one of the two is set).
struct SpecField {
  std::uint32_t number;
  std::string_view name;
  std::string SentencePieceModelProto::*text = nullptr;
  bool SentencePieceModelProto::*flag = nullptr;
};

using M = SentencePieceModelProto;
const SpecField kTrainerSpec[] = {
    {24, "treat_whitespace_as_suffix", nullptr, &M::treat_whitespace_as_suffix},
    {35, "byte_fallback", nullptr, &M::byte_fallback},
    {44, "unk_surface", &M::unk_surface},
    {45, "unk_piece", &M::unk_piece},
    {46, "bos_piece", &M::bos_piece},
    {47, "eos_piece", &M::eos_piece},
    {48, "pad_piece", &M::pad_piece},
};
const SpecField kNormalizerSpec[] = {
    {1, "name", &M::normalizer_name},
    {2, "precompiled_charsmap", &M::precompiled_charsmap},
    {3, "add_dummy_prefix", nullptr, &M::add_dummy_prefix},
    {4, "remove_extra_whitespaces", nullptr, &M::remove_extra_whitespaces},
    {5, "escape_whitespaces", nullptr, &M::escape_whitespaces},
};

// Reads the fields of the spec message `where` into m: those of `fields`, and the others through
// other(field) (which may ignore them: fields this reader has no use for change nothing).
template <std::size_t N, typename Other>
void parse_spec(std::string_view bytes, const std::string& source, const std::string& where,
                const SpecField (&fields)[N], SentencePieceModelProto& m, Other&& other) {
  for_each_field(bytes, source, where, [&](const ProtoField& g) {
    for (const SpecField& f : fields) {
      if (f.number != g.number) continue;
      if (f.text) {
        m.*f.text = string_field(g, source, where, f.name);
      } else {
        m.*f.flag = varint_field(g, source, where, f.name).as_bool();
      }
      return;
    }
    other(g);
  });
}

void parse_trainer_spec(std::string_view bytes, const std::string& source, SentencePieceModelProto& m) {
  const std::string where = "trainer_spec";
  parse_spec(bytes, source, where, kTrainerSpec, m, [&](const ProtoField& g) {
    if (g.number != 3) return;
    const std::int32_t t = varint_field(g, source, where, "model_type").as_int32();
    if (value_name(kModelTypeNames, t) == "?")
      throw std::runtime_error(fmt::format(
          "{}: {}: trainer_spec.model_type is {}, not one of UNIGRAM (1), BPE, WORD, CHAR (4)", kWho, source, t));
    m.model_type = static_cast<SentencePieceModelType>(t);
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
        parse_spec(f.bytes, source, "normalizer_spec", kNormalizerSpec, m, [](const ProtoField&) {});
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
