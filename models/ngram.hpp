/// @file
/// Count-based bigram language models over token ids (add-one and interpolated Kneser-Ney): the
/// baseline a neural language model's perplexity is read against.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace tapegrad::models {

/// How the count-based bigram baseline smooths unseen pairs.
enum class BigramSmoothing {
  AddOne,     ///< Laplace: P(w | v) = (c(v, w) + 1) / (c(v) + V)
  KneserNey,  ///< interpolated Kneser-Ney with one absolute discount, down to the uniform distribution
};
/// "add-one" or "kneser-ney".
std::string smoothing_name(BigramSmoothing s);

/// P(next | previous) estimated from the pairs of adjacent tokens of training sequences.
///
/// Kneser-Ney (Chen & Goodman 1998, interpolated): with discount D,
///   P(w | v) = max(c(v, w) - D, 0) / c(v) + D N1+(v .) / c(v) * Pc(w)   (Pc(w) alone when c(v) = 0),
///   Pc(w)    = max(N1+(. w) - D, 0) / N1+(. .) + D |{w : N1+(. w) > 0}| / N1+(. .) / V,
/// where c(v) counts the pairs starting with v, N1+(v .) the distinct tokens after v, N1+(. w) the
/// distinct tokens before w and N1+(. .) the distinct pairs. Every probability is positive and each
/// P(. | v) sums to 1 over the V ids.
class BigramLM {
 public:
  /// discount in (0, 1), used by Kneser-Ney only. Throws std::invalid_argument for vocab_size 0 or a
  /// discount outside (0, 1).
  BigramLM(std::size_t vocab_size, BigramSmoothing smoothing, double discount = 0.75);

  /// Counts the pairs (ids[t - 1], ids[t]), t = 1..n-1. Ids must lie in [0, vocab_size) (else
  /// std::invalid_argument naming the id).
  void add_sequence(const std::int64_t* ids, std::size_t n);

  /// log P(next | previous), natural log.
  double log_prob(std::int64_t previous, std::int64_t next) const;

  /// The summed -log P over the pairs of a sequence, and how many there were (n - 1, or 0).
  struct Score {
    double nll = 0.0;
    std::size_t count = 0;
  };
  Score score_sequence(const std::int64_t* ids, std::size_t n) const;

  std::size_t vocab_size() const { return vocab_; }
  std::size_t distinct_pairs() const { return pairs_.size(); }

 private:
  void check_id(std::int64_t id) const;
  double continuation(std::int64_t w) const;

  std::size_t vocab_;
  BigramSmoothing smoothing_;
  double discount_;
  std::unordered_map<std::uint64_t, std::uint64_t> pairs_;  ///< v * V + w -> c(v, w)
  std::vector<std::uint64_t> context_count_;                ///< c(v)
  std::vector<std::uint64_t> followers_;                    ///< N1+(v .)
  std::vector<std::uint64_t> predecessors_;                 ///< N1+(. w)
  std::uint64_t continued_types_ = 0;                       ///< |{w : N1+(. w) > 0}|
};

}  // namespace tapegrad::models
