// Batching (datasets/text/batching.cpp): shapes, masks, labels, shuffles and length bucketing.
#include "tests/datasets/helpers.hpp"

using namespace tapegrad::datasets;
using namespace tapegrad::testing::datasets_data;
using tapegrad::testing::TempDir;

TEST_CASE("batching: shapes, padding masks and labels", "[datasets]") {
  const auto data = synthetic(10, 6);
  BatchOptions o;
  o.batch_size = 4;
  DataLoader loader(data, o);
  REQUIRE(loader.size() == 3);
  std::size_t seen = 0;
  for (std::size_t b = 0; b < loader.size(); ++b) {
    const Batch batch = loader.batch(b);
    const std::size_t B = batch.indices.size();
    CHECK(B == (b + 1 < loader.size() ? 4 : 2));
    CHECK(batch.ids.shape() == std::vector<std::size_t>{B, 6});
    CHECK(batch.padding_mask.shape() == std::vector<std::size_t>{B, 6});
    CHECK(batch.labels.shape() == std::vector<std::size_t>{B});
    for (std::size_t r = 0; r < B; ++r) {
      const std::size_t i = batch.indices[r], len = data.length(i);
      CHECK(batch.labels(r) == data.label(i));
      for (std::size_t t = 0; t < 6; ++t) {
        CHECK(batch.padding_mask(r, t) == (t >= len));
        CHECK(batch.ids(r, t) == (t < len ? data.ids(i)[t] : Vocabulary::pad_id));
      }
    }
    seen += B;
  }
  CHECK(seen == 10);
  o.drop_last = true;
  CHECK(DataLoader(data, o).size() == 2);
  o.drop_last = false;
  o.trim = true;
  o.shuffle = false;
  const Batch first = DataLoader(data, o).batch(0);  // reviews 0..3 have 1, 8, 5, 2 tokens, max_len 6
  CHECK(first.ids.shape() == std::vector<std::size_t>{4, 6});
  CHECK(first.indices == std::vector<std::size_t>{0, 1, 2, 3});
  const Batch short_batch = collate(data, {0, 3});
  CHECK(short_batch.ids.shape() == std::vector<std::size_t>{2, 2});
  CHECK(short_batch.padding_mask == xt::xarray<bool>({{false, true}, {false, false}}));
  CHECK_THROWS_AS(collate(data, {1}, 3), std::invalid_argument);
  // One rank's rows of a global batch: same length, rows in the order asked, repeats allowed.
  const Batch rows = take_rows(first, {3, 0, 3});
  CHECK(rows.ids.shape() == std::vector<std::size_t>{3, 6});
  CHECK(rows.indices == std::vector<std::size_t>{3, 0, 3});
  CHECK(xt::all(xt::equal(xt::view(rows.ids, 1), xt::view(first.ids, 0))));
  CHECK(xt::all(xt::equal(xt::view(rows.padding_mask, 2), xt::view(first.padding_mask, 3))));
  CHECK(rows.labels(0) == first.labels(3));
  CHECK_THROWS_AS(take_rows(first, {4}), std::out_of_range);
  o.batch_size = 0;
  CHECK_THROWS_AS(DataLoader(data, o), std::invalid_argument);
}

TEST_CASE("batching: each epoch's shuffle is reproducible and differs from the others", "[datasets]") {
  const auto data = synthetic(50, 60);
  BatchOptions o;
  o.batch_size = 8;
  o.seed = 3;
  DataLoader a(data, o), b(data, o);
  const auto epoch0 = a.plan();
  a.set_epoch(1);
  const auto epoch1 = a.plan();
  CHECK(epoch0 != epoch1);
  b.set_epoch(1);
  CHECK(b.plan() == epoch1);
  a.set_epoch(0);
  CHECK(a.plan() == epoch0);
  o.seed = 4;
  CHECK(DataLoader(data, o).plan() != epoch0);
  for (const auto& plan : {epoch0, epoch1}) {
    auto all = flatten(plan);
    std::sort(all.begin(), all.end());
    for (std::size_t i = 0; i < all.size(); ++i) CHECK(all[i] == i);
  }
  o.shuffle = false;
  CHECK(flatten(DataLoader(data, o).plan())[7] == 7);
}

TEST_CASE("batching: length bucketing keeps every review exactly once and cuts padding", "[datasets]") {
  const auto data = synthetic(103, 120);
  BatchOptions o;
  o.batch_size = 8;
  o.seed = 11;
  const auto plain = DataLoader(data, o);
  o.bucket_chunk = 4;
  DataLoader bucketed(data, o);
  for (std::uint64_t epoch : {0, 1, 2}) {
    bucketed.set_epoch(epoch);
    auto all = flatten(bucketed.plan());
    REQUIRE(all.size() == data.size());
    std::sort(all.begin(), all.end());
    for (std::size_t i = 0; i < all.size(); ++i) CHECK(all[i] == i);
    for (const auto& batch : bucketed.plan()) CHECK(batch.size() <= 8);
  }
  const auto fixed = plain.stats(), bucket = bucketed.stats();
  CHECK(fixed.tokens == bucket.tokens);
  CHECK(fixed.positions == 103 * 120);
  CHECK(bucket.positions < fixed.positions);
  CHECK(bucket.padding_fraction() < 0.25);
  const Batch b0 = bucketed.batch(0);  // trimmed to its longest review
  std::size_t longest = 0;
  for (auto i : b0.indices) longest = std::max(longest, data.length(i));
  CHECK(b0.ids.shape(1) == longest);
  // The batches of a chunk come out in shuffled order, not short to long.
  std::vector<std::size_t> first_lengths;
  for (const auto& batch : bucketed.plan()) first_lengths.push_back(data.length(batch[0]));
  CHECK_FALSE(std::is_sorted(first_lengths.begin(), first_lengths.end()));
}
