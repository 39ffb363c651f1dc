// Training checkpoints: the model's state_dict, the optimizer's state, the step and a Generator's
// state in one safetensors file, so that a resumed run continues exactly where it stopped.
//
// Layout: "model.<name>" and "optimizer.<name>" (F32 or F64, the state_dicts' own names), "step"
// (I64, 0-d), "generator.state" (U64 [4]: the xoshiro256** words), "generator.has_spare_normal"
// (BOOL, 0-d), "generator.spare_normal" (F64, 0-d). Written atomically like any safetensors file.
#pragma once

#include <cstdint>
#include <string>

#include "autograd/generator.hpp"
#include "nn/safetensors.hpp"
#include "nn/state_dict.hpp"
#include "optim/optimizer.hpp"

namespace tapegrad {

// Throws std::runtime_error naming the path if writing fails; the previous file is then untouched.
template <typename T>
void save_checkpoint(const std::string& path, const StateDict<T>& model, const optim::Optimizer<T>& optimizer,
                     std::int64_t step, const Generator& generator, const safetensors::Metadata& metadata = {});

// Restores model (copying into its tensors), optimizer and generator, and returns the step. Everything
// is checked before anything changes: every problem with the model's names, shapes and dtypes, the
// optimizer state and the other entries is reported together in one std::runtime_error naming the file.
template <typename T>
std::int64_t load_checkpoint(const std::string& path, StateDict<T>& model, optim::Optimizer<T>& optimizer,
                             Generator& generator);

}  // namespace tapegrad
