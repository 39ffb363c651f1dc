/// @file
/// A tokenizer file's bytes, or an error that names the reader, the file and why it cannot be read.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace tapegrad::datasets::tokenizers {

/// The whole file; throws std::runtime_error "<who>: cannot read <path>: <reason>" when it is missing,
/// a folder, or unreadable.
std::string read_whole_file(const std::filesystem::path& path, std::string_view who);

}  // namespace tapegrad::datasets::tokenizers
