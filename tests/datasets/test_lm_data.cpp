// Language-model data: BERT's 15% / 80-10-10 masking recipe (proportions, reproducibility, what it
// never touches), the vocabulary's optional <mask> token, next-token batches, reading train/ only.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "tapegrad/datasets/imdb/imdb.hpp"
#include "tapegrad/datasets/text/masking.hpp"
#include "tapegrad/datasets/text/next_token.hpp"
#include "tapegrad/datasets/text/vocab.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::datasets;

TEST_CASE("masking: 15% of each row's real tokens chosen, 80% <mask>, 10% random, 10% unchanged", "[datasets]") {
  const std::size_t rows = 400, length = 120, vocab = 1000;
  const std::int64_t mask_id = vocab - 1;
  xt::xarray<std::int64_t> ids = xt::xarray<std::int64_t>::from_shape({rows, length});
  xt::xarray<bool> pad = xt::xarray<bool>::from_shape({rows, length});
  Generator fill(1);
  std::size_t real_tokens = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t n = r % 7 == 0 ? 0 : 1 + fill.randint(length);  // some empty rows, some short ones
    for (std::size_t c = 0; c < length; ++c) {
      pad(r, c) = c >= n;
      ids(r, c) = pad(r, c) ? Vocabulary::pad_id : static_cast<std::int64_t>(1 + fill.randint(vocab - 2));
    }
    real_tokens += n;
  }
  const MaskedTokens m = mask_tokens(ids, pad, mask_id, vocab, MaskingOptions{}, 5, 0);
  std::size_t chosen = 0, masked = 0, random = 0, unchanged = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    std::size_t n = 0, in_row = 0;
    for (std::size_t c = 0; c < length; ++c) {
      n += !pad(r, c);
      if (m.targets(r, c) == -100) {
        CHECK(m.ids(r, c) == ids(r, c));  // not chosen: untouched (padding included)
        continue;
      }
      REQUIRE_FALSE(pad(r, c));
      CHECK(m.targets(r, c) == ids(r, c));
      ++in_row;
      if (m.ids(r, c) == mask_id) {
        ++masked;
      } else if (m.ids(r, c) == ids(r, c)) {
        ++unchanged;  // a random draw equal to the token counts here; 1 in 997
      } else {
        ++random;
        CHECK(m.ids(r, c) >= 2);
        CHECK(m.ids(r, c) < mask_id);
      }
    }
    // Exactly max(1, round(0.15 n)) per row with a real token.
    CHECK(in_row == (n == 0 ? 0 : std::max<std::size_t>(1, std::llround(0.15 * double(n)))));
    chosen += in_row;
  }
  CHECK(m.chosen == chosen);
  INFO("real " << real_tokens << ", chosen " << chosen << ": mask " << masked << ", random " << random << ", unchanged "
               << unchanged);
  CHECK(std::abs(double(chosen) / double(real_tokens) - 0.15) < 0.005);
  // About 3,500 chosen: the standard deviation of the 10% shares is ~0.5 points.
  CHECK(std::abs(double(masked) / double(chosen) - 0.8) < 0.02);
  CHECK(std::abs(double(random) / double(chosen) - 0.1) < 0.015);
  CHECK(std::abs(double(unchanged) / double(chosen) - 0.1) < 0.015);

  // Reproducible per (seed, step), different across steps and seeds.
  const MaskedTokens again = mask_tokens(ids, pad, mask_id, vocab, MaskingOptions{}, 5, 0);
  CHECK(bool(again.ids == m.ids));
  CHECK(bool(again.targets == m.targets));
  CHECK(bool(mask_tokens(ids, pad, mask_id, vocab, MaskingOptions{}, 5, 1).targets != m.targets));
  CHECK(bool(mask_tokens(ids, pad, mask_id, vocab, MaskingOptions{}, 6, 0).targets != m.targets));
}

TEST_CASE("masking: options and errors", "[datasets]") {
  const xt::xarray<std::int64_t> ids = {{2, 3, 4, 5}};
  const xt::xarray<bool> pad = {{false, false, false, false}};
  MaskingOptions all;
  all.mask_prob = 1.0;
  all.replace_with_mask = 1.0;
  all.replace_with_random = 0.0;
  const MaskedTokens m = mask_tokens(ids, pad, 9, 10, all, 0, 0, -1);
  CHECK(bool(m.ids == xt::xarray<std::int64_t>{{9, 9, 9, 9}}));
  CHECK(bool(m.targets == ids));
  MaskingOptions bad;
  bad.mask_prob = 0.0;
  CHECK_THROWS_WITH(mask_tokens(ids, pad, 9, 10, bad, 0, 0), "masking: mask_prob must be in (0, 1], got 0");
  bad = {};
  bad.replace_with_random = 0.3;
  CHECK_THROWS_WITH(mask_tokens(ids, pad, 9, 10, bad, 0, 0),
                    "masking: replace_with_mask 0.8 and replace_with_random 0.3 must be >= 0 with a sum <= 1");
  CHECK_THROWS_WITH(mask_tokens(ids, pad, 10, 10, MaskingOptions{}, 0, 0),
                    "mask_tokens: mask_id 10 is outside the vocabulary of 10 tokens");
  CHECK_THROWS_WITH(mask_tokens(ids, xt::xarray<bool>{{false, false}}, 9, 10, MaskingOptions{}, 0, 0),
                    "mask_tokens: ids [1, 4] and padding_mask [1, 2] must both be [batch, length]");
}

