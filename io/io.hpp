/// @file
/// The io layer: state dicts, safetensors files, atomic file writes and bounded JSON parsing
/// (namespace tapegrad::io).
#pragma once

#include "tapegrad/io/atomic_file.hpp"
#include "tapegrad/io/json.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/io/state_dict.hpp"
