// Stacking (Wolpert 1992) fitted on held-out data: how much to trust each of several models' logits
// when their weighted sum is the prediction. train_imdb weighs its encoder and its n-gram part this
// way, and fits its length-dependent temperature with it.
#pragma once

#include <cstdint>
#include <vector>
#include <xtensor/xarray.hpp>

namespace imdb {

// The weights w that minimize the mean negative log-likelihood of softmax(sum_k w_k parts[k]) on the
// labels, each part a model's logits [N, C]. With one part it is 1 / train::fit_temperature. The NLL
// is convex in w; Newton's method from w = 1 with a backtracking line search, at most 100 steps (a
// small ridge keeps the Hessian invertible when parts are collinear), stopping before a weight would
// leave [-1e3, 1e3] (separable data has no finite optimum). Returns ones for N = 0. Throws
// std::invalid_argument for no parts, parts of different shapes, mismatched labels, a label outside
// [0, C) or a non-finite logit.
std::vector<double> fit_logit_weights(const std::vector<xt::xarray<double>>& parts,
                                      const std::vector<std::int64_t>& labels);

}  // namespace imdb
