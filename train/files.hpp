/// @file
/// Writing a run's text files (config.json, metrics.jsonl on --resume, report pages) so that a crash
/// or a kill leaves either the old file or the new one, never a truncated mix.
#pragma once

#include <filesystem>
#include <string_view>

namespace tapegrad::train {

/// Writes content to a temporary file next to path, flushes it to disk and renames it over path.
/// Throws std::runtime_error naming the path if any of that fails (path is then untouched).
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

}  // namespace tapegrad::train
