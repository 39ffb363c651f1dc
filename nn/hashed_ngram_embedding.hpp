/// @file
/// Hashed token n-grams (fastText's hashing trick, Joulin et al. 2017): HashedNgramEmbedding adds the
/// n-grams ending at each position to a sequence's token embeddings, so that a model sees "not bad" as
/// well as "not" and "bad"; HashedNgramBag is a linear model over a whole document's set of n-grams.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/masking.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/nn/negation_scope.hpp"

namespace tapegrad::nn {

/// The hash of the n-gram tokens[0..n): 64-bit FNV-1a (offset basis 14695981039346656037, prime
/// 1099511628211) over the byte n, then each token id as 8 little-endian bytes (two's complement).
/// Any implementation that follows this sentence reproduces tapegrad's buckets.
std::uint64_t ngram_hash(const std::int64_t* tokens, std::size_t n);

/// The bucket of the n-gram tokens[0..n) in a table of num_buckets rows: 1 + ngram_hash(tokens, n) %
/// (num_buckets - 1), never 0 (the row that stands for "no n-gram"). num_buckets must be at least 2.
inline std::int64_t ngram_bucket(const std::int64_t* tokens, std::size_t n, std::size_t num_buckets) {
  return static_cast<std::int64_t>(1 + ngram_hash(tokens, n) % (num_buckets - 1));
}

/// The bucket of every n-gram of `ids` [B, L] ending at each position, for n = 2 .. max_n:
/// [B, L, max_n - 1], entry (b, t, n - 2) = ngram_bucket(ids[b, t-n+1 .. t], n, num_buckets)
/// when those n positions are all real tokens (padding_mask false), else 0 ("no n-gram").
/// Throws std::invalid_argument for num_buckets < 2, max_n < 2 or mismatched shapes.
xt::xarray<std::int64_t> ngram_buckets(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask,
                                       std::size_t num_buckets, std::size_t max_n);

/// The distinct buckets of every n-gram (n = 1 .. max_n, single tokens included) of each row's real
/// tokens: [B, K], K the largest count of the batch, each row sorted ascending and padded with bucket 0
/// ("no n-gram"). An n-gram's bucket is ngram_bucket(its tokens, n, num_buckets), as in
/// ngram_buckets; an n-gram never spans a padding position. A document is thus a set of n-grams: a
/// repeated n-gram counts once (the binarized features of NBSVM, Wang and Manning 2012).
/// Throws std::invalid_argument for num_buckets < 2, max_n < 1 or mismatched shapes.
xt::xarray<std::int64_t> document_ngram_buckets(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask,
                                                std::size_t num_buckets, std::size_t max_n);

/// The distinct buckets of the words a negation governs, each counted as its plain word: for `marked`
/// [B, L] as NegationScope::mark returns it, the unigram buckets ngram_bucket(&id, 1, num_buckets) of
/// the ids of its marked real tokens (~marked), [B, K] with each row sorted ascending and padded with
/// bucket 0, like document_ngram_buckets. Throws std::invalid_argument as document_ngram_buckets does.
xt::xarray<std::int64_t> negated_word_buckets(const xt::xarray<std::int64_t>& marked, const BoolArray& padding_mask,
                                              std::size_t num_buckets);

/// forward(ids [B, L], padding_mask [B, L]) -> [B, L, embedding_dim]: at each position, the sum of the
/// table rows of the n-grams (n = 2 .. max_n) that end there (see ngram_buckets). Row 0 stands for "no
/// n-gram": it adds nothing and receives no gradient. weight [num_buckets, embedding_dim] starts from
/// N(0, init_std^2) (row 0 zero).
template <typename T>
class HashedNgramEmbedding : public Module<T> {
 public:
  HashedNgramEmbedding(std::size_t num_buckets, std::size_t embedding_dim, std::size_t max_n, Generator& gen,
                       double init_std = 1.0);

  Tensor<T> forward(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask) const;

  std::string name() const override { return "HashedNgramEmbedding"; }
  std::string extra_repr() const override;

