#include "examples/translate/batches.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "tapegrad/autograd/messages.hpp"
#include "tapegrad/datasets/numbers/numbers.hpp"

namespace translate {

namespace ds = tapegrad::datasets;

std::string source_text(std::uint64_t value, Direction d) {
  return d == Direction::WordsToDigits ? ds::number_to_words(value) : std::to_string(value);
}
std::string target_text(std::uint64_t value, Direction d) {
  return d == Direction::WordsToDigits ? std::to_string(value) : ds::number_to_words(value);
}
Ids encode_source(const std::string& text, Direction d) {
  return d == Direction::WordsToDigits ? ds::encode_words(text) : ds::encode_digits(text);
}
Ids encode_target(const std::string& text, Direction d) {
  return d == Direction::WordsToDigits ? ds::encode_digits(text) : ds::encode_words(text);
}
std::string decode_target(const Ids& ids, Direction d) {
  return d == Direction::WordsToDigits ? ds::decode_digits(ids) : ds::decode_words(ids);
}
std::string decode_source(const Ids& ids, Direction d) {
  return d == Direction::WordsToDigits ? ds::decode_words(ids) : ds::decode_digits(ids);
}

namespace {

// A word of the source side: a number word or the hyphen, not a digit or a special token.
bool is_number_word(const std::string& word) {
  const std::int64_t id = ds::number_token_id(word);
  return id > ds::kNumberUnk && !(word.size() == 1 && std::isdigit(static_cast<unsigned char>(word[0])));
}

std::optional<std::string> unreadable_words(const std::string& text) {
  // Split as encode_words does: on whitespace and around '-', lower-cased.
  std::string word;
  std::size_t words = 0;
  std::optional<std::string> problem;
  const auto flush = [&] {
    if (word.empty() || problem) return word.clear();
    std::string lower = word;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!is_number_word(lower)) {
      problem = fmt::format("'{}' is not a number word", tapegrad::clip_for_message(word));
    }
    ++words;
    word.clear();
  };
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '-') {
      flush();
      if (c == '-') ++words;
    } else {
      word += c;
    }
  }
  flush();
  if (problem) return problem;
  if (words == 0) return std::string("it holds no number words");
  return std::nullopt;
}

std::optional<std::string> unreadable_digits(const std::string& text) {
  std::size_t significant = 0;
  bool any = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c)) || c == ',') continue;
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      // A multi-byte UTF-8 character is quoted whole.
      std::size_t end = i + 1;
      while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
      return fmt::format("'{}' is not a digit", tapegrad::clip_for_message(text.substr(i, end - i)));
    }
    any = true;
    if (significant > 0 || c != '0') ++significant;
  }
  if (!any) return std::string("it holds no digits");
  const std::size_t max_digits = std::to_string(ds::kMaxNumber).size();
  if (significant > max_digits) {
    return fmt::format("it is above {}, the largest number of the task", ds::kMaxNumber);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> untranslatable(const std::string& text, Direction d) {
  return d == Direction::WordsToDigits ? unreadable_words(text) : unreadable_digits(text);
}

Batch make_batch(const std::vector<Ids>& sources, const std::vector<Ids>& targets) {
  if (sources.empty()) throw std::invalid_argument("make_batch: no sources");
  if (!targets.empty() && targets.size() != sources.size())
    throw std::invalid_argument("make_batch: sources and targets differ in number");
  const std::size_t batch = sources.size();
  std::size_t s_len = 1, t_len = 1;
  for (const auto& s : sources) s_len = std::max(s_len, s.size());
  for (const auto& t : targets) t_len = std::max(t_len, t.size() + 1);

  Batch b;
  b.src = xt::xarray<std::int64_t>::from_shape({batch, s_len});
  b.src.fill(ds::kNumberPad);
  b.src_padding = xt::xarray<bool>::from_shape({batch, s_len});
  b.src_padding.fill(true);
  for (std::size_t i = 0; i < batch; ++i) {
    // An empty source keeps one visible (padding) position so that attention has a key to look at.
    if (sources[i].empty()) b.src_padding(i, 0) = false;
    for (std::size_t j = 0; j < sources[i].size(); ++j) {
      b.src(i, j) = sources[i][j];
      b.src_padding(i, j) = false;
    }
  }
  if (targets.empty()) return b;
  b.tgt_in = xt::xarray<std::int64_t>::from_shape({batch, t_len});
  b.tgt_in.fill(ds::kNumberPad);
  b.tgt_out = b.tgt_in;
  b.tgt_padding = xt::xarray<bool>::from_shape({batch, t_len});
  b.tgt_padding.fill(true);
  for (std::size_t i = 0; i < batch; ++i) {
    const auto& t = targets[i];
    b.tgt_in(i, 0) = ds::kNumberBos;
    for (std::size_t j = 0; j < t.size(); ++j) {
      b.tgt_in(i, j + 1) = t[j];
      b.tgt_out(i, j) = t[j];
    }
    b.tgt_out(i, t.size()) = ds::kNumberEos;
    for (std::size_t j = 0; j <= t.size(); ++j) b.tgt_padding(i, j) = false;
    b.target_tokens += t.size() + 1;
  }
  return b;
}

}  // namespace translate
