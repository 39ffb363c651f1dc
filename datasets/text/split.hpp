/// @file
/// A fixed, seeded hold-out of the training reviews, so models are tuned without looking at test/.
#pragma once

#include <cstdint>
#include <vector>

namespace tapegrad::datasets {

/// Indices into the training reviews: the ones trained on and the held-out validation ones.
struct TrainValidSplit {
  std::vector<std::size_t> train;  ///< indices into the training reviews, ascending
  std::vector<std::size_t> valid;  ///< the held-out indices, ascending; disjoint from train
};

/// Holds out round(valid_fraction * n_c) reviews of each class c (stratified, so the validation set has
/// the class balance of the training set: 1,250 of each class of 25,000 balanced ones). For each label in
/// ascending order, a tapegrad::Generator seeded with `seed` (one generator, used for the classes in
/// turn) permutes that class's indices (ascending) and the first ones of the permutation are held out.
/// valid_fraction must be in [0, 1).
TrainValidSplit train_valid_split(const std::vector<std::int64_t>& labels, double valid_fraction = 0.1,
                                  std::uint64_t seed = 0);
/// The same over examples with a `label` member (such as datasets::Review).
template <typename Example>
TrainValidSplit train_valid_split(const std::vector<Example>& examples, double valid_fraction = 0.1,
                                  std::uint64_t seed = 0) {
  std::vector<std::int64_t> labels(examples.size());
  for (std::size_t i = 0; i < examples.size(); ++i) labels[i] = examples[i].label;
  return train_valid_split(labels, valid_fraction, seed);
}

}  // namespace tapegrad::datasets
