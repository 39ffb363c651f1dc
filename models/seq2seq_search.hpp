/// @file
/// Inference for an encoder-decoder Transformer: greedy decoding and beam search, batched over the
/// source sentences. Both re-run the decoder on the whole prefix at each step (no key/value cache):
/// the decoder's causal mask makes that equal to incremental decoding, and the sequences are short.
#pragma once

#include <cstdint>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/models/transformer.hpp"

namespace tapegrad::models {

/// The special tokens and limits of greedy_decode() and beam_search().
struct SearchOptions {
  std::int64_t bos = 1;       ///< the token every target starts with
  std::int64_t eos = 2;       ///< ends a hypothesis; not part of the returned tokens
  std::size_t max_len = 64;   ///< tokens generated at most (eos included)
  std::size_t beam_size = 1;  ///< beam_search only
};

/// For each source row, the tokens chosen one at a time by argmax (the lowest id among equal
/// logits), until eos or max_len tokens. Runs without recording, in the model's current mode.
template <typename T>
std::vector<std::vector<std::int64_t>> greedy_decode(const Transformer<T>& model, const xt::xarray<std::int64_t>& src,
                                                     const BoolArray& src_padding, const SearchOptions& options);

/// Beam search with beam_size hypotheses per source, scored by the sum of their tokens'
/// log-probabilities (no length penalty). At each step the beam_size best one-token extensions of the
/// live hypotheses are kept (ties: earlier hypothesis, then lower token id); those ending in eos leave
/// the beam as finished. The search for a source stops when no live hypothesis remains or none can
/// beat the best finished one (scores only fall); the best finished hypothesis is returned, or the best
/// live one when none finished within max_len. With beam_size 1 this is greedy_decode.
/// Throws std::invalid_argument for beam_size 0.
template <typename T>
std::vector<std::vector<std::int64_t>> beam_search(const Transformer<T>& model, const xt::xarray<std::int64_t>& src,
                                                   const BoolArray& src_padding, const SearchOptions& options);

}  // namespace tapegrad::models
