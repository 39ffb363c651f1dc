// Counterfactual negation for training batches: a review is replaced by one of its clauses in which a
// copula meets a word of the review's own polarity ("the acting was superb" in a positive review),
// either as it stands with the review's label or negated ("the acting was not superb") with the
// opposite one. Trained on such pairs, a classifier learns from its own training reviews that a
// negation turns what follows it, which 22,500 document labels alone do not teach it.
#pragma once

#include <cstdint>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/datasets/text/vocab.hpp"

namespace imdb::features {

// How often ClauseNegation rewrites a row, and which words count as polar.
struct ClauseNegationOptions {
  double p = 0.0;                // share of a batch's rows replaced by a clause; 0 = none
  double polarity_margin = 1.0;  // a word counts as polar when |log-count ratio| >= this
};

// The clause rewriter of a vocabulary and its tokens' polarities (token_log_count_ratios of log_count_ratio.hpp).
class ClauseNegation {
 public:
  // polarity holds one value per id of vocab. Throws std::invalid_argument when it does not, for p
  // outside [0, 1], a polarity_margin that is not positive, or a vocabulary that can_negate refuses.
  ClauseNegation(const tapegrad::datasets::Vocabulary& vocab, std::vector<double> polarity,
                 ClauseNegationOptions options);

  // False for a vocabulary without "not": nothing to negate with.
  static bool can_negate(const tapegrad::datasets::Vocabulary& vocab);

  // Replaces, in place, each row of ids [B, L] with probability p by a piece of one of its clauses,
  // chosen uniformly among those that qualify, moved to the row's start (the rest becomes pad_id with
  // padding_mask true). Clauses end at ends_negation_scope's tokens. A copula or auxiliary ("is",
  // "are", "was", "were", "am", "will", "would", "can", "could", "should", "must", "might", "may",
  // "do", "does", "did", or "be", "been") qualifies when, after at most two modifiers ("a", "so",
  // "very", ...), a word follows whose polarity has the sign of the row's label and at least
  // polarity_margin in size, its clause holds no negation word (is_negator), and the piece kept (up
  // to 5 tokens before the copula, up to 6 after the polar word, within the clause, and a closing
  // ".", "!" or "?") holds no other polar word of either sign. With probability 1/2 the piece stays
  // as written and keeps the label; otherwise it is negated and the label flips: one time in four
  // its subject, where the clause has one and the vocabulary the words ("the acting was superb" -> "no
  // acting was superb" or "none of the acting was superb", "the" or "this" one to three plain words
  // before the copula; "it was superb" -> "nothing about it was superb"), else its verb: "not" (or, one
  // time in four of all negations, "never") goes after the copula, or before "be" and "been" ("would
  // not be", "has not been"). A row without such a copula, or
  // whose text would not fit the row, is left alone. Draws come from a Generator seeded with (seed, step), a fixed
  // number per row. Returns the number of rows rewritten. Throws std::invalid_argument for shapes that are not [B, L]
  // with labels [B].
  std::size_t apply(xt::xarray<std::int64_t>& ids, xt::xarray<bool>& padding_mask, xt::xarray<std::int64_t>& labels,
                    std::int64_t pad_id, std::uint64_t seed, std::uint64_t step) const;

  // The number of polar words: those with |polarity| >= polarity_margin.
  std::size_t polar_words() const;

 private:
  enum class Role : std::uint8_t { other, copula_after, copula_before, modifier, negator, clause_end, sentence_end };
  std::vector<Role> roles_;       // per id
  std::vector<double> polarity_;  // per id
  std::int64_t not_id_ = 0, never_id_ = 0, the_id_ = 0, this_id_ = 0, it_id_ = 0;
  std::vector<std::int64_t> no_, none_of_the_, nothing_about_;  // empty when the vocabulary lacks a word

  // A piece of a review that may be rewritten: its first token, its copula and its end (exclusive).
  struct Piece {
    std::size_t first, copula, last;
  };
  double polarity(std::int64_t id) const;
  Role role(std::int64_t id) const;
  // The pieces of a row's first `real` tokens whose polar word (of the label's sign) follows a copula in
  // a clause without negation, alone of its kind in the piece.
  void find_pieces(const std::int64_t* id, std::size_t real, double sign, std::vector<Piece>& pieces) const;
  // The words that negate the piece's subject instead of its verb, if the draw and the clause allow it;
  // `subject` gets the position they replace.
  const std::vector<std::int64_t>* subject_negation(const std::int64_t* id, const Piece& piece, double never_draw,
                                                    std::size_t& subject) const;
  // The piece's tokens rewritten: the verb negated (never or not), or the subject, or none.
  void rewrite(const std::int64_t* id, const Piece& piece, std::size_t real, bool negate, double never_draw,
               std::vector<std::int64_t>& text) const;
  ClauseNegationOptions options_;
};

}  // namespace imdb::features
