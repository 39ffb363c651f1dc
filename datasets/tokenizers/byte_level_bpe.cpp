#include "tapegrad/datasets/tokenizers/byte_level_bpe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <queue>
#include <stdexcept>

#include "tapegrad/autograd/messages.hpp"
#include "tapegrad/datasets/tokenizers/bytes_to_unicode.hpp"
#include "tapegrad/datasets/tokenizers/gpt2_pretokenizer.hpp"
#include "tapegrad/datasets/tokenizers/read_file.hpp"
#include "tapegrad/datasets/tokenizers/unicode.hpp"
#include "tapegrad/io/json.hpp"

namespace tapegrad::datasets::tokenizers {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::string_view kWho = "ByteLevelBPE";
constexpr std::int64_t kMaxId = std::numeric_limits<std::int32_t>::max() - 1;
constexpr std::int32_t kNoMerge = std::numeric_limits<std::int32_t>::max();
// Pieces up to this many bytes merge by rescanning, longer ones through a heap (the same merges).
constexpr std::size_t kShortPiece = 8;

[[noreturn]] void fail(const std::string& source, const std::string& problem) {
  throw std::runtime_error(fmt::format("{}: {}: {}", kWho, source, problem));
}

std::string shown(std::string_view s) { return "'" + tapegrad::clip_for_message(s) + "'"; }

// The bytes a token string stands for: its characters read through GPT-2's table; a token with a
// character outside the table (an added token such as "<|endoftext|>" spelled plainly is inside it)
// stands for its own UTF-8 bytes.
std::string token_bytes(std::string_view token) {
  std::string bytes;
  for (std::size_t i = 0; i < token.size();) {
    const CodePoint cp = decode_utf8(token, i);
    const int b = cp.valid ? unicode_to_byte(cp.value) : -1;
    if (b < 0) return std::string(token);
    bytes.push_back(static_cast<char>(b));
    i += cp.length;
  }
  return bytes;
}

json parse(const std::string& source, const std::string& text) {
  try {
    return io::parse_json(text);
  } catch (const std::runtime_error& e) {
    fail(source, e.what());
  }
}

std::int64_t id_value(const std::string& source, const json& value, std::string_view token) {
  if (!value.is_number_integer() || value.get<std::int64_t>() < 0 || value.get<std::int64_t>() > kMaxId)
    fail(source, fmt::format("the id of token {} is {}, not an integer in [0, {}]", shown(token),
                             tapegrad::clip_for_message(value.dump()), kMaxId));
  return value.get<std::int64_t>();
}

std::vector<std::pair<std::string, std::int64_t>> read_vocab(const std::string& source, const json& vocab) {
  if (!vocab.is_object())
    fail(source, fmt::format("the vocabulary is a JSON {}, not an object", std::string(vocab.type_name())));
  std::vector<std::pair<std::string, std::int64_t>> out;
  out.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) out.emplace_back(token, id_value(source, id, token));
  return out;
}

std::pair<std::string, std::string> split_merge(const std::string& where, std::string_view line) {
  const auto space = line.find(' ');
  if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
      line.find(' ', space + 1) != std::string_view::npos)
    throw std::runtime_error(
        fmt::format("{}: {}: a merge is two tokens separated by one space, got {}", kWho, where, shown(line)));
  return {std::string(line.substr(0, space)), std::string(line.substr(space + 1))};
}

}  // namespace

struct ByteLevelBPE::Cache {
  static constexpr std::size_t kMaxEntries = 1 << 18;
  static constexpr std::size_t kMaxPieceBytes = 256;
  std::mutex mutex;
  std::unordered_map<std::string, std::vector<std::int32_t>> pieces;
};

ByteLevelBPE::ByteLevelBPE(std::shared_ptr<const Data> data)
    : data_(std::move(data)), cache_(std::make_shared<Cache>()) {}

