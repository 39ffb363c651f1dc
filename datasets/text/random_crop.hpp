/// @file
/// Random crops for training batches: a review is replaced by a short window of its own tokens, so that
/// a classifier trained on long reviews also sees short texts with their labels (and its decision
/// threshold holds for a one-sentence review too).
#pragma once

#include <cstdint>
#include <xtensor/xarray.hpp>

namespace tapegrad::datasets {

/// The windows random_crop cuts.
struct CropOptions {
  double p = 0.0;               ///< share of a batch's reviews cropped; 0 = none
  std::size_t min_tokens = 8;   ///< a window's length is uniform in [min_tokens, max_tokens] ...
  std::size_t max_tokens = 64;  ///< ... and at most the review's own length
};

/// Replaces, in place, each row of ids [B, L] with probability options.p by a window of its real
/// tokens (those whose padding_mask entry is false, which must come first in the row), moved to the
/// row's start; the rest of the row becomes pad_id with padding_mask true. The window's length is
/// uniform in [min_tokens, max_tokens], cut to the review's length, and its start uniform among the
/// positions where it fits. The draws come from a tapegrad::Generator seeded with (seed, step), so that
/// a batch gets the same crops when a run is resumed; p = 0 changes nothing. Throws
/// std::invalid_argument for p outside [0, 1], min_tokens 0 or above max_tokens, or shapes of ids and
/// padding_mask that differ or are not [B, L].
void random_crop(xt::xarray<std::int64_t>& ids, xt::xarray<bool>& padding_mask, const CropOptions& options,
                 std::int64_t pad_id, std::uint64_t seed, std::uint64_t step);

}  // namespace tapegrad::datasets
