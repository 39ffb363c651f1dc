// Truncation and encoding (datasets/text/encode.cpp).
#include "tests/datasets/helpers.hpp"

using namespace tapegrad::datasets;
using namespace tapegrad::testing::datasets_data;
using tapegrad::testing::TempDir;

TEST_CASE("truncation: head, tail and head_tail, padded with 0 at the end", "[datasets]") {
  const std::vector<std::int64_t> ids = {11, 12, 13, 14, 15, 16, 17};
  using V = std::vector<std::int64_t>;
  CHECK(truncate_and_pad(ids, 3) == V{11, 12, 13});
  CHECK(truncate_and_pad(ids, 3, Truncation::head) == V{11, 12, 13});
  CHECK(truncate_and_pad(ids, 3, Truncation::tail) == V{15, 16, 17});
  CHECK(truncate_and_pad(ids, 3, Truncation::head_tail) == V{11, 12, 17});  // odd: ceil half from the head
  CHECK(truncate_and_pad(ids, 4, Truncation::head_tail) == V{11, 12, 16, 17});
  CHECK(truncate_and_pad(ids, 1, Truncation::head_tail) == V{11});
  for (auto t : {Truncation::head, Truncation::tail, Truncation::head_tail}) {
    CHECK(truncate_and_pad(ids, 7, t) == ids);
    CHECK(truncate_and_pad(ids, 9, t) == V{11, 12, 13, 14, 15, 16, 17, 0, 0});
    CHECK(truncate_and_pad({}, 2, t) == V{0, 0});
    CHECK(parse_truncation(truncation_name(t)) == t);
  }
  CHECK_THROWS_AS(parse_truncation("middle"), std::invalid_argument);
}

TEST_CASE("EncodedDataset keeps lengths, token counts and labels", "[datasets]") {
  std::vector<Review> reviews = {{"a b c d e", 0, 1, 0}, {"", 1, 10, 1}, {"c a", 1, 8, 2}};
  const auto vocab = Vocabulary::build(Strings{"a b c d e"}, 10);  // a=2 b=3 c=4 d=5 e=6
  const auto enc = EncodedDataset::encode(reviews, vocab, 3, Truncation::head_tail);
  REQUIRE(enc.size() == 3);
  CHECK(enc.max_len() == 3);
  CHECK(enc.token_counts() == std::vector<std::size_t>{5, 0, 2});
  CHECK(enc.length(0) == 3);
  CHECK(std::vector<std::int64_t>(enc.ids(0), enc.ids(0) + 3) == std::vector<std::int64_t>{2, 3, 6});
  CHECK(enc.length(1) == 0);
  CHECK(std::vector<std::int64_t>(enc.ids(2), enc.ids(2) + 2) == std::vector<std::int64_t>{4, 2});
  CHECK(enc.labels() == std::vector<std::int64_t>{0, 1, 1});
  const auto sub = EncodedDataset::encode(reviews, {2, 0}, vocab, 2, Truncation::tail);
  CHECK(sub.labels() == std::vector<std::int64_t>{1, 0});
  CHECK(std::vector<std::int64_t>(sub.ids(1), sub.ids(1) + 2) == std::vector<std::int64_t>{5, 6});
  CHECK_THROWS_AS(EncodedDataset::encode(reviews, vocab, 0), std::invalid_argument);
  CHECK_THROWS_AS(EncodedDataset::encode(reviews, {3}, vocab, 2), std::out_of_range);
}
