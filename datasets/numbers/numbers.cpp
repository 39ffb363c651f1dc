#include "tapegrad/datasets/numbers/numbers.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "tapegrad/autograd/generator.hpp"

namespace tapegrad::datasets {

namespace {

constexpr std::array<const char*, 20> kSmall = {
    "zero", "one",    "two",    "three",    "four",     "five",    "six",     "seven",     "eight",    "nine",
    "ten",  "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
constexpr std::array<const char*, 10> kTens = {"",      "",      "twenty",  "thirty", "forty",
                                               "fifty", "sixty", "seventy", "eighty", "ninety"};

// 1..99.
std::string below_hundred(std::uint64_t n) {
  if (n < 20) return kSmall[n];
  std::string s = kTens[n / 10];
  if (n % 10) s += std::string("-") + kSmall[n % 10];
  return s;
}

// 1..999.
std::string group_words(std::uint64_t n) {
  std::string s;
  if (n >= 100) {
    s = std::string(kSmall[n / 100]) + " hundred";
    if (n % 100) s += " and ";
  }
  if (n % 100) s += below_hundred(n % 100);
  return s;
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

const std::unordered_map<std::string, std::int64_t>& token_index() {
  static const auto index = [] {
    std::unordered_map<std::string, std::int64_t> m;
    const auto& tokens = number_tokens();
    for (std::size_t i = 0; i < tokens.size(); ++i) m.emplace(tokens[i], static_cast<std::int64_t>(i));
    return m;
  }();
  return index;
}

}  // namespace

std::string number_to_words(std::uint64_t n) {
  if (n > kMaxNumber) {
    throw std::invalid_argument(fmt::format("number_to_words: {} is outside 0..{}", n, kMaxNumber));
  }
  if (n == 0) return "zero";
  const std::uint64_t millions = n / 1'000'000, thousands = n / 1000 % 1000, units = n % 1000;
  std::string s;
  const auto append = [&](const std::string& part) { s += (s.empty() ? "" : " ") + part; };
  if (millions) append(group_words(millions) + " million");
  if (thousands) append(group_words(thousands) + " thousand");
  if (units) append((!s.empty() && units < 100 ? "and " : "") + group_words(units));
  return s;
}

NumberSplit number_split(std::uint64_t value, std::uint64_t seed) {
  const std::uint64_t bucket = splitmix64(value ^ splitmix64(seed)) % 100;
  return bucket < 5 ? NumberSplit::Valid : bucket < 10 ? NumberSplit::Test : NumberSplit::Train;
}

std::uint64_t draw_number(Generator& gen) {
  const std::uint64_t digits = 1 + gen.randint(9);
  if (digits == 1) return gen.randint(10);
  if (gen.randint(2) == 0) {
    std::uint64_t low = 1;
    for (std::uint64_t d = 1; d < digits; ++d) low *= 10;
    return low + gen.randint(9 * low);
  }
  const double zero_rate = gen.uniform();
  std::uint64_t value = 1 + gen.randint(9);
  for (std::uint64_t d = 1; d < digits; ++d) value = value * 10 + (gen.uniform() < zero_rate ? 0 : 1 + gen.randint(9));
  return value;
}

std::uint64_t draw_number(Generator& gen, NumberSplit split, std::uint64_t seed) {
  for (;;) {
    const std::uint64_t value = draw_number(gen);
    if (number_split(value, seed) == split) return value;
  }
}

NumbersDataset make_numbers_dataset(std::size_t train_size, std::size_t valid_size, std::size_t test_size,
                                    std::uint64_t seed) {
  // A split holds about 5% (valid, test) or 90% (train) of the 10^9 values; asking for more than a
  // fifth of that would make the rejection loop crawl.
  constexpr std::size_t kSmallSplitLimit = 10'000'000, kTrainLimit = 100'000'000;
  if (train_size > kTrainLimit || valid_size > kSmallSplitLimit || test_size > kSmallSplitLimit) {
    throw std::invalid_argument(fmt::format("make_numbers_dataset: sizes {}/{}/{} exceed the limits {}/{}/{}",
                                            train_size, valid_size, test_size, kTrainLimit, kSmallSplitLimit,
                                            kSmallSplitLimit));
  }
  NumbersDataset out;
  const auto fill = [&](std::vector<std::uint64_t>& set, std::size_t size, NumberSplit split, std::uint64_t stream) {
    Generator gen(splitmix64(seed) ^ stream);
    std::unordered_set<std::uint64_t> seen;
    set.reserve(size);
    while (set.size() < size) {
      const std::uint64_t value = draw_number(gen, split, seed);
      if (!seen.insert(value).second) continue;
      set.push_back(value);
    }
  };
  fill(out.train, train_size, NumberSplit::Train, 1);
  fill(out.valid, valid_size, NumberSplit::Valid, 2);
  fill(out.test, test_size, NumberSplit::Test, 3);
  return out;
}

const std::vector<std::string>& number_tokens() {
  static const std::vector<std::string> tokens = [] {
    std::vector<std::string> t = {"<pad>", "<bos>", "<eos>", "<unk>"};
    for (char c = '0'; c <= '9'; ++c) t.emplace_back(1, c);
    for (const char* w : kSmall) t.emplace_back(w);
    for (std::size_t i = 2; i < kTens.size(); ++i) t.emplace_back(kTens[i]);
    for (const char* w : {"hundred", "thousand", "million", "and", "-"}) t.emplace_back(w);
    return t;
  }();
  return tokens;
}

std::int64_t number_token_id(std::string_view token) {
  const auto& index = token_index();
  const auto it = index.find(std::string(token));
  return it == index.end() ? kNumberUnk : it->second;
}

std::vector<std::int64_t> encode_words(std::string_view text) {
  std::vector<std::int64_t> ids;
  std::string word;
  const auto flush = [&] {
    if (!word.empty()) ids.push_back(number_token_id(word));
    word.clear();
  };
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      flush();
    } else if (c == '-') {
      flush();
      ids.push_back(number_token_id("-"));
    } else {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  flush();
  return ids;
}

std::vector<std::int64_t> encode_digits(std::string_view text) {
  std::vector<std::int64_t> ids;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == ',') continue;
    ids.push_back(number_token_id(std::string(1, c)));
  }
  return ids;
}

std::string decode_words(const std::vector<std::int64_t>& ids) {
  const auto& tokens = number_tokens();
  std::string s;
  bool after_hyphen = false;
  for (std::int64_t id : ids) {
    if (id == kNumberPad || id == kNumberBos || id == kNumberEos) continue;
    const std::string& t = id >= 0 && static_cast<std::size_t>(id) < tokens.size() ? tokens[id] : tokens[kNumberUnk];
    if (t == "-") {
      s += t;
      after_hyphen = true;
      continue;
    }
    if (!s.empty() && !after_hyphen) s += ' ';
    s += t;
    after_hyphen = false;
  }
  return s;
}

std::string decode_digits(const std::vector<std::int64_t>& ids) {
  const auto& tokens = number_tokens();
  std::string s;
  for (std::int64_t id : ids) {
    if (id == kNumberPad || id == kNumberBos || id == kNumberEos) continue;
    s += id >= 0 && static_cast<std::size_t>(id) < tokens.size() ? tokens[id] : tokens[kNumberUnk];
  }
  return s;
}

}  // namespace tapegrad::datasets