ByteLevelBPE ByteLevelBPE::build(const std::string& source, std::vector<std::pair<std::string, std::int64_t>> vocab,
                                 const std::vector<std::pair<std::string, std::string>>& merges,
                                 const std::vector<std::string>& merge_where,
                                 std::vector<std::pair<std::string, std::int64_t>> specials) {
  auto data = std::make_shared<Data>();
  std::int64_t size = 0;
  for (const auto& [token, id] : vocab) size = std::max(size, id + 1);
  for (const auto& [token, id] : specials) size = std::max(size, id + 1);
  // Ids number the tokens from 0; a sparse id would size the tables by its value, not the file's.
  if (static_cast<std::size_t>(size) > vocab.size() + specials.size())
    fail(source, fmt::format("its largest id is {}, but it holds only {} tokens: ids must number them from 0", size - 1,
                             vocab.size() + specials.size()));
  data->tokens.resize(static_cast<std::size_t>(size));
  data->bytes_of.resize(static_cast<std::size_t>(size));
  data->used.assign(static_cast<std::size_t>(size), false);
  const auto add = [&](const std::string& token, std::int64_t id, bool special) {
    const auto i = static_cast<std::size_t>(id);
    if (data->used[i]) {
      if (data->tokens[i] == token) return;
      fail(source, fmt::format("id {} is given to two tokens, {} and {}", id, shown(data->tokens[i]), shown(token)));
    }
    const auto [it, inserted] = data->index.emplace(token, id);
    if (!inserted) fail(source, fmt::format("token {} has two ids, {} and {}", shown(token), it->second, id));
    data->tokens[i] = token;
    data->bytes_of[i] = special ? token : token_bytes(token);
    data->used[i] = true;
  };
  data->index.reserve(vocab.size() + specials.size());
  for (const auto& [token, id] : vocab) add(token, id, false);
  for (const auto& [token, id] : specials) {
    if (token.empty()) fail(source, fmt::format("the special token of id {} is empty", id));
    add(token, id, true);
  }
  const auto& byte_strings = byte_to_unicode_strings();
  for (int b = 0; b < 256; ++b) {
    const auto it = data->index.find(byte_strings[b]);
    if (it == data->index.end())
      fail(source, fmt::format("the vocabulary has no token for byte 0x{:02X} ({}), which byte-level BPE needs", b,
                               shown(byte_strings[b])));
    data->byte_ids[b] = static_cast<std::int32_t>(it->second);
  }
  data->merges.reserve(merges.size());
  for (std::size_t r = 0; r < merges.size(); ++r) {
    const std::string& left = merges[r].first;
    const std::string& right = merges[r].second;
    const auto id_of = [&](const std::string& token) {
      const auto it = data->index.find(token);
      if (it == data->index.end())
        fail(merge_where[r], fmt::format("the merge {} names {}, which is not in the vocabulary",
                                         shown(left + " " + right), shown(token)));
      return static_cast<std::uint64_t>(it->second);
    };
    const std::uint64_t key = id_of(left) << 32 | id_of(right);
    const auto merged = static_cast<std::int32_t>(id_of(left + right));
    data->merges.emplace(key, Merge{static_cast<std::int32_t>(r), merged});  // a repeated pair keeps its first rank
  }
  std::sort(specials.begin(), specials.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  data->specials = std::move(specials);
  return ByteLevelBPE(std::move(data));
}

ByteLevelBPE ByteLevelBPE::from_files(const fs::path& vocab_json, const fs::path& merges_txt,
                                      const std::vector<std::string>& special_tokens) {
  const std::string vocab_source = vocab_json.string();
  auto vocab = read_vocab(vocab_source, parse(vocab_source, read_whole_file(vocab_json, kWho)));
  const std::string text = read_whole_file(merges_txt, kWho);
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<std::string> where;
  std::size_t line_number = 0;
  for (std::size_t start = 0; start < text.size();) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_number == 1 && line.substr(0, 8) == "#version")) continue;
    where.push_back(fmt::format("{}:{}", merges_txt.string(), line_number));
    merges.push_back(split_merge(where.back(), line));
  }
  std::vector<std::pair<std::string, std::int64_t>> specials;
  for (const auto& token : special_tokens) {
    const auto it = std::find_if(vocab.begin(), vocab.end(), [&](const auto& e) { return e.first == token; });
    if (it == vocab.end()) fail(vocab_source, fmt::format("the special token {} is not in it", shown(token)));
    specials.push_back(*it);
  }
  return build(vocab_source, std::move(vocab), merges, where, std::move(specials));
}

