#include "examples/imdb/features/log_count_ratio.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "tapegrad/autograd/shape.hpp"
#include "tapegrad/nn/ngram_hash.hpp"

namespace imdb::features {

NgramLogCountRatio::NgramLogCountRatio(std::size_t num_buckets, std::size_t max_n)
    : num_buckets_(num_buckets), max_n_(max_n) {
  if (num_buckets < 2 || max_n < 1) {
    throw std::invalid_argument(fmt::format(
        "NgramLogCountRatio: num_buckets {} must be at least 2 and max_n {} at least 1", num_buckets, max_n));
  }
  counts_[0].assign(num_buckets, 0);
  counts_[1].assign(num_buckets, 0);
}

void NgramLogCountRatio::add(const xt::xarray<std::int64_t>& ids, const tapegrad::BoolArray& padding_mask,
                             const xt::xarray<std::int64_t>& labels) {
  if (labels.dimension() != 1 || ids.dimension() != 2 || labels.size() != ids.shape(0)) {
    throw std::invalid_argument(fmt::format("NgramLogCountRatio: labels {} must be [batch] for ids {}",
                                            tapegrad::format_shape(tapegrad::shape_of(labels)),
                                            tapegrad::format_shape(tapegrad::shape_of(ids))));
  }
  for (std::size_t b = 0; b < labels.size(); ++b) {
    if (labels(b) != 0 && labels(b) != 1) {
      throw std::invalid_argument(
          fmt::format("NgramLogCountRatio: label {} of document {} is not 0 or 1", labels(b), b));
    }
  }
  const auto buckets = tapegrad::nn::document_ngram_buckets(ids, padding_mask, num_buckets_, max_n_);
  const std::size_t width = buckets.dimension() == 2 ? buckets.shape(1) : 0;
  for (std::size_t b = 0; b < labels.size(); ++b) {
    auto& counts = counts_[labels(b)];
    for (std::size_t k = 0; k < width; ++k) {
      const std::int64_t bucket = buckets(b, k);
      if (bucket != 0) ++counts[static_cast<std::size_t>(bucket)];
    }
    ++documents_[labels(b)];
  }
}

xt::xarray<double> NgramLogCountRatio::ratio(double alpha, std::size_t min_documents) const {
  if (!(alpha > 0.0) || std::isinf(alpha)) {
    throw std::invalid_argument(fmt::format("NgramLogCountRatio: alpha {} must be a finite number > 0", alpha));
  }
  double total[2] = {0.0, 0.0};
  for (int c = 0; c < 2; ++c)
    for (std::size_t b = 1; b < num_buckets_; ++b) total[c] += alpha + static_cast<double>(counts_[c][b]);
  xt::xarray<double> r = xt::zeros<double>({num_buckets_});
  for (std::size_t b = 1; b < num_buckets_; ++b) {
    if (std::size_t{counts_[0][b]} + counts_[1][b] < min_documents) continue;
    const double p = (alpha + static_cast<double>(counts_[1][b])) / total[1];
    const double q = (alpha + static_cast<double>(counts_[0][b])) / total[0];
    r(b) = std::log(p / q);
  }
  return r;
}

std::vector<double> token_log_count_ratios(const tapegrad::datasets::EncodedDataset& data, std::size_t vocab_size,
                                           double alpha) {
  if (!(alpha > 0.0)) throw std::invalid_argument(fmt::format("token_log_count_ratios: alpha {} must be > 0", alpha));
  std::vector<double> count[2] = {std::vector<double>(vocab_size, 0.0), std::vector<double>(vocab_size, 0.0)};
  std::vector<std::size_t> last_seen(vocab_size, data.size());  // binarized: once per example
  for (std::size_t i = 0; i < data.size(); ++i) {
    const std::int64_t label = data.label(i);
    if (label != 0 && label != 1) {
      throw std::invalid_argument(fmt::format("token_log_count_ratios: example {} has label {}, not 0 or 1", i, label));
    }
    const std::int64_t* ids = data.ids(i);
    for (std::size_t t = 0; t < data.length(i); ++t) {
      if (ids[t] < 0 || static_cast<std::size_t>(ids[t]) >= vocab_size) {
        throw std::invalid_argument(
            fmt::format("token_log_count_ratios: example {} holds id {}, outside [0, {})", i, ids[t], vocab_size));
      }
      const auto id = static_cast<std::size_t>(ids[t]);
      if (last_seen[id] == i) continue;
      last_seen[id] = i;
      count[label][id] += 1.0;
    }
  }
  double total[2] = {0.0, 0.0};
  for (int c = 0; c < 2; ++c) {
    for (double& n : count[c]) total[c] += (n += alpha);
  }
  std::vector<double> ratio(vocab_size);
  for (std::size_t id = 0; id < vocab_size; ++id) {
    ratio[id] = std::log(count[1][id] / total[1]) - std::log(count[0][id] / total[0]);
  }
  return ratio;
}

}  // namespace imdb::features
