/// @file
/// The io layer: state dicts, safetensors files and atomic file writes (namespace tapegrad::io).
#pragma once

#include "tapegrad/io/atomic_file.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/io/state_dict.hpp"
