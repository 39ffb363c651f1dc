#include "examples/common/settings.hpp"

#include <unistd.h>

namespace examples {

double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? double(pages) * double(page) : 64e9;
}

std::optional<std::string> table_memory_problem(const char* vocab_flag, std::int64_t vocab_size, const char* len_flag,
                                                std::int64_t max_len, std::int64_t d_model) {
  const double table_bytes = 16.0 * double(d_model) * (double(vocab_size) + double(max_len));
  const double memory = physical_memory_bytes();
  if (table_bytes <= memory / 2) return std::nullopt;
  return fmt::format(
      "{} {} and {} {} at --d-model {} need {:.1f} GB for their tables, more than half of this "
      "machine's {:.1f} GB",
      vocab_flag, vocab_size, len_flag, max_len, d_model, table_bytes / 1e9, memory / 1e9);
}

std::optional<std::string> decoupled_decay_problem(double lr, double weight_decay, const std::string& lr_name) {
  if (lr * weight_decay < 1.0) return std::nullopt;
  return fmt::format(
      "{} {} times --weight-decay {} is {}, not below 1: AdamW's decoupled decay would multiply every weight by "
      "1 - lr * weight_decay = {} each step",
      lr_name, lr, weight_decay, lr * weight_decay, 1.0 - lr * weight_decay);
}

std::optional<std::string> threads_problem(std::int64_t threads) {
  if (threads <= 0) return fmt::format("--threads {} must be positive", threads);
  if (threads > limits::kThreads)
    return fmt::format("--threads {} is above the limit of {}", threads, limits::kThreads);
  return std::nullopt;
}

std::optional<std::string> choice_problem(const char* flag, const std::string& value,
                                          std::initializer_list<const char*> choices) {
  std::string text;
  for (const char* c : choices) {
    if (value == c) return std::nullopt;
    text += (text.empty() ? "" : "|") + std::string(c);
  }
  return fmt::format("{} {} is not one of {}", flag, tapegrad::clip_for_message(value), text);
}

void check_known_keys(const nlohmann::json& json, const nlohmann::json& known) {
  if (!json.is_object()) throw std::runtime_error(fmt::format("a JSON {}, not an object", json.type_name()));
  // A misspelled key would silently leave its setting at the default (a 2-head run loaded as 4 heads).
  for (const auto& item : json.items()) {
    if (!known.contains(item.key()))
      throw std::runtime_error(fmt::format("unknown key \"{}\"", tapegrad::clip_for_message(item.key())));
  }
}

}  // namespace examples
