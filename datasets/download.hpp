/// @file
/// Fetching a dataset's archive over HTTP(S) with libcurl, so that a program runs on a fresh machine.
#pragma once

#include <filesystem>
#include <string>

namespace tapegrad::datasets {

/// Downloads `url` (http or https only, redirects followed) to `dest`. The bytes go to a temporary file
/// next to dest, which is renamed to dest only once the transfer succeeded and verify_archive reads it
/// whole; on any failure the temporary file is removed and std::runtime_error says what went wrong.
/// `dest`'s folder is created if missing. Progress goes to stderr when show_progress is set.
void download_archive(const std::string& url, const std::filesystem::path& dest, bool show_progress = true);

/// Reads every entry of a (compressed) tar archive to its end with libarchive; throws std::runtime_error
/// naming the path when the archive is corrupt or truncated.
void verify_archive(const std::filesystem::path& path);

}  // namespace tapegrad::datasets
