// NegationScope: marks the tokens a negation governs ("not" in "not a single wasted scene"), so that a
// bag of n-grams tells "wasted" after "not" from "wasted" alone (Das and Chen 2001; Pang, Lee and
// Vaithyanathan 2002's NOT_ tag); and the plain words it marked, for a bag that also counts them as
// themselves.
#pragma once

#include <cstdint>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/masking.hpp"

namespace imdb::features {

// The rule, over the real tokens of each row from left to right: a negator opens a scope (it is not
// marked itself; a negator inside a scope opens a new one), a scope end closes it (and is not marked),
// a padding position closes it too; every other token inside a scope is marked. A marked token id
// becomes ~id (= -1 - id), an id no vocabulary holds, so that hashed n-grams (nn::ngram_hash) over
// marked tokens are those of a vocabulary with a "NOT_" twin of every word. Which ids negate and which
// end a scope is the caller's (negator_ids and scope_end_ids of negation.hpp give English's).
class NegationScope {
 public:
  // No negator: mark() changes nothing.
  NegationScope() = default;
  // Throws std::invalid_argument for a negative id or an id in both lists (naming it).
  NegationScope(std::vector<std::int64_t> negators, std::vector<std::int64_t> scope_ends);

  // ids [B, L] with every token in a negation's scope replaced by ~id; padding and the rest unchanged.
  // Throws std::invalid_argument when ids and padding_mask are not both [B, L] or an id is negative.
  xt::xarray<std::int64_t> mark(const xt::xarray<std::int64_t>& ids, const tapegrad::BoolArray& padding_mask) const;

  bool empty() const { return negators_.empty(); }
  const std::vector<std::int64_t>& negators() const { return negators_; }
  const std::vector<std::int64_t>& scope_ends() const { return scope_ends_; }

 private:
  std::vector<std::int64_t> negators_, scope_ends_;  // sorted, distinct
};

// The distinct buckets of the words a negation governs, each counted as its plain word: for `marked`
// [B, L] as NegationScope::mark returns it, the unigram buckets nn::ngram_bucket(&id, 1, num_buckets)
// of the ids of its marked real tokens (~marked), [B, K] with each row sorted ascending and padded
// with bucket 0, like nn::document_ngram_buckets. Throws std::invalid_argument as that does.
xt::xarray<std::int64_t> negated_word_buckets(const xt::xarray<std::int64_t>& marked,
                                              const tapegrad::BoolArray& padding_mask, std::size_t num_buckets);

}  // namespace imdb::features
