#include "tapegrad/datasets/text/next_token.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace tapegrad::datasets {

NextTokenBatch next_token_batch(const Batch& batch, std::int64_t ignore_index) {
  if (batch.ids.dimension() != 2 || batch.ids.shape(1) < 2) {
    throw std::invalid_argument(fmt::format("next_token_batch: needs ids [batch, length >= 2], got {} dims of {}",
                                            batch.ids.dimension(),
                                            batch.ids.dimension() == 2 ? batch.ids.shape(1) : 0));
  }
  const std::size_t rows = batch.ids.shape(0), length = batch.ids.shape(1) - 1;
  NextTokenBatch out;
  out.inputs = xt::xarray<std::int64_t>::from_shape({rows, length});
  out.targets = xt::xarray<std::int64_t>::from_shape({rows, length});
  for (std::size_t b = 0; b < rows; ++b) {
    for (std::size_t t = 0; t < length; ++t) {
      out.inputs(b, t) = batch.ids(b, t);
      const bool real = !batch.padding_mask(b, t + 1);
      out.targets(b, t) = real ? batch.ids(b, t + 1) : ignore_index;
      out.count += real ? 1 : 0;
    }
  }
  return out;
}

}  // namespace tapegrad::datasets
