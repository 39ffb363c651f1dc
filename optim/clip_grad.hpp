/// @file
/// Gradient clipping with torch.nn.utils' names and numerics; both change the gradients in place and
/// skip parameters without a gradient.
#pragma once

#include <limits>
#include <vector>

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad::optim {

/// The norm of all gradients taken together, like torch: the p-norm of the per-tensor p-norms
/// (norm_type = infinity: the largest absolute value). If clip_coef = max_norm / (total_norm + 1e-6)
/// is < 1 every gradient is multiplied by it. Returns total_norm before clipping (0 if no parameter
/// has a gradient). Throws std::invalid_argument for norm_type <= 0 or NaN max_norm / norm_type.
template <typename T>
double clip_grad_norm_(const std::vector<Tensor<T>>& params, double max_norm, double norm_type = 2.0);

/// clip_grad_norm_'s argument check: throws std::invalid_argument for NaN max_norm or norm_type <= 0.
void check_clip_grad_norm_arguments(double max_norm, double norm_type);

/// clip_grad_norm_ in its three parts, for gradients spread over several processes
/// (distributed::ZeroRedundancyOptimizer); together they give clip_grad_norm_'s values bit for bit.
/// This one: the norm of one gradient (its p-norm accumulated in double).
template <typename T>
double grad_norm(const Tensor<T>& param, double norm_type = 2.0);
/// The total of the per-tensor norms, in their order (clip_grad_norm_'s second part).
double total_norm(const std::vector<double>& norms, double norm_type = 2.0);
/// Every gradient scaled by max_norm / (total_norm + 1e-6) when that is < 1 or NaN (the third part).
template <typename T>
void scale_grads_to_norm(const std::vector<Tensor<T>>& params, double max_norm, double total_norm);

/// Clamps every gradient element into [-clip_value, clip_value]. Throws std::invalid_argument for a
/// negative or NaN clip_value.
template <typename T>
void clip_grad_value_(const std::vector<Tensor<T>>& params, double clip_value);

}  // namespace tapegrad::optim
