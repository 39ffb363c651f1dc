/// @file
/// Word dropout for training batches: each real token is replaced by `<unk>` with probability p, so that
/// a classifier cannot lean on a few rare, memorable words (actor names, titles) of the training set.
#pragma once

#include <cstdint>
#include <xtensor/xarray.hpp>

namespace tapegrad::datasets {

/// Replaces, in place, each id of `ids` [B, L] whose padding_mask entry is false by unk_id with
/// probability p. The draws come from a tapegrad::Generator seeded with (seed, step), so that a batch
/// gets the same replacements when a run is resumed. p = 0 changes nothing. Throws
/// std::invalid_argument for p outside [0, 1) or shapes of ids and padding_mask that differ.
void word_dropout(xt::xarray<std::int64_t>& ids, const xt::xarray<bool>& padding_mask, double p, std::int64_t unk_id,
                  std::uint64_t seed, std::uint64_t step);

}  // namespace tapegrad::datasets
