#include "tapegrad/models/ngram.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tapegrad::models {

std::string smoothing_name(BigramSmoothing s) { return s == BigramSmoothing::AddOne ? "add-one" : "kneser-ney"; }

BigramLM::BigramLM(std::size_t vocab_size, BigramSmoothing smoothing, double discount)
    : vocab_(vocab_size),
      smoothing_(smoothing),
      discount_(discount),
      context_count_(vocab_size),
      followers_(vocab_size),
      predecessors_(vocab_size) {
  if (vocab_size == 0) throw std::invalid_argument("BigramLM: vocab_size must be positive");
  if (!(discount > 0.0 && discount < 1.0)) {
    throw std::invalid_argument(fmt::format("BigramLM: discount must be in (0, 1), got {}", discount));
  }
}

void BigramLM::check_id(std::int64_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= vocab_) {
    throw std::invalid_argument(fmt::format("BigramLM: id {} is outside the vocabulary of {} tokens", id, vocab_));
  }
}

void BigramLM::add_sequence(const std::int64_t* ids, std::size_t n) {
  for (std::size_t t = 0; t < n; ++t) check_id(ids[t]);
  for (std::size_t t = 1; t < n; ++t) {
    const auto v = static_cast<std::uint64_t>(ids[t - 1]), w = static_cast<std::uint64_t>(ids[t]);
    if (pairs_[v * vocab_ + w]++ == 0) {
      ++followers_[v];
      if (predecessors_[w]++ == 0) ++continued_types_;
    }
    ++context_count_[v];
  }
}

double BigramLM::continuation(std::int64_t w) const {
  const double types = static_cast<double>(pairs_.size());
  const double uniform = 1.0 / static_cast<double>(vocab_);
  if (types == 0) return uniform;
  const double n = static_cast<double>(predecessors_[static_cast<std::size_t>(w)]);
  return std::max(n - discount_, 0.0) / types + discount_ * static_cast<double>(continued_types_) / types * uniform;
}

double BigramLM::log_prob(std::int64_t previous, std::int64_t next) const {
  check_id(previous);
  check_id(next);
  const auto v = static_cast<std::uint64_t>(previous), w = static_cast<std::uint64_t>(next);
  const auto found = pairs_.find(v * vocab_ + w);
  const double pair = found == pairs_.end() ? 0.0 : static_cast<double>(found->second);
  const double context = static_cast<double>(context_count_[v]);
  if (smoothing_ == BigramSmoothing::AddOne) {
    return std::log((pair + 1.0) / (context + static_cast<double>(vocab_)));
  }
  if (context == 0) return std::log(continuation(next));
  const double backoff = discount_ * static_cast<double>(followers_[v]) / context;
  return std::log(std::max(pair - discount_, 0.0) / context + backoff * continuation(next));
}

BigramLM::Score BigramLM::score_sequence(const std::int64_t* ids, std::size_t n) const {
  Score s;
  for (std::size_t t = 1; t < n; ++t) {
    s.nll -= log_prob(ids[t - 1], ids[t]);
    ++s.count;
  }
  return s;
}

}  // namespace tapegrad::models
