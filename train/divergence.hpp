/// @file
/// What a diverged run's message blames: the optimizer settings and the gradient clipping most likely
/// to have made the loss or the weights non-finite, when they are far from what trains stably.
#pragma once

#include <string>

#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::train {

/// "likely to blame: lr 1000 (above 0.1), beta2 0 (below 0.9), gradient clipping off" for the settings
/// of optimizer (SGD, Adam, AdamW, RMSprop or Adagrad, at its current lr) that are extreme: lr above 0.1
/// for an adaptive optimizer or 10 for SGD, a decoupled decay lr * weight_decay above 0.1 or an L2
/// weight_decay above 1, beta2 or RMSprop's alpha below 0.9, eps above 0.1 or below 1e-12. No
/// gradient clipping (clip_norm 0) is named only beside one of those. Empty when none is extreme.
template <typename T>
std::string divergence_suspects(const optim::Optimizer<T>& optimizer, double clip_norm);

}  // namespace tapegrad::train
