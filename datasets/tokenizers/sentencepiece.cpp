#include "tapegrad/datasets/tokenizers/sentencepiece.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <stdexcept>

#include "tapegrad/autograd/messages.hpp"
#include "tapegrad/datasets/tokenizers/unicode.hpp"

namespace tapegrad::datasets::tokenizers {

namespace {

constexpr std::string_view kWho = "SentencePiece";

[[noreturn]] void fail(const std::string& source, const std::string& problem) {
  throw std::runtime_error(fmt::format("{}: {}: {}", kWho, source, problem));
}

std::string shown(std::string_view s) { return "'" + tapegrad::clip_for_message(s) + "'"; }

// The byte of a BYTE piece "<0xXX>" (upper-case hex, as sentencepiece writes and accepts them), or -1.
int piece_byte(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  const auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
  const int hi = hex(piece[3]), lo = hex(piece[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

}  // namespace

SentencePiece SentencePiece::load(const std::filesystem::path& path) {
  return from_proto(read_sentencepiece_model(path), path.string());
}

SentencePiece SentencePiece::from_proto(SentencePieceModelProto proto, const std::string& source) {
  if (proto.model_type != SentencePieceModelType::unigram && proto.model_type != SentencePieceModelType::bpe)
    fail(source, fmt::format("trainer_spec.model_type is {}; only UNIGRAM and BPE are implemented",
                             model_type_name(proto.model_type)));
  if (proto.treat_whitespace_as_suffix)
    fail(source, "trainer_spec.treat_whitespace_as_suffix is not supported by tapegrad");
  if (proto.has_denormalizer_rule) fail(source, "a denormalizer_spec with rules is not supported by tapegrad");
  if (proto.pieces.empty()) fail(source, "the model has no pieces");
  if (proto.pieces.size() > static_cast<std::size_t>(INT32_MAX))
    fail(source, fmt::format("the model has {} pieces, more than ids can hold", proto.pieces.size()));
  auto d = std::make_shared<Data>();
  d->proto = std::move(proto);
  const auto& pieces = d->proto.pieces;
  std::fill(std::begin(d->byte_ids), std::end(d->byte_ids), -1);
  std::vector<std::pair<std::string_view, std::int32_t>> trie_keys, user_keys;
  d->min_score = FLT_MAX;
  d->max_score = FLT_MIN;  // sentencepiece starts from FLT_MIN, the smallest positive float
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const auto& p = pieces[i];
    const auto id = static_cast<std::int32_t>(i);
    const std::string where = fmt::format("pieces[{}]", i);
    if (p.piece.empty()) fail(source, fmt::format("{} is empty", where));
    const bool normal = p.type == PieceType::normal || p.type == PieceType::user_defined || p.type == PieceType::unused;
    auto& index = normal ? d->pieces : d->reserved;
    const auto [it, inserted] = index.emplace(p.piece, id);
    if (!inserted) fail(source, fmt::format("{} {} repeats pieces[{}]", where, shown(p.piece), it->second));
    if (normal) trie_keys.emplace_back(p.piece, id);
    if (p.type == PieceType::user_defined) user_keys.emplace_back(p.piece, id);
    if (p.type == PieceType::normal) {
      d->min_score = std::min(d->min_score, p.score);
      d->max_score = std::max(d->max_score, p.score);
    }
    if (p.type == PieceType::unknown) {
      if (d->unk_id >= 0) fail(source, fmt::format("{} and pieces[{}] are both UNKNOWN", where, d->unk_id));
      d->unk_id = id;
    }
    if (p.type == PieceType::byte) {
      if (!d->proto.byte_fallback)
        fail(source,
             fmt::format("{} {} is a BYTE piece, but trainer_spec.byte_fallback is false", where, shown(p.piece)));
      const int b = piece_byte(p.piece);
      if (b < 0) fail(source, fmt::format("{} {} is a BYTE piece not of the form <0xXX>", where, shown(p.piece)));
      d->byte_ids[b] = id;
    }
  }
  if (d->unk_id < 0) fail(source, "the model has no UNKNOWN piece");
  if (d->proto.byte_fallback)
    for (int b = 0; b < 256; ++b)
      if (d->byte_ids[b] < 0)
        fail(source, fmt::format("trainer_spec.byte_fallback is true, but there is no BYTE piece <0x{:02X}>", b));
  d->bpe_by_word = d->proto.model_type == SentencePieceModelType::bpe && d->proto.escape_whitespaces;
  for (const auto& p : pieces) {
    if (p.type == PieceType::unused) d->bpe_by_word = false;
    const bool mergeable = p.type == PieceType::normal || p.type == PieceType::user_defined;
    for (std::size_t at = p.piece.find(kSpaceSymbol, 1); mergeable && at != std::string::npos;
         at = p.piece.find(kSpaceSymbol, at + 1))
      if (at < kSpaceSymbol.size() || p.piece.compare(at - kSpaceSymbol.size(), kSpaceSymbol.size(), kSpaceSymbol) != 0)
        d->bpe_by_word = false;
  }
  d->trie = PieceTrie(trie_keys);
  d->user_defined = PieceTrie(user_keys);
  const auto control_id = [&](const std::string& name) -> std::int32_t {
    const auto it = d->reserved.find(name);
    return it != d->reserved.end() && pieces[it->second].type == PieceType::control ? it->second : -1;
  };
  d->bos_id = control_id(d->proto.bos_piece);
  d->eos_id = control_id(d->proto.eos_piece);
  d->pad_id = control_id(d->proto.pad_piece);
  if (!d->proto.precompiled_charsmap.empty()) {
    try {
      d->charsmap.emplace(d->proto.precompiled_charsmap);
    } catch (const std::runtime_error& e) {
      fail(source, fmt::format("normalizer_spec ({}): {}", shown(d->proto.normalizer_name), e.what()));
    }
  }
  return SentencePiece(std::move(d));
}

const SentencePieceModelProto::Piece& SentencePiece::piece(std::int64_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= vocab_size())
    throw std::invalid_argument(fmt::format("{}: id {} is outside the vocabulary [0, {})", kWho, id, vocab_size()));
  return d_->proto.pieces[static_cast<std::size_t>(id)];
}

const std::string& SentencePiece::id_to_piece(std::int64_t id) const { return piece(id).piece; }

std::int64_t SentencePiece::piece_to_id(std::string_view p) const {
  if (const auto it = d_->reserved.find(p); it != d_->reserved.end()) return it->second;
  if (const auto it = d_->pieces.find(p); it != d_->pieces.end()) return it->second;
  return d_->unk_id;
}

std::size_t SentencePiece::user_defined_prefix(std::string_view text) const {
  std::size_t longest = 0;
  d_->user_defined.for_each_prefix(text, [&](std::size_t length, std::int32_t) { longest = length; });
  return longest;
}

std::vector<SentencePiece::Segment> SentencePiece::segment(std::string_view normalized) const {
  if (normalized.empty()) return {};
  return d_->proto.model_type == SentencePieceModelType::bpe ? segment_bpe(normalized) : segment_unigram(normalized);
}

std::vector<std::int64_t> SentencePiece::encode(std::string_view text) const {
  const std::string normalized = normalize(text);
  std::vector<std::int64_t> ids;
  ids.reserve(normalized.size() / 3 + 1);
  bool previous_unknown = false;
  for (const Segment& s : segment(normalized)) {
    const PieceType type = d_->proto.pieces[static_cast<std::size_t>(s.id)].type;
    const bool unknown = type == PieceType::unknown;
    if (unknown && d_->proto.byte_fallback) {
      for (const char c : s.piece) ids.push_back(d_->byte_ids[static_cast<unsigned char>(c)]);
    } else if (!(unknown && previous_unknown)) {  // a run of unknown pieces is one unknown id
      ids.push_back(s.id);
    }
    previous_unknown = unknown;
  }
  return ids;
}

std::vector<std::string> SentencePiece::encode_as_pieces(std::string_view text) const {
  const std::string normalized = normalize(text);
  std::vector<std::string> out;
  bool previous_unknown = false;
  for (const Segment& s : segment(normalized)) {
    const bool unknown = d_->proto.pieces[static_cast<std::size_t>(s.id)].type == PieceType::unknown;
    if (unknown && d_->proto.byte_fallback) {
      for (const char c : s.piece) out.push_back(d_->proto.pieces[d_->byte_ids[static_cast<unsigned char>(c)]].piece);
    } else if (unknown && previous_unknown) {
      out.back() += s.piece;
    } else {
      out.emplace_back(unknown ? std::string(s.piece) : d_->proto.pieces[static_cast<std::size_t>(s.id)].piece);
    }
    previous_unknown = unknown;
  }
  return out;
}

std::string SentencePiece::decode(const std::vector<std::int64_t>& ids) const {
  const auto& spec = d_->proto;
  std::string text, bytes;
  const auto flush_bytes = [&] {
    for (std::size_t i = 0; i < bytes.size();) {
      const CodePoint cp = decode_utf8(bytes, i);
      if (cp.valid)
        text.append(bytes, i, cp.length);
      else
        text += kReplacementCharacter;
      i += cp.length;
    }
    bytes.clear();
  };
  // The dummy prefix: the first piece loses its leading "▁", and so do the pieces after it while the
  // text is still empty, except that without remove_extra_whitespaces only one "▁" goes.
  bool strip_leading = spec.add_dummy_prefix || spec.remove_extra_whitespaces;
  bool stripped = false;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const std::int64_t id = ids[k];
    if (id < 0 || static_cast<std::size_t>(id) >= vocab_size())
      throw std::invalid_argument(
          fmt::format("{}::decode: ids[{}] = {} is outside the vocabulary [0, {})", kWho, k, id, vocab_size()));
    const auto& p = spec.pieces[static_cast<std::size_t>(id)];
    if (p.type == PieceType::byte) {
      bytes.push_back(static_cast<char>(piece_byte(p.piece)));
      continue;
    }
    flush_bytes();
    if (stripped || !text.empty()) strip_leading = false;
    stripped = false;
    if (p.type == PieceType::control) continue;
    if (p.type == PieceType::unknown) {
      text += spec.unk_surface;
      continue;
    }
    std::string_view piece = p.piece;
    if (strip_leading && piece.substr(0, kSpaceSymbol.size()) == kSpaceSymbol) {
      piece.remove_prefix(kSpaceSymbol.size());
      stripped = !spec.remove_extra_whitespaces;
    }
    for (std::size_t i = 0; i < piece.size();) {
      if (piece.substr(i, kSpaceSymbol.size()) == kSpaceSymbol) {
        text += ' ';
        i += kSpaceSymbol.size();
      } else {
        text += piece[i++];
      }
    }
  }
  flush_bytes();
  return text;
}

}  // namespace tapegrad::datasets::tokenizers
