// Random crops (datasets/text/random_crop.cpp).
#include "tests/datasets/helpers.hpp"

using namespace tapegrad::datasets;
using namespace tapegrad::testing::datasets_data;
using tapegrad::testing::TempDir;

TEST_CASE("random crop: a cropped row is a window of its own tokens, at the start, reproducibly", "[datasets]") {
  // Rows of different real lengths (10 .. 129), each token its position + 2, so a window shows where it began.
  const std::size_t rows = 120, cols = 130;
  xt::xarray<std::int64_t> ids = xt::xarray<std::int64_t>::from_shape({rows, cols});
  xt::xarray<bool> pad = xt::xarray<bool>::from_shape({rows, cols});
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      pad(r, c) = c >= 10 + r;
      ids(r, c) = pad(r, c) ? Vocabulary::pad_id : static_cast<std::int64_t>(2 + c);
    }
  }
  const CropOptions options{0.5, 8, 64};
  auto a = ids, b = ids, other_step = ids;
  auto pad_a = pad, pad_b = pad, pad_other = pad;
  random_crop(a, pad_a, options, Vocabulary::pad_id, 7, 3);
  random_crop(b, pad_b, options, Vocabulary::pad_id, 7, 3);
  random_crop(other_step, pad_other, options, Vocabulary::pad_id, 7, 4);
  CHECK(bool(a == b));
  CHECK(bool(pad_a == pad_b));
  CHECK(bool(a != other_step));
  std::size_t cropped = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t real = 10 + r;
    std::size_t kept = 0;
    while (kept < cols && !pad_a(r, kept)) ++kept;
    for (std::size_t c = kept; c < cols; ++c) {
      CHECK(pad_a(r, c));
      CHECK(a(r, c) == Vocabulary::pad_id);
    }
    if (kept == real) {
      CHECK(bool(xt::view(a, r) == xt::view(ids, r)));
      continue;
    }
    ++cropped;
    CHECK(kept >= options.min_tokens);
    CHECK(kept <= std::min(options.max_tokens, real));
    // Consecutive tokens of the original row, starting anywhere the window fits.
    const std::int64_t start = a(r, 0) - 2;
    CHECK(start >= 0);
    CHECK(static_cast<std::size_t>(start) + kept <= real);
    for (std::size_t c = 0; c < kept; ++c) CHECK(a(r, c) == ids(r, static_cast<std::size_t>(start) + c));
  }
  // 120 rows at p = 0.5, of which only the rows longer than their window change: about 60, sd ~5.5.
  CHECK(cropped > 40);
  CHECK(cropped < 80);
  auto all = ids;
  auto pad_all = pad;
  random_crop(all, pad_all, CropOptions{1.0, 5, 5}, Vocabulary::pad_id, 1, 1);
  for (std::size_t r = 0; r < rows; ++r)
    CHECK(std::count(pad_all.begin() + r * cols, pad_all.begin() + (r + 1) * cols, false) == 5);
  auto untouched = ids;
  auto pad_untouched = pad;
  random_crop(untouched, pad_untouched, CropOptions{0.0, 8, 64}, Vocabulary::pad_id, 7, 3);
  CHECK(bool(untouched == ids));
  CHECK_THROWS_WITH(random_crop(untouched, pad_untouched, CropOptions{1.5, 8, 64}, Vocabulary::pad_id, 7, 3),
                    "random_crop: p must be in [0, 1], got 1.5");
  CHECK_THROWS_WITH(random_crop(untouched, pad_untouched, CropOptions{0.5, 9, 8}, Vocabulary::pad_id, 7, 3),
                    "random_crop: window lengths [9, 8] must be positive and ordered");
  xt::xarray<bool> short_pad = xt::xarray<bool>::from_shape({rows, cols - 1});
  CHECK_THROWS_WITH(random_crop(untouched, short_pad, options, Vocabulary::pad_id, 7, 3),
                    "random_crop: ids [120, 130] and padding_mask [120, 129] must share one [B, L] shape");
}
