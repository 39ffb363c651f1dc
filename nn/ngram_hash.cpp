#include "tapegrad/nn/ngram_hash.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "tapegrad/autograd/shape.hpp"

namespace tapegrad::nn {

std::uint64_t ngram_hash(const std::int64_t* tokens, std::size_t n) {
  std::uint64_t h = 14695981039346656037ULL;
  const auto mix = [&h](std::uint8_t byte) {
    h ^= byte;
    h *= 1099511628211ULL;
  };
  mix(static_cast<std::uint8_t>(n));
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = static_cast<std::uint64_t>(tokens[i]);
    for (int byte = 0; byte < 8; ++byte) mix(static_cast<std::uint8_t>(v >> (8 * byte)));
  }
  return h;
}

xt::xarray<std::int64_t> ngram_buckets(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask,
                                       std::size_t num_buckets, std::size_t max_n) {
  if (num_buckets < 2) throw std::invalid_argument(fmt::format("ngram_buckets: num_buckets {} < 2", num_buckets));
  if (max_n < 2) throw std::invalid_argument(fmt::format("ngram_buckets: max_n {} < 2", max_n));
  if (ids.dimension() != 2 || shape_of(ids) != shape_of(padding_mask)) {
    throw std::invalid_argument(fmt::format("ngram_buckets: ids {} and padding_mask {} must both be [batch, length]",
                                            format_shape(shape_of(ids)), format_shape(shape_of(padding_mask))));
  }
  const std::size_t batch = ids.shape(0), length = ids.shape(1), orders = max_n - 1;
  xt::xarray<std::int64_t> out = xt::zeros<std::int64_t>({batch, length, orders});
  const std::int64_t* id = ids.data();
  const bool* pad = padding_mask.data();
  std::int64_t* o = out.data();
  for (std::size_t b = 0; b < batch; ++b) {
    std::size_t run = 0;  // real tokens ending at t, counted back to the last padding
    for (std::size_t t = 0; t < length; ++t) {
      const std::size_t at = b * length + t;
      run = pad[at] ? 0 : run + 1;
      for (std::size_t n = 2; n <= max_n && n <= run; ++n) {
        o[at * orders + (n - 2)] = ngram_bucket(id + at + 1 - n, n, num_buckets);
      }
    }
  }
  return out;
}

xt::xarray<std::int64_t> document_ngram_buckets(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask,
                                                std::size_t num_buckets, std::size_t max_n) {
  if (num_buckets < 2) {
    throw std::invalid_argument(fmt::format("document_ngram_buckets: num_buckets {} < 2", num_buckets));
  }
  if (max_n < 1) throw std::invalid_argument("document_ngram_buckets: max_n 0 < 1");
  if (ids.dimension() != 2 || shape_of(ids) != shape_of(padding_mask)) {
    throw std::invalid_argument(
        fmt::format("document_ngram_buckets: ids {} and padding_mask {} must both be [batch, length]",
                    format_shape(shape_of(ids)), format_shape(shape_of(padding_mask))));
  }
  const std::size_t batch = ids.shape(0), length = ids.shape(1);
  const std::int64_t* id = ids.data();
  const bool* pad = padding_mask.data();
  std::vector<std::vector<std::int64_t>> rows(batch);
  std::size_t widest = 0;
  for (std::size_t b = 0; b < batch; ++b) {
    auto& row = rows[b];
    std::size_t run = 0;  // real tokens ending at t, counted back to the last padding
    for (std::size_t t = 0; t < length; ++t) {
      const std::size_t at = b * length + t;
      run = pad[at] ? 0 : run + 1;
      for (std::size_t n = 1; n <= max_n && n <= run; ++n) {
        row.push_back(ngram_bucket(id + at + 1 - n, n, num_buckets));
      }
    }
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    widest = std::max(widest, row.size());
  }
  xt::xarray<std::int64_t> out = xt::zeros<std::int64_t>({batch, widest});
  for (std::size_t b = 0; b < batch; ++b) std::copy(rows[b].begin(), rows[b].end(), out.data() + b * widest);
  return out;
}

}  // namespace tapegrad::nn
