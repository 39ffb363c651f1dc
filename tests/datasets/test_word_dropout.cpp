// Word dropout (datasets/text/word_dropout.cpp).
#include "tests/datasets/helpers.hpp"

using namespace tapegrad::datasets;
using namespace tapegrad::testing::datasets_data;
using tapegrad::testing::TempDir;

TEST_CASE("word dropout: only real tokens become unk, at about the asked rate, reproducibly", "[datasets]") {
  xt::xarray<std::int64_t> ids = xt::xarray<std::int64_t>::from_shape({40, 100});
  xt::xarray<bool> pad = xt::xarray<bool>::from_shape({40, 100});
  for (std::size_t r = 0; r < 40; ++r) {
    for (std::size_t c = 0; c < 100; ++c) {
      pad(r, c) = c >= 50;
      ids(r, c) = pad(r, c) ? Vocabulary::pad_id : static_cast<std::int64_t>(2 + c);
    }
  }
  const auto original = ids;
  auto a = ids, b = ids, other_step = ids;
  word_dropout(a, pad, 0.2, Vocabulary::unk_id, 7, 3);
  word_dropout(b, pad, 0.2, Vocabulary::unk_id, 7, 3);
  word_dropout(other_step, pad, 0.2, Vocabulary::unk_id, 7, 4);
  CHECK(bool(a == b));
  CHECK(bool(a != other_step));
  std::size_t dropped = 0;
  for (std::size_t r = 0; r < 40; ++r) {
    for (std::size_t c = 0; c < 100; ++c) {
      if (pad(r, c)) {
        CHECK(a(r, c) == Vocabulary::pad_id);
      } else if (a(r, c) != original(r, c)) {
        CHECK(a(r, c) == Vocabulary::unk_id);
        ++dropped;
      }
    }
  }
  // 2,000 real tokens at p = 0.2: 400 expected, standard deviation ~18.
  CHECK(dropped > 320);
  CHECK(dropped < 480);
  auto untouched = ids;
  word_dropout(untouched, pad, 0.0, Vocabulary::unk_id, 7, 3);
  CHECK(bool(untouched == original));
  CHECK_THROWS_WITH(word_dropout(untouched, pad, 1.0, Vocabulary::unk_id, 7, 3),
                    "word_dropout: p must be in [0, 1), got 1");
  xt::xarray<bool> short_pad = xt::xarray<bool>::from_shape({40, 99});
  CHECK_THROWS_WITH(word_dropout(untouched, short_pad, 0.1, Vocabulary::unk_id, 7, 3),
                    "word_dropout: ids [40, 100] and padding_mask [40, 99] differ in shape");
}
