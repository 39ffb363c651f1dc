// HashedNgramBag: a linear model over a document's set of hashed n-grams, the "wide" part of the
// wide-and-deep classifier (Cheng et al. 2016), with NBSVM's naive-Bayes feature scale (Wang and
// Manning 2012) and negation marking.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <xtensor/xarray.hpp>

#include "examples/imdb/features/negation_scope.hpp"
#include "tapegrad/autograd/masking.hpp"
#include "tapegrad/nn/module.hpp"

namespace imdb::features {

// forward(ids [B, L], padding_mask [B, L]) -> [B, out_features], the sum of the table rows of each
// row's distinct n-grams (n = 1 .. max_n, nn::document_ngram_buckets). weight [num_buckets,
// out_features] starts at zero, as a linear model's weights do; row 0 ("no n-gram") stays zero.
//
// With feature_scale, a buffer `scale` [num_buckets, 1] (ones until set_feature_scale) multiplies each
// n-gram's feature: the sum becomes that of scale[b] * weight[b], NBSVM's naive-Bayes-scaled features
// when the scale holds NgramLogCountRatio's ratios (embedding_bag's per_sample_weights).
//
// With a non-empty `negation`, the n-grams are those of negation.mark(ids): a word in a negation's
// scope is a feature apart from the same word elsewhere (count the ratios over the same marked ids).
//
// With a negation factor as well (its initial value), a parameter `negation_factor` [1] lets such a
// word also count as its plain self, times the factor: the bag adds negation_factor * (the scaled rows
// of the plain words of negated_word_buckets). A factor near -1 reverses "bored" in "never bored", so
// that words seldom negated in the training text, whose NOT_ features learned next to nothing, are
// reversed too (the polarity shifting of sentiment lexicons, learned rather than fixed).
template <typename T>
class HashedNgramBag : public tapegrad::nn::Module<T> {
 public:
  // Throws std::invalid_argument for num_buckets < 2, out_features 0, max_n 0 or a non-finite initial
  // negation factor.
  HashedNgramBag(std::size_t num_buckets, std::size_t out_features, std::size_t max_n, bool feature_scale = false,
                 std::optional<double> negation_factor = std::nullopt);

  tapegrad::Tensor<T> forward(const xt::xarray<std::int64_t>& ids, const tapegrad::BoolArray& padding_mask) const;
  // Sets the feature scale from one value per bucket [num_buckets]; throws std::invalid_argument for
  // another shape, a non-finite value or a bag built without feature_scale.
  void set_feature_scale(const xt::xarray<double>& per_bucket);

  std::string name() const override { return "HashedNgramBag"; }
  std::string extra_repr() const override;

  std::size_t num_buckets, out_features, max_n;
  tapegrad::Tensor<T> weight;
  tapegrad::Tensor<T> scale;            // [num_buckets, 1], a persistent buffer; undefined without feature_scale
  tapegrad::Tensor<T> negation_factor;  // [1], a parameter; undefined unless built with an initial negation factor
  // Empty (no marking) unless set; not saved with the weights, so a program sets it again from the
  // same vocabulary when it loads them.
  NegationScope negation;
};

extern template class HashedNgramBag<float>;
extern template class HashedNgramBag<double>;

}  // namespace imdb::features
