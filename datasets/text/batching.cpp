#include "tapegrad/datasets/text/batching.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/datasets/epoch_seed.hpp"

namespace tapegrad::datasets {

namespace {
std::size_t longest(const EncodedDataset& data, const std::vector<std::size_t>& indices) {
  std::size_t L = 1;
  for (const std::size_t i : indices) L = std::max(L, data.length(i));
  return L;
}
}  // namespace

std::vector<std::vector<std::size_t>> epoch_batches(const EncodedDataset& data, const BatchOptions& options,
                                                    std::uint64_t epoch) {
  if (options.batch_size == 0) throw std::invalid_argument("epoch_batches: batch_size must be positive, got 0");
  const std::size_t n = data.size(), B = options.batch_size;
  Generator gen(epoch_seed(options.seed, epoch));
  std::vector<std::size_t> order;
  if (options.shuffle) {
    order = gen.permutation(n);
  } else {
    order.resize(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
  }
  if (options.bucket_chunk > 0) {
    const std::size_t chunk = options.bucket_chunk * B;
    for (std::size_t start = 0; start < n; start += chunk) {
      const auto first = order.begin() + static_cast<std::ptrdiff_t>(start);
      const auto last = order.begin() + static_cast<std::ptrdiff_t>(std::min(n, start + chunk));
      std::stable_sort(first, last, [&](std::size_t a, std::size_t b) { return data.length(a) < data.length(b); });
    }
  }
  std::vector<std::vector<std::size_t>> batches;
  batches.reserve((n + B - 1) / B);
  for (std::size_t start = 0; start < n; start += B) {
    const std::size_t end = std::min(n, start + B);
    if (end - start < B && options.drop_last) break;
    batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start),
                         order.begin() + static_cast<std::ptrdiff_t>(end));
  }
  // Sorted chunks would otherwise feed the batches from short to long within every chunk.
  if (options.bucket_chunk > 0 && options.shuffle) {
    const auto perm = gen.permutation(batches.size());
    std::vector<std::vector<std::size_t>> shuffled(batches.size());
    for (std::size_t k = 0; k < perm.size(); ++k) shuffled[k] = std::move(batches[perm[k]]);
    batches = std::move(shuffled);
  }
  return batches;
}

Batch collate(const EncodedDataset& data, const std::vector<std::size_t>& indices, std::size_t seq_len) {
  const std::size_t B = indices.size();
  const std::size_t L = seq_len ? seq_len : longest(data, indices);
  Batch batch;
  batch.ids = xt::xarray<std::int64_t>::from_shape({B, L});
  batch.padding_mask = xt::xarray<bool>::from_shape({B, L});
  batch.labels = xt::xarray<std::int64_t>::from_shape({B});
  batch.indices = indices;
  std::int64_t* ids = batch.ids.data();
  bool* mask = batch.padding_mask.data();
  for (std::size_t r = 0; r < B; ++r) {
    const std::size_t i = indices[r];
    if (i >= data.size()) throw std::out_of_range(fmt::format("collate: index {} is outside [0, {})", i, data.size()));
    const std::size_t len = data.length(i);
    if (len > L)
      throw std::invalid_argument(fmt::format("collate: review {} has {} tokens, more than seq_len {}", i, len, L));
    std::copy(data.ids(i), data.ids(i) + len, ids + r * L);
    std::fill(ids + r * L + len, ids + (r + 1) * L, Vocabulary::pad_id);
    std::fill(mask + r * L, mask + r * L + len, false);
    std::fill(mask + r * L + len, mask + (r + 1) * L, true);
    batch.labels(r) = data.label(i);
  }
  return batch;
}

Batch take_rows(const Batch& batch, const std::vector<std::size_t>& rows) {
  const std::size_t B = batch.labels.size(), L = batch.ids.shape(1);
  Batch out;
  out.ids = xt::xarray<std::int64_t>::from_shape({rows.size(), L});
  out.padding_mask = xt::xarray<bool>::from_shape({rows.size(), L});
  out.labels = xt::xarray<std::int64_t>::from_shape({rows.size()});
  out.indices.reserve(rows.size());
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const std::size_t r = rows[k];
    if (r >= B) throw std::out_of_range(fmt::format("take_rows: row {} is outside the batch's {} rows", r, B));
    std::copy(batch.ids.data() + r * L, batch.ids.data() + (r + 1) * L, out.ids.data() + k * L);
    std::copy(batch.padding_mask.data() + r * L, batch.padding_mask.data() + (r + 1) * L,
              out.padding_mask.data() + k * L);
    out.labels(k) = batch.labels(r);
    out.indices.push_back(batch.indices[r]);
  }
  return out;
}

PaddingStats padding_stats(const EncodedDataset& data, const std::vector<std::vector<std::size_t>>& batches,
                           bool trim) {
  PaddingStats s;
  for (const auto& b : batches) {
    for (const std::size_t i : b) s.tokens += data.length(i);
    s.positions += b.size() * (trim ? longest(data, b) : data.max_len());
  }
  return s;
}

DataLoader::DataLoader(const EncodedDataset& data, BatchOptions options) : data_(&data), options_(options) {
  set_epoch(0);
}

void DataLoader::set_epoch(std::uint64_t epoch) { plan_ = epoch_batches(*data_, options_, epoch); }

Batch DataLoader::batch(std::size_t i) const {
  if (i >= plan_.size())
    throw std::out_of_range(fmt::format("DataLoader::batch: batch {} is outside [0, {})", i, plan_.size()));
  return collate(*data_, plan_[i], trims() ? 0 : data_->max_len());
}

}  // namespace tapegrad::datasets
