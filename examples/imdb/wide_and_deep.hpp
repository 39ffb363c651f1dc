// The classifier train_imdb trains: a wide-and-deep model (Cheng et al. 2016), the Transformer encoder
// classifier beside a linear model over each review's hashed n-grams (NBSVM's features, Wang and
// Manning 2012), their logits summed with a weight on the n-gram part fitted on validation.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <xtensor/xarray.hpp>

#include "examples/imdb/features/ngram_bag.hpp"
#include "tapegrad/autograd/masking.hpp"
#include "tapegrad/models/classifier.hpp"
#include "tapegrad/nn/module.hpp"

namespace imdb {

struct WideAndDeepOptions {
  tapegrad::models::TransformerClassifierOptions deep;
  // The n-gram table's rows (features::HashedNgramBag), 0 = no wide part (at least 2 otherwise), and
  // the longest n-gram: n = 1 .. wide_max_n.
  std::size_t wide_buckets = 0;
  std::size_t wide_max_n = 2;
  // The features scaled per bucket by the bag's buffer "wide.scale", which the program sets from the
  // training reviews' naive-Bayes log-count ratios (features::NgramLogCountRatio); two classes only.
  bool wide_feature_scale = false;
  // The initial value of the bag's learned negation factor (the parameter "wide.negation_factor"), none
  // when empty; it acts once the program sets the bag's negation scope.
  std::optional<double> wide_negation_factor;
  // The wide part's weight in the sum depends on the review's length n in real tokens, a + b ln n (n
  // clamped to a range), rather than being one number: a bag of n-grams sums evidence over the whole
  // review and grows more confident with its length than a mean-pooled encoder does.
  bool wide_weight_by_length = false;

  // Throws std::invalid_argument naming the offending field and value.
  void validate() const;
};

// The two parts of the logits, [B, num_classes] each: the encoder classifier's and the n-gram part's
// (undefined without one). The prediction is deep + wide_weight * wide, row by row (total()); a
// training program may also give each part a loss of its own.
template <typename T>
struct WideAndDeepLogits {
  tapegrad::Tensor<T> deep;
  tapegrad::Tensor<T> wide;
  // [B]: each row's weight of the wide part (WideAndDeep::wide_weight_at its length); empty without a
  // wide part.
  xt::xarray<T> wide_weight;
  // deep + wide_weight * wide, or deep alone without a wide part.
  tapegrad::Tensor<T> total() const;
};

// forward(ids [B, L], padding_mask [B, L]) -> logits [B, num_classes], the sum of the parts; the
// parameters are the encoder classifier's under "deep.", then the bag's under "wide.", and the buffer
// "wide_weight" holds the wide part's weight in the sum, which a program fits on held-out data after
// training (fit_logit_weights) as it fits a temperature: [1] = (a), 1 at first; with
// wide_weight_by_length [4] = (a, b, shortest, longest), (1, 0, 1, 1) at first.
template <typename T>
class WideAndDeep : public tapegrad::nn::Module<T, WideAndDeep<T>> {
 public:
  // Builds the encoder classifier from gen (the bag starts at zero and draws nothing).
  WideAndDeep(const WideAndDeepOptions& options, tapegrad::Generator& gen);

  tapegrad::Tensor<T> forward(const xt::xarray<std::int64_t>& ids, const tapegrad::BoolArray& padding_mask,
                              tapegrad::models::ClassifierTrace<T>* trace = nullptr) const;
  // The parts apart; forward() is their total().
  WideAndDeepLogits<T> forward_parts(const xt::xarray<std::int64_t>& ids, const tapegrad::BoolArray& padding_mask,
                                     tapegrad::models::ClassifierTrace<T>* trace = nullptr) const;

  // The wide part's weight in the sum for an input of `length` real tokens (a length of 0 counts as
  // 1); 1 without a wide part.
  T wide_weight_at(std::size_t length) const;
  // Sets wide_weight: the weight a + b ln(clamp(n, shortest, longest)) for an input of n real tokens,
  // or a alone (b = 0) without wide_weight_by_length. Throws std::invalid_argument without a wide part,
  // for b != 0 without wide_weight_by_length, a non-finite value, shortest < 1 or longest < shortest.
  void set_wide_weight(double a, double b = 0.0, double shortest = 1.0, double longest = 1.0);

  std::string name() const override { return "WideAndDeep"; }

  WideAndDeepOptions options;
  std::shared_ptr<tapegrad::models::TransformerClassifier<T>> deep;
  std::shared_ptr<features::HashedNgramBag<T>> wide;  // set when options.wide_buckets > 0
  tapegrad::Tensor<T> wide_weight;                    // a persistent buffer beside `wide`
};

extern template struct WideAndDeepLogits<float>;
extern template struct WideAndDeepLogits<double>;
extern template class WideAndDeep<float>;
extern template class WideAndDeep<double>;

}  // namespace imdb