TEST_CASE("vocabulary: <mask> is added last, only when asked, and survives save and load", "[datasets]") {
  const std::vector<std::string> texts = {"a b b c c c", "d"};
  const Vocabulary plain = Vocabulary::build(texts, 10);
  CHECK_FALSE(plain.has_mask_token());
  CHECK_THROWS_WITH(plain.mask_id(), Catch::Contains("no <mask> token"));
  const Vocabulary with = plain.with_mask_token();
  REQUIRE(with.size() == plain.size() + 1);
  for (std::size_t i = 0; i < plain.size(); ++i) CHECK(with.tokens()[i] == plain.tokens()[i]);
  CHECK(with.mask_id() == std::int64_t(plain.size()));
  CHECK(with.token(with.mask_id()) == "<mask>");
  // The text "<mask>" is three tokens ('<', "mask", '>'), never the special one.
  const std::int64_t unk = Vocabulary::unk_id;
  CHECK(with.encode("<mask> c") == std::vector<std::int64_t>{unk, unk, unk, with.id("c")});
  CHECK_THROWS_WITH(with.with_mask_token(), "Vocabulary: it already has <mask>");
  testing::TempDir tmp;
  with.save(tmp.path / "vocab.txt");
  const Vocabulary back = Vocabulary::load(tmp.path / "vocab.txt");
  CHECK(back.tokens() == with.tokens());
  CHECK(back.mask_id() == with.mask_id());
  {
    std::ofstream out(tmp.path / "bad.txt");
    out << "<pad>\n<unk>\n<mask>\nthe\n";
  }
  CHECK_THROWS_WITH(Vocabulary::load(tmp.path / "bad.txt"), Catch::Contains("<mask> must be the last token"));
}

TEST_CASE("next-token batches: inputs drop the last position, targets the first, padding ignored", "[datasets]") {
  Batch batch;
  batch.ids = {{5, 6, 7, 8}, {9, 4, 0, 0}, {3, 0, 0, 0}};
  batch.padding_mask = {{false, false, false, false}, {false, false, true, true}, {false, true, true, true}};
  const NextTokenBatch n = next_token_batch(batch, -1);
  CHECK(bool(n.inputs == xt::xarray<std::int64_t>{{5, 6, 7}, {9, 4, 0}, {3, 0, 0}}));
  CHECK(bool(n.targets == xt::xarray<std::int64_t>{{6, 7, 8}, {4, -1, -1}, {-1, -1, -1}}));
  CHECK(n.count == 4);
  batch.ids = xt::xarray<std::int64_t>::from_shape({1, 1});
  batch.padding_mask = xt::xarray<bool>::from_shape({1, 1});
  CHECK_THROWS_WITH(next_token_batch(batch), "next_token_batch: needs ids [batch, length >= 2], got 2 dims of 1");
}

TEST_CASE("reading train/ only: the same training reviews, and test/ is never opened", "[datasets]") {
  const std::filesystem::path archive = std::filesystem::path(TAPEGRAD_TEST_DATA_DIR) / "aclImdb_small.tar.gz";
  const std::filesystem::path folder = std::filesystem::path(TAPEGRAD_TEST_DATA_DIR) / "aclImdb_small";
  const ImdbData both = read_imdb(archive);
  for (const auto& path : {archive, folder}) {
    const ImdbData train_only = read_imdb(path, ImdbSplits::TrainOnly);
    CHECK(train_only.test.empty());
    REQUIRE(train_only.train.size() == both.train.size());
    for (std::size_t i = 0; i < both.train.size(); ++i) CHECK(train_only.train[i].text == both.train[i].text);
  }
  // A copy without test/ reads too (and fails as before when both splits are asked for).
  testing::TempDir tmp;
  std::filesystem::copy(folder / "aclImdb" / "train", tmp.path / "train", std::filesystem::copy_options::recursive);
  CHECK(read_imdb(tmp.path, ImdbSplits::TrainOnly).train.size() == both.train.size());
  CHECK_THROWS_WITH(read_imdb(tmp.path), Catch::Contains("missing test/ split"));
}