ByteLevelBPE ByteLevelBPE::from_tokenizer_json(const fs::path& path) {
  const std::string source = path.string();
  const json root = parse(source, read_whole_file(path, kWho));
  if (!root.is_object())
    fail(source, fmt::format("the file is a JSON {}, not an object", std::string(root.type_name())));
  const auto member = [&](const json& object, const char* key) -> const json& {
    static const json null;
    const auto it = object.find(key);
    return it == object.end() ? null : *it;
  };
  const json& model = member(root, "model");
  if (!model.is_object()) fail(source, "it has no \"model\" object");
  const json& type = member(model, "type");
  if (!type.is_null() && type != "BPE")
    fail(source, fmt::format("model.type is {}; only \"BPE\" is implemented", tapegrad::clip_for_message(type.dump())));
  const json& normalizer = member(root, "normalizer");
  if (!normalizer.is_null())
    fail(source, fmt::format("it has a normalizer ({}); tapegrad's byte-level BPE does not support a normalizer",
                             tapegrad::clip_for_message(member(normalizer, "type").dump())));
  const json& pre = member(root, "pre_tokenizer");
  if (!pre.is_object() || member(pre, "type") != "ByteLevel")
    fail(source, fmt::format("the pre_tokenizer is {}; only ByteLevel (GPT-2's) is implemented",
                             tapegrad::clip_for_message(pre.is_object() ? member(pre, "type").dump() : pre.dump())));
  const auto refuse_true = [&](const json& object, const char* key, const char* where) {
    if (member(object, key) == true)
      fail(source, fmt::format("{}.{} is true, which tapegrad does not support", where, key));
  };
  refuse_true(pre, "add_prefix_space", "pre_tokenizer");
  if (member(pre, "use_regex") == false)
    fail(source, "pre_tokenizer.use_regex is false, which tapegrad does not support");
  refuse_true(model, "byte_fallback", "model");
  refuse_true(model, "ignore_merges", "model");
  const json& dropout = member(model, "dropout");
  if (!dropout.is_null() && !(dropout.is_number() && dropout.get<double>() == 0.0))
    fail(source, fmt::format("model.dropout is {}; tapegrad does not support BPE dropout", dropout.dump()));
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json& v = member(model, key);
    if (!v.is_null() && v != "")
      fail(source,
           fmt::format("model.{} is {}, which tapegrad does not support", key, tapegrad::clip_for_message(v.dump())));
  }
  auto vocab = read_vocab(source + " (model.vocab)", member(model, "vocab"));
  const json& merge_list = member(model, "merges");
  if (!merge_list.is_array()) fail(source, "model.merges is not an array");
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<std::string> where;
  merges.reserve(merge_list.size());
  where.reserve(merge_list.size());
  for (std::size_t i = 0; i < merge_list.size(); ++i) {
    const json& m = merge_list[i];
    where.push_back(fmt::format("{} (model.merges[{}])", source, i));
    if (m.is_string()) {
      merges.push_back(split_merge(where.back(), m.get_ref<const std::string&>()));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      fail(where.back(),
           fmt::format("a merge is \"a b\" or [\"a\", \"b\"], got {}", tapegrad::clip_for_message(m.dump())));
    }
  }
  std::vector<std::pair<std::string, std::int64_t>> specials;
  const json& added = member(root, "added_tokens");
  if (!added.is_null() && !added.is_array()) fail(source, "added_tokens is not an array");
  if (added.is_array()) {
    for (std::size_t i = 0; i < added.size(); ++i) {
      const json& a = added[i];
      const std::string at = fmt::format("added_tokens[{}]", i);
      if (!a.is_object() || !member(a, "content").is_string())
        fail(source, fmt::format("{} has no string \"content\"", at));
      for (const char* key : {"lstrip", "rstrip", "single_word"}) refuse_true(a, key, at.c_str());
      const std::string content = member(a, "content").get<std::string>();
      specials.emplace_back(content, id_value(source + " (" + at + ")", member(a, "id"), content));
    }
  }
  return build(source, std::move(vocab), merges, where, std::move(specials));
}

