/// @file
/// Next-token prediction from batches of padded sequences (causal language modelling): each position
/// predicts the token after it.
#pragma once

#include <cstdint>
#include <xtensor/xarray.hpp>

#include "tapegrad/datasets/text/batching.hpp"

namespace tapegrad::datasets {

/// A causal language-model batch: inputs and the next-token targets shifted by one position.
struct NextTokenBatch {
  xt::xarray<std::int64_t> inputs;   ///< [B, L - 1]: ids[:, :-1]
  xt::xarray<std::int64_t> targets;  ///< [B, L - 1]: ids[:, 1:], ignore_index where that is padding
  std::size_t count = 0;             ///< the targets that are not ignore_index
};

/// From a batch of L >= 2 positions: a sequence of n real tokens gives n - 1 targets (its first token
/// has no context to be predicted from). Throws std::invalid_argument for L < 2.
NextTokenBatch next_token_batch(const Batch& batch, std::int64_t ignore_index = -100);

}  // namespace tapegrad::datasets