  std::size_t num_buckets, embedding_dim, max_n;
  Tensor<T> weight;
};

extern template class HashedNgramEmbedding<float>;
extern template class HashedNgramEmbedding<double>;

/// A linear model over a document's hashed n-grams, the "wide" part of a wide-and-deep model (Cheng et
/// al. 2016): forward(ids [B, L], padding_mask [B, L]) -> [B, out_features], the sum of the table rows of
/// each row's distinct n-grams (n = 1 .. max_n, document_ngram_buckets). weight [num_buckets,
/// out_features] starts at zero, as a linear model's weights do; row 0 ("no n-gram") stays zero.
///
/// With feature_scale, a buffer `scale` [num_buckets, 1] (ones until set_feature_scale) multiplies each
/// n-gram's feature: the sum becomes that of scale[b] * weight[b], NBSVM's naive-Bayes-scaled features
/// when the scale holds NgramLogCountRatio's ratios.
///
/// With a non-empty `negation`, the n-grams are those of negation.mark(ids): a word in a negation's
/// scope is a feature apart from the same word elsewhere (count the ratios over the same marked ids).
///
/// With a negation factor as well (its initial value), a parameter `negation_factor` [1] lets such a
/// word also count as its plain self, times the factor: the bag adds negation_factor * (the scaled rows
/// of the plain words of negated_word_buckets). A factor near -1 reverses "bored" in "never bored", so
/// that words seldom negated in the training text, whose NOT_ features learned next to nothing, are
/// reversed too (the polarity shifting of sentiment lexicons, learned rather than fixed).
template <typename T>
class HashedNgramBag : public Module<T> {
 public:
  /// Throws std::invalid_argument for num_buckets < 2, out_features 0, max_n 0 or a non-finite initial
  /// negation factor.
  HashedNgramBag(std::size_t num_buckets, std::size_t out_features, std::size_t max_n, bool feature_scale = false,
                 std::optional<double> negation_factor = std::nullopt);

  Tensor<T> forward(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask) const;
  /// Sets the feature scale from one value per bucket [num_buckets]; throws std::invalid_argument for
  /// another shape, a non-finite value or a bag built without feature_scale.
  void set_feature_scale(const xt::xarray<double>& per_bucket);

  std::string name() const override { return "HashedNgramBag"; }
  std::string extra_repr() const override;

  std::size_t num_buckets, out_features, max_n;
  Tensor<T> weight;
  Tensor<T> scale;            ///< [num_buckets, 1], a persistent buffer; undefined without feature_scale
  Tensor<T> negation_factor;  ///< [1], a parameter; undefined unless built with an initial negation factor
  /// Empty (no marking) unless set; not saved with the weights, so a program sets it again from the
  /// same vocabulary when it loads them.
  NegationScope negation;
};

extern template class HashedNgramBag<float>;
extern template class HashedNgramBag<double>;

/// Counts, for two classes, how many documents of each class hold each n-gram bucket (as
/// document_ngram_buckets finds them), and turns the counts into naive Bayes' log-count ratios, the
/// feature scale of NBSVM (Wang and Manning 2012): r_b = log((p_b / |p|_1) / (q_b / |q|_1)), with p =
/// alpha + the counts in class-1 documents and q = alpha + those in class-0 ones, over buckets 1
/// to num_buckets - 1; r_0 = 0. A bucket seen in neither class gets r = log(|q|_1 / |p|_1), near 0.
class NgramLogCountRatio {
 public:
  /// Throws std::invalid_argument for num_buckets < 2 or max_n < 1.
  NgramLogCountRatio(std::size_t num_buckets, std::size_t max_n);
  /// Counts the documents ids [B, L] with padding_mask [B, L] and labels [B], each 0 or 1 (anything
  /// else, or a label count other than B, throws std::invalid_argument naming it).
  void add(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask, const xt::xarray<std::int64_t>& labels);
  /// The ratios [num_buckets]; alpha > 0 (else std::invalid_argument).
  xt::xarray<double> ratio(double alpha = 1.0) const;
  /// Documents counted so far, per class.
  std::size_t documents(int label) const { return documents_[label == 0 ? 0 : 1]; }

 private:
  std::size_t num_buckets_, max_n_;
  std::vector<std::uint32_t> counts_[2];
  std::size_t documents_[2] = {0, 0};
};

}  // namespace tapegrad::nn
