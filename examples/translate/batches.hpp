// The numbers task as model inputs: token ids per direction, and padded batches for teacher forcing
// (decoder input <bos> y1 .. yn, expected output y1 .. yn <eos>, padding ignored by the loss).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>

#include "examples/translate/config.hpp"
#include "tapegrad/autograd/masking.hpp"

namespace translate {

using Ids = std::vector<std::int64_t>;

// The text a value is written as on each side of a direction, and its ids (no bos/eos).
std::string source_text(std::uint64_t value, Direction d);
std::string target_text(std::uint64_t value, Direction d);
Ids encode_source(const std::string& text, Direction d);
Ids encode_target(const std::string& text, Direction d);
std::string decode_target(const Ids& ids, Direction d);
std::string decode_source(const Ids& ids, Direction d);
// Why a text given to translate cannot be a source of direction d, or nothing: it holds no words (no
// digits), a word outside the number words (a character that is not a digit, or more digits than the
// largest number), which the model would otherwise read as <unk> and answer anyway.
std::optional<std::string> untranslatable(const std::string& text, Direction d);

struct Batch {
  xt::xarray<std::int64_t> src;      // [B, S], padded with <pad>
  tapegrad::BoolArray src_padding;   // [B, S], true at padding
  xt::xarray<std::int64_t> tgt_in;   // [B, T]: <bos> y, padded
  xt::xarray<std::int64_t> tgt_out;  // [B, T]: y <eos>, padded (the loss's ignore_index)
  tapegrad::BoolArray tgt_padding;   // [B, T]
  std::size_t target_tokens = 0;     // non-padding entries of tgt_out
};

// targets may be empty (inference: only src and src_padding are filled).
Batch make_batch(const std::vector<Ids>& sources, const std::vector<Ids>& targets);

}  // namespace translate
