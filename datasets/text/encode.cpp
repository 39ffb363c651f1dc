#include "tapegrad/datasets/text/encode.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace tapegrad::datasets {

namespace {

constexpr std::pair<Truncation, const char*> kTruncations[] = {
    {Truncation::head, "head"}, {Truncation::tail, "tail"}, {Truncation::head_tail, "head_tail"}};

}  // namespace

Truncation parse_truncation(std::string_view name) {
  for (const auto& [t, n] : kTruncations)
    if (name == n) return t;
  throw std::invalid_argument(fmt::format("truncation: expected head, tail or head_tail, got '{}'", name));
}

const char* truncation_name(Truncation t) {
  for (const auto& [value, n] : kTruncations)
    if (value == t) return n;
  return "?";
}

Kept truncation_window(std::size_t n, std::size_t max_len, Truncation t) {
  if (n <= max_len) return {n, n};
  switch (t) {
    case Truncation::head:
      return {max_len, n};
    case Truncation::tail:
      return {0, n - max_len};
    case Truncation::head_tail:
      return {(max_len + 1) / 2, n - max_len / 2};
  }
  return {n, n};
}

std::vector<std::int64_t> truncate_and_pad(const std::vector<std::int64_t>& ids, std::size_t max_len, Truncation t) {
  const Kept k = truncation_window(ids.size(), max_len, t);
  std::vector<std::int64_t> out(max_len, Vocabulary::pad_id);
  auto it = std::copy(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k.first), out.begin());
  std::copy(ids.begin() + static_cast<std::ptrdiff_t>(k.second), ids.end(), it);
  return out;
}

std::vector<std::size_t> EncodedDataset::all_indices(std::size_t n) {
  std::vector<std::size_t> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i] = i;
  return all;
}

EncodedDataset EncodedDataset::encode_texts(std::size_t count, const std::function<std::string_view(std::size_t)>& text,
                                            const std::function<std::int64_t(std::size_t)>& label,
                                            const std::vector<std::size_t>& indices, const Vocabulary& vocab,
                                            std::size_t max_len, Truncation truncation) {
  return encode_texts(
      count, text, label, indices,
      [&](std::string_view t, std::vector<std::int64_t>& ids) { vocab.encode_into(t, ids); }, max_len, truncation);
}

EncodedDataset EncodedDataset::encode_texts(
    std::size_t count, const std::function<std::string_view(std::size_t)>& text,
    const std::function<std::int64_t(std::size_t)>& label, const std::vector<std::size_t>& indices,
    const std::function<void(std::string_view, std::vector<std::int64_t>&)>& encode_into, std::size_t max_len,
    Truncation truncation) {
  if (max_len == 0) throw std::invalid_argument("EncodedDataset::encode: max_len must be positive, got 0");
  EncodedDataset d;
  d.max_len_ = max_len;
  d.ids_.reserve(indices.size() * std::min<std::size_t>(max_len, 256));
  d.offsets_.reserve(indices.size() + 1);
  d.token_counts_.reserve(indices.size());
  d.labels_.reserve(indices.size());
  std::vector<std::int64_t> scratch;
  for (const std::size_t i : indices) {
    if (i >= count)
      throw std::out_of_range(fmt::format("EncodedDataset::encode: index {} is outside [0, {})", i, count));
    scratch.clear();
    encode_into(text(i), scratch);
    const Kept k = truncation_window(scratch.size(), max_len, truncation);
    d.ids_.insert(d.ids_.end(), scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(k.first));
    d.ids_.insert(d.ids_.end(), scratch.begin() + static_cast<std::ptrdiff_t>(k.second), scratch.end());
    d.offsets_.push_back(d.ids_.size());
    d.token_counts_.push_back(scratch.size());
    d.labels_.push_back(label(i));
  }
  return d;
}

}  // namespace tapegrad::datasets
