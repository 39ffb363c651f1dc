/// @file
/// The io layer: state dicts and safetensors files (namespace tapegrad::io).
#pragma once

#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/io/state_dict.hpp"
