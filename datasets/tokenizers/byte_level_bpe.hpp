/// @file
/// Byte-level BPE as GPT-2 uses it: text cut by GPT-2's pre-tokenization rule (gpt2_pretokenizer.hpp),
/// each piece's bytes written as characters (bytes_to_unicode.hpp) and merged pair by pair, the pair
/// of lowest merge rank first (the leftmost of equal ones). Reads GPT-2's vocab.json + merges.txt and
/// Hugging Face's tokenizer.json. Any byte string encodes, and decode gives its bytes back exactly.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tapegrad::datasets::tokenizers {

/// A byte-level BPE tokenizer (immutable; copies share the tables and the cache of encoded pieces).
class ByteLevelBPE {
 public:
  /// GPT-2's files: vocab.json (token string -> id) and merges.txt (an optional "#version" line, then
  /// one merge "a b" a line, highest priority first). `special_tokens` (which vocab.json must hold) are
  /// matched whole in the text by encode(). Throws std::runtime_error naming the file and the problem.
  static ByteLevelBPE from_files(const std::filesystem::path& vocab_json, const std::filesystem::path& merges_txt,
                                 const std::vector<std::string>& special_tokens = {});
  /// Hugging Face's tokenizer.json of a byte-level BPE (model.type "BPE", pre_tokenizer ByteLevel with
  /// its regex, no normalizer): model.vocab, model.merges ("a b" strings or [a, b] pairs) and
  /// added_tokens, which encode() matches whole in the text. Settings that change the computation and
  /// that tapegrad does not support (a normalizer, dropout, byte_fallback, another pre-tokenizer, an
  /// added token's lstrip/rstrip/single_word) are refused by name.
  static ByteLevelBPE from_tokenizer_json(const std::filesystem::path& path);
  /// A model folder: tokenizer.json when it has one, else vocab.json + merges.txt, with
  /// "<|endoftext|>" special when vocab.json holds it (as transformers' GPT2Tokenizer has it).
  static ByteLevelBPE from_pretrained(const std::filesystem::path& dir);

  /// The ids of `text`; the special (added) tokens are matched first (the leftmost, the longest of
  /// those starting there) and the text between them is encoded as by encode_ordinary.
  std::vector<std::int64_t> encode(std::string_view text) const;
  /// The ids of `text` read as plain text: a special token's string is encoded as its characters.
  std::vector<std::int64_t> encode_ordinary(std::string_view text) const;
  /// The bytes of the tokens `ids` stand for, concatenated. Throws std::invalid_argument naming an id
  /// that is not in the vocabulary.
  std::string decode(const std::vector<std::int64_t>& ids) const;

  /// One more than the largest id.
  std::size_t vocab_size() const { return data_->bytes_of.size(); }
  /// The id of a token string as the files spell it (GPT-2's characters, e.g. "Ġthe"), or -1.
  std::int64_t token_to_id(std::string_view token) const;
  /// The token string of an id as the files spell it; throws std::invalid_argument for an unknown id.
  const std::string& id_to_token(std::int64_t id) const;
  /// The special (added) tokens and their ids.
  const std::vector<std::pair<std::string, std::int64_t>>& special_tokens() const { return data_->specials; }

 private:
  struct Merge {
    std::int32_t rank;
    std::int32_t id;
  };
  struct Data {
    std::vector<std::string> tokens;    ///< by id, as the files spell them; empty for an unused id
    std::vector<std::string> bytes_of;  ///< by id, the bytes a token stands for
    std::vector<bool> used;             ///< by id
    std::unordered_map<std::string, std::int64_t> index;
    std::int32_t byte_ids[256];
    std::unordered_map<std::uint64_t, Merge> merges;  ///< key: left id << 32 | right id
    std::vector<std::pair<std::string, std::int64_t>> specials;
  };
  struct Cache;

  static ByteLevelBPE build(const std::string& source, std::vector<std::pair<std::string, std::int64_t>> vocab,
                            const std::vector<std::pair<std::string, std::string>>& merges,
                            const std::vector<std::string>& merge_where,
                            std::vector<std::pair<std::string, std::int64_t>> specials);
  explicit ByteLevelBPE(std::shared_ptr<const Data> data);
  void encode_piece(std::string_view piece, std::vector<std::int64_t>& out) const;
  void encode_plain(std::string_view text, std::vector<std::int64_t>& out) const;

  std::shared_ptr<const Data> data_;
  std::shared_ptr<Cache> cache_;
};

}  // namespace tapegrad::datasets::tokenizers
