// The numbers translation task's data: English wording, tokens, the disjoint seeded splits, draws.
#include <catch2/catch.hpp>
#include <set>

#include "tapegrad/datasets/numbers/numbers.hpp"

using namespace tapegrad;

TEST_CASE("numbers: English wording of chosen numbers", "[translate]") {
  using datasets::number_to_words;
  CHECK(number_to_words(0) == "zero");
  CHECK(number_to_words(7) == "seven");
  CHECK(number_to_words(13) == "thirteen");
  CHECK(number_to_words(40) == "forty");
  CHECK(number_to_words(42) == "forty-two");
  CHECK(number_to_words(101) == "one hundred and one");
  CHECK(number_to_words(110) == "one hundred and ten");
  CHECK(number_to_words(999) == "nine hundred and ninety-nine");
  CHECK(number_to_words(1000) == "one thousand");
  CHECK(number_to_words(1001) == "one thousand and one");
  CHECK(number_to_words(1100) == "one thousand one hundred");
  CHECK(number_to_words(3412) == "three thousand four hundred and twelve");
  CHECK(number_to_words(100000) == "one hundred thousand");
  CHECK(number_to_words(1000000) == "one million");
  CHECK(number_to_words(1000100) == "one million one hundred");
  CHECK(number_to_words(2000042) == "two million and forty-two");
  CHECK(number_to_words(999999999) ==
        "nine hundred and ninety-nine million nine hundred and ninety-nine thousand nine hundred and ninety-nine");
  CHECK_THROWS_WITH(number_to_words(1000000000), Catch::Contains("1000000000 is outside 0..999999999"));
}

TEST_CASE("numbers: tokens round-trip and unknown words become <unk>", "[translate]") {
  using namespace datasets;
  CHECK(number_tokens().size() == 47);
  for (std::uint64_t n : {0ULL, 21ULL, 3412ULL, 2000042ULL, 999999999ULL}) {
    const std::string words = number_to_words(n);
    CHECK(decode_words(encode_words(words)) == words);
    CHECK(decode_digits(encode_digits(std::to_string(n))) == std::to_string(n));
  }
  CHECK(encode_words("Forty-Two").size() == 3);
  CHECK(encode_words("forty-two") ==
        std::vector<std::int64_t>{number_token_id("forty"), number_token_id("-"), number_token_id("two")});
  CHECK(encode_words("twelve apples") == std::vector<std::int64_t>{number_token_id("twelve"), kNumberUnk});
  CHECK(encode_digits("1,234") == encode_digits("1234"));
  CHECK(decode_digits({kNumberBos, number_token_id("4"), kNumberUnk, kNumberEos}) == "4<unk>");
  CHECK(encode_words(number_to_words(777777777)).size() == 20);
}

TEST_CASE("numbers: the sets are disjoint, distinct, reproducible and follow number_split", "[translate]") {
  using namespace datasets;
  const auto a = make_numbers_dataset(20000, 2000, 2000, 42);
  const auto b = make_numbers_dataset(20000, 2000, 2000, 42);
  CHECK(a.train == b.train);
  CHECK(a.valid == b.valid);
  CHECK(a.test == b.test);
  CHECK(a.test != make_numbers_dataset(20000, 2000, 2000, 43).test);
  std::set<std::uint64_t> all;
  const std::pair<const std::vector<std::uint64_t>*, NumberSplit> sets[] = {
      {&a.train, NumberSplit::Train}, {&a.valid, NumberSplit::Valid}, {&a.test, NumberSplit::Test}};
  std::size_t total = 0, short_ones = 0;
  for (const auto& [set, split] : sets) {
    total += set->size();
    for (auto v : *set) {
      all.insert(v);
      CHECK(v <= kMaxNumber);
      if (number_split(v, 42) != split) FAIL("value " << v << " is in the wrong set");
      short_ones += v < 1000;
    }
  }
  CHECK(all.size() == total);  // no value twice, within or across sets
  CHECK(a.train.size() == 20000);
  CHECK(short_ones > 500);  // every digit count is drawn: short numbers are present
  // Round numbers are common: among the values of 7 digits or more, a zero thousands or units group
  // (one uniform value in 500) and at most two non-zero digits.
  std::size_t long_ones = 0, zero_group = 0, sparse = 0;
  for (auto v : a.train) {
    if (v < 1'000'000) continue;
    ++long_ones;
    zero_group += v / 1000 % 1000 == 0 || v % 1000 == 0;
    std::size_t nonzero = 0;
    for (auto x = v; x; x /= 10) nonzero += x % 10 != 0;
    sparse += nonzero <= 2;
  }
  CHECK(zero_group > long_ones / 10);
  CHECK(sparse > long_ones / 20);
  // The split function itself: about 5% / 5% / 90%.
  std::size_t counts[3] = {0, 0, 0};
  for (std::uint64_t v = 0; v < 100000; ++v) ++counts[static_cast<int>(number_split(v, 42))];
  CHECK(counts[1] == Approx(5000).margin(400));
  CHECK(counts[2] == Approx(5000).margin(400));
}

TEST_CASE("numbers: draw_number keeps to its split and draws round numbers often", "[translate]") {
  using namespace datasets;
  Generator gen(5);
  std::size_t round_millions = 0;  // 1000000, 2000000, ..., 9000000
  constexpr std::size_t kDraws = 20000;
  for (std::size_t i = 0; i < kDraws; ++i) {
    const std::uint64_t v = draw_number(gen, NumberSplit::Train, 42);
    if (number_split(v, 42) != NumberSplit::Train) FAIL("value " << v << " is not in the training split");
    round_millions += v >= 1'000'000 && v < 10'000'000 && v % 1'000'000 == 0;
  }
  // P = 1/9 (seven digits) * 1/2 (round) * 1/7 (six zeros, z uniform), times the training share of
  // those nine values: about 1 draw in 140, so ~140 here, where uniform draws would give 0.02.
  CHECK(round_millions > 60);
  CHECK(round_millions < 250);
  Generator a(9), b(9);
  for (int i = 0; i < 100; ++i) CHECK(draw_number(a) == draw_number(b));
}
