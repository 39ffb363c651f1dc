/// @file
/// A state_dict: torch's dotted names ("layers.0.self_attn.in_proj_weight") to tensors that alias the
/// module's own parameters and buffers, so loading into one writes into the module.
#pragma once

#include <map>
#include <string>

#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

/// Named tensors, as torch's state_dict(): a module's parameters and buffers under their dotted names
/// (the tensors alias the module's, so writing into them loads it).
template <typename T>
using StateDict = std::map<std::string, Tensor<T>>;

namespace io {

/// Copies source's values into target's tensors, which alias a module's parameters and buffers (what
/// nn::Module::load_state_dict does, as torch's module.load_state_dict(state_dict, strict)). Like
/// torch's copy_, double values load into float tensors (rounded to nearest) and float into double.
/// Every problem — a name of source that target lacks or the reverse (unless strict is false), a shape
/// that differs, an undefined tensor, a NaN or infinite value (after conversion) — is reported together
/// in one std::runtime_error, and nothing is changed then. Values are copied, never aliased: the
/// target keeps its own storage, as a module keeps its parameters.
template <typename T, typename U>
void load_state_dict(StateDict<T>& target, const StateDict<U>& source, bool strict = true);

}  // namespace io

}  // namespace tapegrad
