/// @file
/// A token vocabulary: `<pad>` = 0, `<unk>` = 1, then the most frequent tokens of the training texts,
/// and for masked-token pretraining optionally `<mask>` last. Saved as a text file,
/// one token per line in index order.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tapegrad::datasets {

/// Token <-> id, with the padding and unknown tokens first.
class Vocabulary {
 public:
  static constexpr std::int64_t pad_id = 0;
  static constexpr std::int64_t unk_id = 1;
  static constexpr std::string_view pad_token = "<pad>";
  static constexpr std::string_view unk_token = "<unk>";
  /// Only in a vocabulary made by with_mask_token(), as its last id, so that every other id is that of
  /// the vocabulary without it (a classifier's vocabulary and its pretraining one agree).
  static constexpr std::string_view mask_token = "<mask>";

  /// Counts the tokens (datasets/tokenizer.hpp) of `texts` and keeps the most frequent ones, ties broken
  /// by ascending byte order (bytes compared as unsigned, a prefix before its extensions).
  /// vocab_size is the TOTAL size including `<pad>` and `<unk>`, so at most vocab_size - 2 counted tokens
  /// are kept; fewer when the texts have fewer distinct tokens. vocab_size must be at least 2.
  /// The tokenizer never produces `<pad>` or `<unk>` (a '<' is a token of its own), so they never clash.
  static Vocabulary build(const std::vector<std::string_view>& texts, std::size_t vocab_size);
  static Vocabulary build(const std::vector<std::string>& texts, std::size_t vocab_size);

  /// From a list of tokens in index order; the first two must be `<pad>` and `<unk>`, none may repeat, and
  /// `<mask>` may only be the last. Throws std::invalid_argument otherwise.
  static Vocabulary from_tokens(std::vector<std::string> tokens);

  /// Writes one token per line ('\n'-terminated) in index order, to "<path>.tmp" renamed over path (a
  /// killed save never leaves a truncated file). Throws std::runtime_error on I/O errors.
  void save(const std::filesystem::path& path) const;
  /// Reads a file written by save, validating it: `<pad>` and `<unk>` first, no empty line, no repeated
  /// token, no token the tokenizer cannot produce (holding whitespace, or a multi-byte token with a byte
  /// outside [a-z0-9']) except `<mask>` as the last line. Throws std::runtime_error naming the path and the line.
  static Vocabulary load(const std::filesystem::path& path);

  /// This vocabulary with `<mask>` appended (id size()); throws std::invalid_argument if it has one.
  Vocabulary with_mask_token() const;
  bool has_mask_token() const { return data_->mask_id >= 0; }
  /// The id of `<mask>`; throws std::logic_error when the vocabulary has none.
  std::int64_t mask_id() const;

  std::size_t size() const { return data_->tokens.size(); }
  /// The id of a token, or unk_id when it is not in the vocabulary.
  std::int64_t id(std::string_view token) const {
    const auto it = data_->index.find(token);
    return it == data_->index.end() ? unk_id : it->second;
  }
  const std::string& token(std::int64_t id) const;
  const std::vector<std::string>& tokens() const { return data_->tokens; }

  /// The ids of every token of `text` (no truncation, no padding).
  std::vector<std::int64_t> encode(std::string_view text) const;
  /// Appends the ids of `text` to `out` and returns how many were appended.
  std::size_t encode_into(std::string_view text, std::vector<std::int64_t>& out) const;

 private:
  /// Immutable and shared, so copies are cheap and the index's views stay valid.
  struct Data {
    std::vector<std::string> tokens;
    std::unordered_map<std::string_view, std::int64_t> index;  ///< views into tokens
    std::int64_t mask_id = -1;                                 ///< -1: no `<mask>`
  };
  explicit Vocabulary(std::shared_ptr<const Data> data) : data_(std::move(data)) {}
  std::shared_ptr<const Data> data_;
};

}  // namespace tapegrad::datasets
