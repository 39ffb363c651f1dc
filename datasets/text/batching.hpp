/// @file
/// Batches of encoded reviews for training and evaluation: a seeded, epoch-dependent shuffle, optional
/// length bucketing, ids padded to [B, L] and torch's key_padding_mask convention (true = padding).
#pragma once

#include <cstdint>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/datasets/text/encode.hpp"

namespace tapegrad::datasets {

/// How a DataLoader cuts an epoch into batches (torch.utils.data.DataLoader's batch_size, shuffle,
/// drop_last, plus length bucketing).
struct BatchOptions {
  std::size_t batch_size = 32;
  /// Reorder the reviews every epoch. The order of epoch e comes from a tapegrad::Generator seeded with
  /// seed + 0x9E3779B97F4A7C15 * e: every epoch differs and each is reproducible on its own.
  bool shuffle = true;
  std::uint64_t seed = 0;
  /// 0 = off. Otherwise cut the (shuffled) order into chunks of bucket_chunk * batch_size reviews, sort
  /// each chunk by kept length (stable, so equal lengths keep the shuffled order), cut the chunks into
  /// batches and, when shuffling, shuffle the order of the batches. Reviews of similar length then share
  /// a batch, so trimming L to the batch's longest review cuts the padding. Implies trim.
  std::size_t bucket_chunk = 0;
  /// L = the longest kept review of the batch (at least 1) instead of the dataset's max_len.
  bool trim = false;
  /// Drop the last batch when it holds fewer than batch_size reviews.
  bool drop_last = false;
};

/// One padded batch, ready for the model.
struct Batch {
  xt::xarray<std::int64_t> ids;      ///< [B, L], Vocabulary::pad_id after each review's tokens
  xt::xarray<bool> padding_mask;     ///< [B, L], true where ids is padding (torch's key_padding_mask)
  xt::xarray<std::int64_t> labels;   ///< [B], 0 = neg, 1 = pos
  std::vector<std::size_t> indices;  ///< the rows' indices into the EncodedDataset
};

/// The reviews of each batch of one epoch, as indices into `data`.
std::vector<std::vector<std::size_t>> epoch_batches(const EncodedDataset& data, const BatchOptions& options,
                                                    std::uint64_t epoch);

/// Pads the reviews at `indices` into one batch of length seq_len, or of the longest one (at least 1)
/// when seq_len is 0. seq_len must not be shorter than a review.
Batch collate(const EncodedDataset& data, const std::vector<std::size_t>& indices, std::size_t seq_len = 0);

/// The rows `rows` of batch (in that order, repeats allowed), with its length L: one rank's part of a
/// global batch in data-parallel training. Throws std::out_of_range for a row outside the batch.
Batch take_rows(const Batch& batch, const std::vector<std::size_t>& rows);

/// What a batch plan costs: the real tokens and the positions of all [B, L] batches.
struct PaddingStats {
  std::size_t tokens = 0;     ///< sum of kept lengths
  std::size_t positions = 0;  ///< sum of B * L
  double padding_fraction() const { return positions ? 1.0 - double(tokens) / double(positions) : 0.0; }
};
/// The cost of `batches` over `data`, each padded to the dataset's max_len or, with trim, to its longest.
PaddingStats padding_stats(const EncodedDataset& data, const std::vector<std::vector<std::size_t>>& batches, bool trim);

/// The batches of one epoch at a time, built on demand (like a torch DataLoader with set_epoch).
class DataLoader {
 public:
  DataLoader(const EncodedDataset& data, BatchOptions options);
  /// Recomputes the batch order for `epoch`; the loader starts at epoch 0.
  void set_epoch(std::uint64_t epoch);
  std::size_t size() const { return plan_.size(); }
  Batch batch(std::size_t i) const;
  const std::vector<std::vector<std::size_t>>& plan() const { return plan_; }
  PaddingStats stats() const { return padding_stats(*data_, plan_, trims()); }

 private:
  bool trims() const { return options_.trim || options_.bucket_chunk > 0; }
  const EncodedDataset* data_;
  BatchOptions options_;
  std::vector<std::vector<std::size_t>> plan_;
};

}  // namespace tapegrad::datasets
