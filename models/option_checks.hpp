/// @file
/// The checks the models' options share: sizes that must be positive, heads that divide the width,
/// dropout probabilities, a padding id inside the vocabulary. Each throws std::invalid_argument naming
/// the field and its value, after `model` ("GPT: ", or "" for a message without the model's name).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>

namespace tapegrad::models {

/// Every (field, size) is positive: "GPT: d_model must be positive, got 0".
void check_positive(const char* model, std::initializer_list<std::pair<const char*, std::size_t>> sizes);

/// The sizes of a model with one stack of layers (GPT, Llama, TransformerClassifier) are positive:
/// vocab_size, max_len, d_model, nhead and num_layers, then the model's own `more`, in that order.
template <typename Options>
void check_stack_sizes(const char* model, const Options& o,
                       std::initializer_list<std::pair<const char*, std::size_t>> more) {
  check_positive(model, {{"vocab_size", o.vocab_size},
                         {"max_len", o.max_len},
                         {"d_model", o.d_model},
                         {"nhead", o.nhead},
                         {"num_layers", o.num_layers}});
  check_positive(model, more);
}

/// nhead divides d_model: "GPT: d_model (10) must be divisible by nhead (4)".
void check_heads_divide(const char* model, std::size_t d_model, std::size_t nhead);

/// Every (field, p) lies in [0, 1): "GPT: dropout must be in [0, 1), got 1".
void check_dropouts(const char* model, std::initializer_list<std::pair<const char*, double>> probabilities);

/// padding_idx, when there is one, is an id of the vocabulary: "GPT: padding_idx 13 is outside the
/// vocabulary of 13 tokens".
void check_padding_idx(const char* model, std::optional<std::int64_t> padding_idx, std::size_t vocab_size);

}  // namespace tapegrad::models
