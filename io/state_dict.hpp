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

}  // namespace tapegrad
