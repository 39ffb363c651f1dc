#include "tapegrad/datasets/text/masking.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/shape.hpp"

namespace tapegrad::datasets {

void MaskingOptions::validate() const {
  if (!(mask_prob > 0.0 && mask_prob <= 1.0)) {
    throw std::invalid_argument(fmt::format("masking: mask_prob must be in (0, 1], got {}", mask_prob));
  }
  if (!(replace_with_mask >= 0.0 && replace_with_random >= 0.0 && replace_with_mask + replace_with_random <= 1.0)) {
    throw std::invalid_argument(
        fmt::format("masking: replace_with_mask {} and replace_with_random {} must be >= 0 with a sum <= 1",
                    replace_with_mask, replace_with_random));
  }
}

MaskedTokens mask_tokens(const xt::xarray<std::int64_t>& ids, const xt::xarray<bool>& padding_mask,
                         std::int64_t mask_id, std::size_t vocab_size, const MaskingOptions& options,
                         std::uint64_t seed, std::uint64_t step, std::int64_t ignore_index) {
  options.validate();
  if (ids.dimension() != 2 || ids.shape() != padding_mask.shape()) {
    throw std::invalid_argument(fmt::format("mask_tokens: ids {} and padding_mask {} must both be [batch, length]",
                                            format_shape(shape_of(ids)), format_shape(shape_of(padding_mask))));
  }
  if (mask_id < 0 || static_cast<std::size_t>(mask_id) >= vocab_size) {
    throw std::invalid_argument(
        fmt::format("mask_tokens: mask_id {} is outside the vocabulary of {} tokens", mask_id, vocab_size));
  }
  // Ordinary ids: [2, vocab_size) without mask_id.
  const std::size_t ordinary = vocab_size - 2 - (mask_id >= 2 ? 1 : 0);
  if (vocab_size <= 2 || ordinary == 0) {
    throw std::invalid_argument(
        fmt::format("mask_tokens: a vocabulary of {} tokens has no ordinary token to draw", vocab_size));
  }
  MaskedTokens out;
  out.ids = ids;
  out.targets = xt::xarray<std::int64_t>::from_shape(ids.shape());
  std::fill(out.targets.begin(), out.targets.end(), ignore_index);
  Generator gen(seed ^ (0xD1B54A32D192ED03ULL * (step + 1)));
  const std::size_t rows = ids.shape(0), length = ids.shape(1);
  std::vector<std::size_t> real;
  for (std::size_t b = 0; b < rows; ++b) {
    real.clear();
    for (std::size_t t = 0; t < length; ++t)
      if (!padding_mask(b, t)) real.push_back(t);
    if (real.empty()) continue;
    const std::size_t n = real.size();
    const auto want = static_cast<std::size_t>(std::llround(options.mask_prob * static_cast<double>(n)));
    const std::size_t k = std::min(n, std::max<std::size_t>(1, want));
    for (std::size_t i = 0; i < k; ++i) {
      std::swap(real[i], real[i + gen.randint(n - i)]);
      const std::size_t t = real[i];
      out.targets(b, t) = ids(b, t);
      const double u = gen.uniform();
      if (u < options.replace_with_mask) {
        out.ids(b, t) = mask_id;
      } else if (u < options.replace_with_mask + options.replace_with_random) {
        auto r = static_cast<std::int64_t>(2 + gen.randint(ordinary));
        if (mask_id >= 2 && r >= mask_id) ++r;
        out.ids(b, t) = r;
      }
    }
    out.chosen += k;
  }
  return out;
}

}  // namespace tapegrad::datasets
