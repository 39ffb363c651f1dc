#include "tapegrad/datasets/text/word_dropout.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/shape.hpp"

namespace tapegrad::datasets {

void word_dropout(xt::xarray<std::int64_t>& ids, const xt::xarray<bool>& padding_mask, double p, std::int64_t unk_id,
                  std::uint64_t seed, std::uint64_t step) {
  if (!(p >= 0.0 && p < 1.0)) throw std::invalid_argument(fmt::format("word_dropout: p must be in [0, 1), got {}", p));
  if (ids.shape() != padding_mask.shape()) {
    throw std::invalid_argument(fmt::format("word_dropout: ids {} and padding_mask {} differ in shape",
                                            format_shape(shape_of(ids)), format_shape(shape_of(padding_mask))));
  }
  if (p == 0.0) return;
  // The golden-ratio multiplier spreads consecutive steps over the generator's seed space.
  Generator gen(seed ^ (0x9E3779B97F4A7C15ULL * (step + 1)));
  std::int64_t* id = ids.data();
  const bool* pad = padding_mask.data();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (!pad[i] && gen.uniform() < p) id[i] = unk_id;
  }
}

}  // namespace tapegrad::datasets
