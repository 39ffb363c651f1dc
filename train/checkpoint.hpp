/// @file
/// Training checkpoints: the model's state_dict, the optimizer's state, the step and the state of the
/// random generators in one safetensors file, so that a resumed run continues exactly where it stopped.
///
/// Layout: "model.<name>", "optimizer.<name>" and "extra.<name>" (F32 or F64, the state_dicts' own
/// names; extra holds any other state a run keeps, such as ExponentialMovingAverage's), "step"
/// (I64, 0-d), and per generator, under a key `<g>`: `<g>.state` (U64 [4]: the xoshiro256** words),
/// `<g>.has_spare_normal` (BOOL, 0-d), `<g>.spare_normal` (F64, 0-d). `<g>` is "generator" when one
/// Generator is passed, "generator.<name>" for each of a Module's named_generators() and "rng.<name>"
/// for each of a run's own generators (e.g. the one that draws its training examples).
/// The metadata entry "tapegrad.checksum" (train/checksum.hpp) covers every tensor and the other
/// metadata, so that a corrupted byte is reported instead of loaded. Written atomically like any
/// safetensors file.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/io/state_dict.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::train {

/// Generators a run keeps besides its model's, by name (saved as "rng.<name>").
using NamedGenerators = std::vector<std::pair<std::string, Generator*>>;

/// A whole model: its state_dict and every generator of model.named_generators() (the dropout
/// masks), so that a model with several generators resumes exactly too. Throws std::runtime_error
/// naming the path if writing fails (the previous file is then untouched), std::invalid_argument for
/// metadata using the reserved key "tapegrad.checksum" or a model holding NaN or infinity (nothing
/// is written then).
template <typename T>
void save_checkpoint(const std::string& path, const nn::Module<T>& model, const optim::Optimizer<T>& optimizer,
                     std::int64_t step, const io::safetensors::Metadata& metadata = {}, const StateDict<T>& extra = {},
                     const NamedGenerators& generators = {});

/// Restores model (parameters, buffers and generators) and optimizer, and returns the step. Everything
/// is checked before anything changes: an unreadable, truncated or corrupted file (checksum mismatch),
/// and every problem with the model's names, shapes and dtypes, its generators, the optimizer state and
/// the other entries, are reported together in one std::runtime_error naming the file; model and
/// optimizer are then untouched.
template <typename T>
std::int64_t load_checkpoint(const std::string& path, nn::Module<T>& model, optim::Optimizer<T>& optimizer);
/// The same with the extra state: `extra` holds the expected names and shapes (e.g. a copy from
/// ExponentialMovingAverage::state_dict()), is checked with the rest and filled from the file; so are
/// the run's own generators, which must be the ones it was saved with.
template <typename T>
std::int64_t load_checkpoint(const std::string& path, nn::Module<T>& model, optim::Optimizer<T>& optimizer,
                             StateDict<T>& extra, const NamedGenerators& generators = {});

/// Only the model's parameters and buffers, for using a trained model without an optimizer (evaluate,
/// predict). The checksum still covers the whole file; the model's names, shapes and dtypes are checked
/// and non-finite values refused, all in one std::runtime_error naming the file (model untouched then).
/// The optimizer state, generators and extra state in the file are ignored. Returns the step.
template <typename T>
std::int64_t load_checkpoint(const std::string& path, nn::Module<T>& model);

/// The same for a bare state_dict and one generator (saved under "generator").
template <typename T>
void save_checkpoint(const std::string& path, const StateDict<T>& model, const optim::Optimizer<T>& optimizer,
                     std::int64_t step, const Generator& generator, const io::safetensors::Metadata& metadata = {});
/// Restores what the save_checkpoint above wrote, checked like the Module overload; returns the step.
template <typename T>
std::int64_t load_checkpoint(const std::string& path, StateDict<T>& model, optim::Optimizer<T>& optimizer,
                             Generator& generator);

}  // namespace tapegrad::train
