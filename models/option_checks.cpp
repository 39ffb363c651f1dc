#include "tapegrad/models/option_checks.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace tapegrad::models {

void check_positive(const char* model, std::initializer_list<std::pair<const char*, std::size_t>> sizes) {
  for (const auto& [field, v] : sizes)
    if (v == 0) throw std::invalid_argument(fmt::format("{}{} must be positive, got 0", model, field));
}

void check_heads_divide(const char* model, std::size_t d_model, std::size_t nhead) {
  if (d_model % nhead != 0) {
    throw std::invalid_argument(fmt::format("{}d_model ({}) must be divisible by nhead ({})", model, d_model, nhead));
  }
}

void check_dropouts(const char* model, std::initializer_list<std::pair<const char*, double>> probabilities) {
  for (const auto& [field, p] : probabilities)
    if (!(p >= 0.0 && p < 1.0))
      throw std::invalid_argument(fmt::format("{}{} must be in [0, 1), got {}", model, field, p));
}

void check_padding_idx(const char* model, std::optional<std::int64_t> padding_idx, std::size_t vocab_size) {
  if (padding_idx && (*padding_idx < 0 || static_cast<std::size_t>(*padding_idx) >= vocab_size)) {
    throw std::invalid_argument(
        fmt::format("{}padding_idx {} is outside the vocabulary of {} tokens", model, *padding_idx, vocab_size));
  }
}

}  // namespace tapegrad::models