ByteLevelBPE ByteLevelBPE::from_pretrained(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "tokenizer.json", ec)) return from_tokenizer_json(dir / "tokenizer.json");
  if (!fs::exists(dir / "vocab.json", ec) || !fs::exists(dir / "merges.txt", ec))
    throw std::runtime_error(
        fmt::format("{}: {} holds neither tokenizer.json nor vocab.json and merges.txt", kWho, dir.string()));
  ByteLevelBPE bpe = from_files(dir / "vocab.json", dir / "merges.txt");
  const std::int64_t eot = bpe.token_to_id("<|endoftext|>");
  if (eot < 0) return bpe;
  auto data = std::make_shared<Data>(*bpe.data_);
  data->specials = {{"<|endoftext|>", eot}};
  return ByteLevelBPE(std::move(data));
}

namespace {

// A piece's merges, the lowest rank first and the leftmost of equal ranks, by rescanning the pairs
// after each merge: fastest for the short pieces that most are.
template <typename RankOf, typename Merged>
void merge_short(std::vector<std::int32_t>& symbols, RankOf rank_of, Merged merged) {
  std::vector<std::int32_t> ranks(symbols.empty() ? 0 : symbols.size() - 1);
  for (std::size_t i = 0; i < ranks.size(); ++i) ranks[i] = rank_of(symbols[i], symbols[i + 1]);
  while (!ranks.empty()) {
    const auto best = std::min_element(ranks.begin(), ranks.end());  // the leftmost of equal ranks
    if (*best == kNoMerge) break;
    const auto i = static_cast<std::size_t>(best - ranks.begin());
    symbols[i] = merged(symbols[i], symbols[i + 1]);
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    ranks.erase(ranks.begin() + static_cast<std::ptrdiff_t>(i));
    if (i > 0) ranks[i - 1] = rank_of(symbols[i - 1], symbols[i]);
    if (i < ranks.size()) ranks[i] = rank_of(symbols[i], symbols[i + 1]);
  }
}

// The same merges through a heap of candidate pairs over a linked list, in O(n log n): a long piece
// (a run of letters or punctuation thousands of bytes long) must not take quadratic time.
template <typename RankOf, typename Merged>
void merge_long(std::vector<std::int32_t>& symbols, RankOf rank_of, Merged merged) {
  const auto n = static_cast<std::int32_t>(symbols.size());
  std::vector<std::int32_t> next(symbols.size()), prev(symbols.size());
  std::vector<bool> alive(symbols.size(), true);
  for (std::int32_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  struct Candidate {
    std::int32_t rank, left, left_id, right_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  const auto consider = [&](std::int32_t left) {
    if (left < 0 || next[left] < 0) return;
    const std::int32_t rank = rank_of(symbols[left], symbols[next[left]]);
    if (rank != kNoMerge) heap.push({rank, left, symbols[left], symbols[next[left]]});
  };
  for (std::int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    const std::int32_t right = next[c.left];
    // A candidate whose symbols have merged since it was queued is stale.
    if (!alive[c.left] || right < 0 || symbols[c.left] != c.left_id || symbols[right] != c.right_id) continue;
    symbols[c.left] = merged(c.left_id, c.right_id);
    alive[right] = false;
    next[c.left] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.left;
    consider(prev[c.left]);
    consider(c.left);
  }
  std::size_t kept = 0;
  for (std::int32_t i = 0; i >= 0 && i < n; i = next[i]) symbols[kept++] = symbols[i];
  symbols.resize(kept);
}

}  // namespace

void ByteLevelBPE::encode_piece(std::string_view piece, std::vector<std::int64_t>& out) const {
  const bool cacheable = piece.size() <= Cache::kMaxPieceBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    const auto it = cache_->pieces.find(std::string(piece));
    if (it != cache_->pieces.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const Data& d = *data_;
  const auto key = [](std::int32_t a, std::int32_t b) {
    return static_cast<std::uint64_t>(a) << 32 | static_cast<std::uint32_t>(b);
  };
  const auto rank_of = [&](std::int32_t a, std::int32_t b) {
    const auto it = d.merges.find(key(a, b));
    return it == d.merges.end() ? kNoMerge : it->second.rank;
  };
  const auto merged = [&](std::int32_t a, std::int32_t b) { return d.merges.at(key(a, b)).id; };
  std::vector<std::int32_t> symbols(piece.size());
  for (std::size_t i = 0; i < piece.size(); ++i) symbols[i] = d.byte_ids[static_cast<unsigned char>(piece[i])];
  if (piece.size() <= kShortPiece)
    merge_short(symbols, rank_of, merged);
  else
    merge_long(symbols, rank_of, merged);
  out.insert(out.end(), symbols.begin(), symbols.end());
  if (!cacheable) return;
  std::lock_guard<std::mutex> lock(cache_->mutex);
  if (cache_->pieces.size() >= Cache::kMaxEntries) cache_->pieces.clear();
  cache_->pieces.emplace(std::string(piece), std::move(symbols));
}

void ByteLevelBPE::encode_plain(std::string_view text, std::vector<std::int64_t>& out) const {
  std::vector<std::string_view> pieces;
  gpt2_pretokenize(text, pieces);
  for (const auto piece : pieces) encode_piece(piece, out);
}

std::vector<std::int64_t> ByteLevelBPE::encode_ordinary(std::string_view text) const {
  std::vector<std::int64_t> out;
  encode_plain(text, out);
  return out;
}

std::vector<std::int64_t> ByteLevelBPE::encode(std::string_view text) const {
  std::vector<std::int64_t> out;
  const auto& specials = data_->specials;
  // Each special token's next occurrence at or after `start`, searched again only once passed.
  std::vector<std::size_t> next(specials.size());
  for (std::size_t k = 0; k < specials.size(); ++k) next[k] = text.find(specials[k].first);
  std::size_t start = 0;
  while (start < text.size()) {
    // The leftmost special token; specials are sorted longest first, so the first found at a position wins.
    std::size_t best = specials.size();
    for (std::size_t k = 0; k < specials.size(); ++k) {
      if (next[k] != std::string_view::npos && next[k] < start) next[k] = text.find(specials[k].first, start);
      if (next[k] != std::string_view::npos && (best == specials.size() || next[k] < next[best])) best = k;
    }
    if (best == specials.size()) break;
    encode_plain(text.substr(start, next[best] - start), out);
    out.push_back(specials[best].second);
    start = next[best] + specials[best].first.size();
  }
  encode_plain(text.substr(start), out);
  return out;
}

std::string ByteLevelBPE::decode(const std::vector<std::int64_t>& ids) const {
  std::string out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int64_t id = ids[i];
    if (id < 0 || static_cast<std::size_t>(id) >= data_->used.size() || !data_->used[static_cast<std::size_t>(id)])
      throw std::invalid_argument(
          fmt::format("{}::decode: ids[{}] = {} is not in the vocabulary (size {})", kWho, i, id, data_->used.size()));
    out += data_->bytes_of[static_cast<std::size_t>(id)];
  }
  return out;
}

std::int64_t ByteLevelBPE::token_to_id(std::string_view token) const {
  const auto it = data_->index.find(std::string(token));
  return it == data_->index.end() ? -1 : it->second;
}

const std::string& ByteLevelBPE::id_to_token(std::int64_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= data_->used.size() || !data_->used[static_cast<std::size_t>(id)])
    throw std::invalid_argument(
        fmt::format("{}::id_to_token: {} is not in the vocabulary (size {})", kWho, id, data_->used.size()));
  return data_->tokens[static_cast<std::size_t>(id)];
}

}  // namespace tapegrad::datasets::tokenizers
