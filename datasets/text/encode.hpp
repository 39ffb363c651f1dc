/// @file
/// Labeled texts (reviews) turned into token ids: truncated to max_len, kept unpadded and flat (padding happens when a
/// batch is built, see datasets/batching.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tapegrad/datasets/text/vocab.hpp"

namespace tapegrad::datasets {

/// Which tokens a review longer than max_len keeps.
enum class Truncation {
  head,       ///< the first max_len tokens (the default)
  tail,       ///< the last max_len tokens
  head_tail,  ///< the first ceil(max_len / 2) and the last floor(max_len / 2), in order
};

/// Parses "head", "tail" or "head_tail" (for a --truncation flag); throws std::invalid_argument otherwise.
Truncation parse_truncation(std::string_view name);
/// "head", "tail" or "head_tail".
const char* truncation_name(Truncation t);

/// The kept positions of a sequence of n tokens: ids[0, first) followed by ids[second, n).
struct Kept {
  std::size_t first, second;
};
/// Which positions of n tokens truncation t keeps within max_len.
Kept truncation_window(std::size_t n, std::size_t max_len, Truncation t);

/// `ids` truncated to max_len and padded with Vocabulary::pad_id at the end to exactly max_len.
std::vector<std::int64_t> truncate_and_pad(const std::vector<std::int64_t>& ids, std::size_t max_len,
                                           Truncation t = Truncation::head);

/// A set of encoded reviews, stored flat: review i's ids are ids[offsets[i], offsets[i + 1]).
class EncodedDataset {
 public:
  EncodedDataset() = default;
  /// Encodes `examples` (optionally only those at `indices`, in that order) with `vocab`, keeping at
  /// most max_len (> 0) tokens of each as `truncation` says. An Example is any struct with a `text`
  /// (std::string) and a `label` (std::int64_t), such as datasets::Review.
  template <typename Example>
  static EncodedDataset encode(const std::vector<Example>& examples, const Vocabulary& vocab, std::size_t max_len,
                               Truncation truncation = Truncation::head) {
    return encode(examples, all_indices(examples.size()), vocab, max_len, truncation);
  }
  template <typename Example>
  static EncodedDataset encode(const std::vector<Example>& examples, const std::vector<std::size_t>& indices,
                               const Vocabulary& vocab, std::size_t max_len, Truncation truncation = Truncation::head) {
    return encode_texts(
        examples.size(), [&](std::size_t i) -> std::string_view { return examples[i].text; },
        [&](std::size_t i) -> std::int64_t { return examples[i].label; }, indices, vocab, max_len, truncation);
  }
  /// The same over a corpus given by its size and two accessors.
  static EncodedDataset encode_texts(std::size_t count, const std::function<std::string_view(std::size_t)>& text,
                                     const std::function<std::int64_t(std::size_t)>& label,
                                     const std::vector<std::size_t>& indices, const Vocabulary& vocab,
                                     std::size_t max_len, Truncation truncation = Truncation::head);
  /// The same with any tokenizer: encode_into(text, ids) appends the ids of text to ids (a pretrained
  /// model's subword tokenizer in place of a Vocabulary).
  static EncodedDataset encode_texts(
      std::size_t count, const std::function<std::string_view(std::size_t)>& text,
      const std::function<std::int64_t(std::size_t)>& label, const std::vector<std::size_t>& indices,
      const std::function<void(std::string_view, std::vector<std::int64_t>&)>& encode_into, std::size_t max_len,
      Truncation truncation = Truncation::head);

  std::size_t size() const { return labels_.size(); }
  std::size_t max_len() const { return max_len_; }
  /// The kept ids of review i (at most max_len of them, no padding).
  const std::int64_t* ids(std::size_t i) const { return ids_.data() + offsets_[i]; }
  /// The number of kept tokens of review i: min(token_count(i), max_len).
  std::size_t length(std::size_t i) const { return offsets_[i + 1] - offsets_[i]; }
  /// The number of tokens of review i before truncation.
  std::size_t token_count(std::size_t i) const { return token_counts_[i]; }
  const std::vector<std::size_t>& token_counts() const { return token_counts_; }
  std::int64_t label(std::size_t i) const { return labels_[i]; }
  const std::vector<std::int64_t>& labels() const { return labels_; }

 private:
  static std::vector<std::size_t> all_indices(std::size_t n);

  std::size_t max_len_ = 0;
  std::vector<std::int64_t> ids_;
  std::vector<std::size_t> offsets_{0};
  std::vector<std::size_t> token_counts_;
  std::vector<std::int64_t> labels_;
};

}  // namespace tapegrad::datasets
