/// @file
/// Writing a file so that a crash, a kill or a full disk leaves either the old file or the new one,
/// never a truncated mix, and cleaning up after saves that were killed: the one way every file of a
/// run (safetensors files, config.json, metrics.jsonl, report pages) is written.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace tapegrad::io {

/// Writes the concatenation of parts to a new temporary file "<path>.tmp.<pid>.<n>" in path's folder,
/// fsyncs it, renames it over path and fsyncs the folder. Before that, removes the temporary files of
/// earlier saves to the same path whose process no longer runs (a save killed half-way leaves one, as
/// large as the file, that nothing else would remove). Throws std::runtime_error naming path if
/// anything fails; the previous file at path is then unchanged and the temporary file removed.
void write_file_atomically(const std::filesystem::path& path, const std::vector<std::string_view>& parts);

/// The same for one block of bytes.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

/// Removes from dir every temporary file of write_file_atomically ("<name>.tmp.<pid>.<n>", whatever the
/// name) whose process no longer runs: the debris of saves that were killed, which the next save to
/// the same name would remove but a file never saved again would keep. Returns the names removed.
std::vector<std::string> remove_stale_temporaries(const std::filesystem::path& dir);

}  // namespace tapegrad::io
