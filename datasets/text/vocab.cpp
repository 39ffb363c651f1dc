#include "tapegrad/datasets/text/vocab.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "tapegrad/autograd/messages.hpp"
#include "tapegrad/datasets/text/tokenizer.hpp"

namespace tapegrad::datasets {

namespace {

Vocabulary build_from(const std::string_view* texts, std::size_t n, std::size_t vocab_size) {
  if (vocab_size < 2)
    throw std::invalid_argument(fmt::format(
        "Vocabulary::build: vocab_size counts <pad> and <unk>, so it must be at least 2, got {}", vocab_size));
  // Keys own their bytes: the tokenizer's views are only valid during its callback.
  std::unordered_map<std::string, std::uint64_t> counts;
  counts.reserve(1 << 17);
  std::string key;
  for (std::size_t i = 0; i < n; ++i)
    for_each_token(texts[i], [&](std::string_view t) {
      key.assign(t.data(), t.size());
      ++counts[key];
    });
  std::vector<std::pair<std::uint64_t, std::string_view>> ranked;
  ranked.reserve(counts.size());
  for (const auto& [tok, c] : counts) ranked.emplace_back(c, tok);
  const std::size_t keep = std::min(ranked.size(), vocab_size - 2);
  // std::string_view compares bytes as unsigned char (char_traits<char>), i.e. ascending byte order.
  const auto better = [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(keep), ranked.end(), better);
  std::vector<std::string> tokens{std::string(Vocabulary::pad_token), std::string(Vocabulary::unk_token)};
  tokens.reserve(keep + 2);
  for (std::size_t i = 0; i < keep; ++i) tokens.emplace_back(ranked[i].second);
  return Vocabulary::from_tokens(std::move(tokens));
}

// A token the tokenizer can produce: a non-empty run of [a-z0-9'], or one byte that is neither such a
// byte nor ASCII whitespace nor an upper-case letter (those are lower-cased first).
bool producible(std::string_view t) {
  if (t.empty()) return false;
  const auto c0 = static_cast<unsigned char>(t[0]);
  if (t.size() == 1) return !detail::is_ascii_space(c0) && !(c0 >= 'A' && c0 <= 'Z');
  return std::all_of(t.begin(), t.end(), [](char c) { return detail::is_word_byte(static_cast<unsigned char>(c)); });
}

}  // namespace

Vocabulary Vocabulary::build(const std::vector<std::string_view>& texts, std::size_t vocab_size) {
  return build_from(texts.data(), texts.size(), vocab_size);
}

Vocabulary Vocabulary::build(const std::vector<std::string>& texts, std::size_t vocab_size) {
  std::vector<std::string_view> views(texts.begin(), texts.end());
  return build_from(views.data(), views.size(), vocab_size);
}

Vocabulary Vocabulary::from_tokens(std::vector<std::string> tokens) {
  if (tokens.size() < 2 || tokens[0] != pad_token || tokens[1] != unk_token)
    throw std::invalid_argument("Vocabulary: the first two tokens must be <pad> and <unk>");
  auto data = std::make_shared<Data>();
  data->tokens = std::move(tokens);
  data->index.reserve(data->tokens.size());
  for (std::size_t i = 0; i < data->tokens.size(); ++i)
    if (!data->index.emplace(data->tokens[i], static_cast<std::int64_t>(i)).second)
      throw std::invalid_argument(fmt::format("Vocabulary: token '{}' appears twice (index {})",
                                              tapegrad::clip_for_message(data->tokens[i]), i));
  const auto mask = data->index.find(mask_token);
  if (mask != data->index.end()) {
    if (static_cast<std::size_t>(mask->second) != data->tokens.size() - 1) {
      throw std::invalid_argument(fmt::format("Vocabulary: {} must be the last token, found at index {} of {}",
                                              mask_token, mask->second, data->tokens.size()));
    }
    data->mask_id = mask->second;
  }
  return Vocabulary(std::move(data));
}

Vocabulary Vocabulary::with_mask_token() const {
  if (has_mask_token()) throw std::invalid_argument(fmt::format("Vocabulary: it already has {}", mask_token));
  std::vector<std::string> tokens = data_->tokens;
  tokens.emplace_back(mask_token);
  return from_tokens(std::move(tokens));
}

std::int64_t Vocabulary::mask_id() const {
  if (!has_mask_token()) {
    throw std::logic_error(
        fmt::format("Vocabulary: no {} token in this vocabulary of {} (see with_mask_token)", mask_token, size()));
  }
  return data_->mask_id;
}

const std::string& Vocabulary::token(std::int64_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= size())
    throw std::out_of_range(fmt::format("Vocabulary::token: id {} is outside [0, {})", id, size()));
  return data_->tokens[static_cast<std::size_t>(id)];
}

std::size_t Vocabulary::encode_into(std::string_view text, std::vector<std::int64_t>& out) const {
  const std::size_t before = out.size();
  for_each_token(text, [&](std::string_view t) { out.push_back(id(t)); });
  return out.size() - before;
}

std::vector<std::int64_t> Vocabulary::encode(std::string_view text) const {
  std::vector<std::int64_t> ids;
  encode_into(text, ids);
  return ids;
}

void Vocabulary::save(const std::filesystem::path& path) const {
  // Written next to the target and renamed over it: a process killed while saving leaves the previous
  // file (or none), never a truncated vocabulary beside a model that needs all of it.
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(fmt::format("Vocabulary::save: cannot open '{}' for writing", tmp.string()));
    for (const auto& t : data_->tokens) out << t << '\n';
    out.flush();
    if (!out) throw std::runtime_error(fmt::format("Vocabulary::save: writing '{}' failed", tmp.string()));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw std::runtime_error(fmt::format("Vocabulary::save: cannot rename '{}' to '{}'", tmp.string(), path.string()));
  }
}

Vocabulary Vocabulary::load(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("vocabulary file '{}' cannot be opened", path.string()));
  std::vector<std::string> tokens;
  std::string line;
  const auto bad = [&](std::size_t line_no, const std::string& why) {
    return std::runtime_error(fmt::format("vocabulary file '{}', line {}: {}", path.string(), line_no, why));
  };
  while (std::getline(in, line)) {
    const std::size_t line_no = tokens.size() + 1;
    if (line_no == 1 && line != pad_token)
      throw bad(line_no, fmt::format("expected {}, got '{}'", pad_token, tapegrad::clip_for_message(line)));
    if (line_no == 2 && line != unk_token)
      throw bad(line_no, fmt::format("expected {}, got '{}'", unk_token, tapegrad::clip_for_message(line)));
    if (line_no > 2 && line.empty()) throw bad(line_no, "empty token");
    if (line_no > 2 && line != mask_token && !producible(line))
      throw bad(line_no, fmt::format("'{}' is not a token the tokenizer produces", tapegrad::clip_for_message(line)));
    tokens.push_back(std::move(line));
  }
  if (in.bad()) throw std::runtime_error(fmt::format("vocabulary file '{}' cannot be read", path.string()));
  if (tokens.size() < 2)
    throw std::runtime_error(fmt::format("vocabulary file '{}' has {} lines; it must start with {} and {}",
                                         path.string(), tokens.size(), pad_token, unk_token));
  try {
    return from_tokens(std::move(tokens));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(fmt::format("vocabulary file '{}': {}", path.string(), e.what()));
  }
}

}  // namespace tapegrad::datasets
