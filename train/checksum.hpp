/// @file
/// The integrity check of the files a run writes (checkpoints, model.safetensors): a 64-bit FNV-1a
/// hash of every tensor as loaded (name, dtype, shape, values) and of the other metadata, stored in the
/// metadata entry "tapegrad.checksum", so that a corrupted byte that changes anything loading would
/// use is reported instead of loaded.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::train {

/// The metadata key that holds the checksum; reserved, a caller's metadata may not use it.
inline constexpr const char* kChecksumKey = "tapegrad.checksum";

/// The checksum (16 hex digits) of tensors (viewed where they are, io::safetensors::view_of or
/// File::view: nothing is copied) and of every metadata entry but kChecksumKey.
std::string checksum(const std::map<std::string, io::safetensors::TensorView>& tensors,
                     const io::safetensors::Metadata& metadata);

/// Adds a view of each tensor of state to out, under prefix + its name (io::safetensors::view_of: the
/// values stay where they are, so state must outlive out). Throws std::invalid_argument
/// `PATH: WHAT tensor "NAME" is undefined` for an undefined tensor.
template <typename T>
void add_views(std::map<std::string, io::safetensors::TensorView>& out, const StateDict<T>& state,
               const std::string& prefix, const std::string& path, const char* what);

/// Every tensor of file, viewed in its bytes; a tensor of a dtype no run file holds (other than F32,
/// F64, I64, U64, BOOL) adds a problem instead.
std::map<std::string, io::safetensors::TensorView> views_of(const io::safetensors::File& file,
                                                            std::vector<std::string>& problems);

/// Adds a problem if file's metadata has no checksum or one that does not match tensors.
void check_checksum(const io::safetensors::File& file,
                    const std::map<std::string, io::safetensors::TensorView>& tensors,
                    std::vector<std::string>& problems);

/// Adds a problem naming each F32/F64 tensor of tensors whose name starts with prefix and that holds a
/// NaN or an infinity (a diverged run's weights, which would predict garbage without a word).
void check_finite(const std::map<std::string, io::safetensors::TensorView>& tensors, const std::string& prefix,
                  std::vector<std::string>& problems);

}  // namespace tapegrad::train
