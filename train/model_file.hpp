/// @file
/// A trained model on its own: model.safetensors holds the state_dict under torch's names (any
/// safetensors reader, torch's included, loads it) and, in its metadata, the checksum of
/// train/checksum.hpp, so that loading refuses a damaged file instead of predicting with it. No
/// optimizer is needed to save or load it.
#pragma once

#include <filesystem>

#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/io/state_dict.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::train {

/// Writes model's state_dict (F32 or F64) and metadata atomically. Throws std::invalid_argument for
/// metadata using the reserved key "tapegrad.checksum", an undefined tensor or a NaN or infinite
/// value (which load_model would refuse), std::runtime_error naming the path if writing fails; the
/// previous file is then untouched.
template <typename T>
void save_model(const std::filesystem::path& path, const nn::Module<T>& model,
                const io::safetensors::Metadata& metadata = {});
/// The same for a bare state_dict.
template <typename T>
void save_model(const std::filesystem::path& path, const StateDict<T>& state,
                const io::safetensors::Metadata& metadata = {});

/// Loads model's parameters and buffers from a file save_model wrote and returns its metadata (without
/// the checksum). Everything is checked first: an unreadable or truncated file, a missing or wrong
/// checksum, missing, unexpected or mis-shaped tensors, another dtype, and NaN or infinite values are
/// reported together in one std::runtime_error naming the file; the model is then untouched.
template <typename T>
io::safetensors::Metadata load_model(const std::filesystem::path& path, nn::Module<T>& model);
/// The same into a bare state_dict (whose tensors alias a model's).
template <typename T>
io::safetensors::Metadata load_model(const std::filesystem::path& path, StateDict<T>& state);

/// Checks the file as load_model would for model, and throws the same std::runtime_error naming it,
/// without loading anything: the model is not touched even when the file is sound.
template <typename T>
void check_model(const std::filesystem::path& path, const nn::Module<T>& model);

}  // namespace tapegrad::train
