#include "tapegrad/datasets/text/random_crop.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/shape.hpp"

namespace tapegrad::datasets {

void random_crop(xt::xarray<std::int64_t>& ids, xt::xarray<bool>& padding_mask, const CropOptions& options,
                 std::int64_t pad_id, std::uint64_t seed, std::uint64_t step) {
  if (!(options.p >= 0.0 && options.p <= 1.0)) {
    throw std::invalid_argument(fmt::format("random_crop: p must be in [0, 1], got {}", options.p));
  }
  if (options.min_tokens == 0 || options.min_tokens > options.max_tokens) {
    throw std::invalid_argument(fmt::format("random_crop: window lengths [{}, {}] must be positive and ordered",
                                            options.min_tokens, options.max_tokens));
  }
  if (ids.shape() != padding_mask.shape() || ids.dimension() != 2) {
    throw std::invalid_argument(fmt::format("random_crop: ids {} and padding_mask {} must share one [B, L] shape",
                                            format_shape(shape_of(ids)), format_shape(shape_of(padding_mask))));
  }
  if (options.p == 0.0) return;
  // Its own stream ("crop" in ASCII), apart from word dropout's for the same (seed, step).
  Generator gen(seed ^ 0x63726f70ULL ^ (0x9E3779B97F4A7C15ULL * (step + 1)));
  const std::size_t rows = ids.shape(0), cols = ids.shape(1);
  const std::size_t span = options.max_tokens - options.min_tokens + 1;
  for (std::size_t r = 0; r < rows; ++r) {
    // Three draws per row whether or not it is cropped, so that one row's fate does not shift the next's.
    const bool crop = gen.uniform() < options.p;
    const double length_draw = gen.uniform(), start_draw = gen.uniform();
    std::int64_t* id = ids.data() + r * cols;
    bool* pad = padding_mask.data() + r * cols;
    const std::size_t real = static_cast<std::size_t>(std::find(pad, pad + cols, true) - pad);
    const std::size_t wanted = options.min_tokens + std::min(span - 1, static_cast<std::size_t>(length_draw * span));
    const std::size_t window = std::min(wanted, real);
    if (!crop || window == real) continue;
    const std::size_t start = std::min(real - window, static_cast<std::size_t>(start_draw * (real - window + 1)));
    std::copy(id + start, id + start + window, id);
    std::fill(id + window, id + cols, pad_id);
    std::fill(pad + window, pad + cols, true);
  }
}

}  // namespace tapegrad::datasets
