// What the programs' settings share: the upper bounds of their numeric flags, the memory check for
// the big tables, and the strict reading of a run's config.json (the same key spelled wrong, typed
// wrong or fractional where an integer belongs is an error naming the key, never a default).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "tapegrad/autograd/messages.hpp"

namespace examples {

/// Upper bounds far above any run these programs are meant for, below the sizes where memory or time
/// would explode before anything useful happened (a million layers never finish building).
namespace limits {
inline constexpr std::int64_t kVocabSize = 10'000'000;
inline constexpr std::int64_t kSequenceLength = 1'000'000;
inline constexpr std::int64_t kLayers = 256;
inline constexpr std::int64_t kWidth = 65'536;  ///< d_model and the feed-forward width
inline constexpr std::int64_t kHeads = 1'024;
inline constexpr std::int64_t kBatchSize = 1'000'000;
inline constexpr std::int64_t kEpochs = 1'000'000;
inline constexpr std::int64_t kThreads = 1'024;
inline constexpr std::int64_t kSteps = 1'000'000'000;  ///< steps, warmup, logging and validation intervals
inline constexpr double kLearningRate = 1000.0;
inline constexpr std::int64_t kNgramBuckets = 100'000'000;  ///< rows of a hashed n-gram table
inline constexpr std::int64_t kNgramMax = 8;                ///< the longest hashed n-gram
inline constexpr std::int64_t kBeam = 1'024;                ///< beam search's width (its hypotheses are kept in memory)
}  // namespace limits

/// The machine's physical memory in bytes (64 GB if the system does not say).
double physical_memory_bytes();

/// A problem when an embedding of vocab_size x d_model and a positional table of max_len x d_model
/// (with their gradients and Adam's two moments: 16 bytes per float) need more than half the machine's
/// memory, naming the flags given; else nothing.
std::optional<std::string> table_memory_problem(const char* vocab_flag, std::int64_t vocab_size, const char* len_flag,
                                                std::int64_t max_len, std::int64_t d_model);

/// "--lr 1000 times --weight-decay 0.1 is 100, not below 1: ..." when AdamW's decoupled decay factor
/// 1 - lr * weight_decay at the peak learning rate lr would zero or flip every weight each step, else
/// nothing (optim/adamw.hpp refuses it too, in torch's names). `lr_name` says where lr comes from.
std::optional<std::string> decoupled_decay_problem(double lr, double weight_decay, const std::string& lr_name = "--lr");

/// "--threads 0 must be positive" or "--threads 5000 is above the limit of 1024", else nothing: the
/// check of a subcommand's --threads (a training's is part of its settings' checks).
std::optional<std::string> threads_problem(std::int64_t threads);

/// "--pooling median is not one of max|mean|cls" when value is not among choices, else nothing.
std::optional<std::string> choice_problem(const char* flag, const std::string& value,
                                          std::initializer_list<const char*> choices);

/// Throws std::runtime_error naming the first key of json that `known` (the defaults' JSON) lacks, or
/// when json is not an object.
void check_known_keys(const nlohmann::json& json, const nlohmann::json& known);

/// Reads json[key] into `into` if present, refusing any other JSON type: a bool setting takes only
/// true/false, an integer setting only an integer in its type's range (4.9, 1e300 and, for unsigned
/// settings, -1 are errors), a number any number, a string only a string. Errors name the key.
template <typename V>
void read_setting(const nlohmann::json& json, const char* key, V& into) {
  const auto it = json.find(key);
  if (it == json.end()) return;
  const auto wrong = [&](const char* expected) {
    return std::runtime_error(fmt::format("\"{}\" must be {}, got {} {}", key, expected, it->type_name(),
                                          tapegrad::clip_for_message(it->dump())));
  };
  if constexpr (std::is_same_v<V, bool>) {
    if (!it->is_boolean()) throw wrong("true or false");
    into = it->template get<bool>();
  } else if constexpr (std::is_integral_v<V>) {
    if (!it->is_number_integer()) throw wrong("an integer");
    if (it->is_number_unsigned()) {
      if (it->template get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<V>::max()))
        throw wrong(fmt::format("an integer at most {}", std::numeric_limits<V>::max()).c_str());
      into = static_cast<V>(it->template get<std::uint64_t>());
    } else {
      const auto v = it->template get<std::int64_t>();
      if constexpr (std::is_unsigned_v<V>) {
        if (v < 0) throw wrong("an integer >= 0");
        into = static_cast<V>(v);
      } else {
        if (v < static_cast<std::int64_t>(std::numeric_limits<V>::min()) ||
            v > static_cast<std::int64_t>(std::numeric_limits<V>::max()))
          throw wrong(
              fmt::format("an integer in [{}, {}]", std::numeric_limits<V>::min(), std::numeric_limits<V>::max())
                  .c_str());
        into = static_cast<V>(v);
      }
    }
  } else if constexpr (std::is_floating_point_v<V>) {
    if (!it->is_number()) throw wrong("a number");
    into = it->template get<V>();
  } else {
    static_assert(std::is_same_v<V, std::string>, "read_setting: bool, integer, floating point or string");
    if (!it->is_string()) throw wrong("a string");
    into = it->template get<std::string>();
  }
}

}  // namespace examples
