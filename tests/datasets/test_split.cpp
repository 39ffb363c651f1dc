// The validation split (datasets/text/split.cpp).
#include "tests/datasets/helpers.hpp"

using namespace tapegrad::datasets;
using namespace tapegrad::testing::datasets_data;
using tapegrad::testing::TempDir;

TEST_CASE("validation split: seeded, stratified, disjoint and complete", "[datasets]") {
  std::vector<std::int64_t> labels(1000);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = i < 700 ? 0 : 1;
  const auto s = train_valid_split(labels, 0.1, 7);
  CHECK(s.valid.size() == 100);
  CHECK(s.train.size() == 900);
  CHECK(std::count_if(s.valid.begin(), s.valid.end(), [&](std::size_t i) { return labels[i] == 1; }) == 30);
  CHECK(std::is_sorted(s.train.begin(), s.train.end()));
  CHECK(std::is_sorted(s.valid.begin(), s.valid.end()));
  std::set<std::size_t> all(s.train.begin(), s.train.end());
  for (const auto i : s.valid) CHECK(all.insert(i).second);  // disjoint
  CHECK(all.size() == labels.size());                        // complete
  const auto again = train_valid_split(labels, 0.1, 7);
  CHECK(again.valid == s.valid);
  CHECK(again.train == s.train);
  CHECK(train_valid_split(labels, 0.1, 8).valid != s.valid);
  CHECK(train_valid_split(labels, 0.0, 7).valid.empty());
  CHECK_THROWS_AS(train_valid_split(labels, 1.0, 7), std::invalid_argument);
  const auto fixture = read_imdb(kSmallArchive);
  const auto fs_split = train_valid_split(fixture.train, 1.0 / 3.0, 0);
  CHECK(fs_split.valid.size() == 2);  // one of each class
  CHECK(fixture.train[fs_split.valid[0]].label == 0);
  CHECK(fixture.train[fs_split.valid[1]].label == 1);
}
