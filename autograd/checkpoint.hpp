/// @file
/// Activation checkpointing (torch.utils.checkpoint.checkpoint): a function run without keeping the
/// activations inside it, and run again in backward to get its gradients.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// A checkpointed function: its inputs in, one output.
template <typename T>
using CheckpointFunction = std::function<Tensor<T>(const std::vector<Tensor<T>>& inputs)>;

/// Runs fn(inputs) without recording the ops inside it and records one node in their place, so that
/// the memory of fn's intermediate values is freed as soon as fn returns. That node's backward runs fn
/// again on the saved inputs, with grad mode on, with the autocast state of the forward and with every
/// generator of `generators` set to its state at the forward (dropout draws the same masks), then
/// back-propagates the output's gradient through that second run: into the inputs, and into the
/// parameters fn uses, which accumulate their gradients (and run their post-accumulate-grad hooks)
/// as leaves of the second run do. The generators are put back as they were before the backward.
///
/// The gradients are those of fn run without checkpointing, bit for bit, when fn is deterministic given
/// its inputs, parameters and generators: the second run is the same ops in the same order. List every
/// generator fn draws from (a module's named_generators()): one left out advances between the two runs
/// and the masks differ. fn must not write into its inputs or parameters.
///
/// With grad mode off it is fn(inputs). With grad mode on the output requires grad even when no input
/// does, since the parameters fn closes over may (the reentrant checkpoint of torch needs an input that
/// requires grad instead). Checkpoints nest: a checkpoint inside fn records its own node in the second
/// run. A backward pass runs fn once more per checkpoint; the forward's values are not kept across
/// passes, so retain_graph works as without checkpointing.
template <typename T>
Tensor<T> checkpoint(const CheckpointFunction<T>& fn, const std::vector<Tensor<T>>& inputs,
                     const std::vector<std::shared_ptr<Generator>>& generators = {});

}  // namespace tapegrad
