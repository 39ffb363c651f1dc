// report.html of a run folder: training and validation curves from metrics.jsonl, the configuration
// from config.json, timing and throughput, and the positional encoding the model added.
#pragma once

#include <filesystem>
#include <string>

namespace imdb {

// The page for run_dir. Throws std::runtime_error naming the file if config.json is unreadable;
// a missing or partly written metrics.jsonl gives a page with whatever it holds.
std::string report_html(const std::filesystem::path& run_dir);

// Writes run_dir/report.html and returns its path.
std::filesystem::path write_report(const std::filesystem::path& run_dir);

}  // namespace imdb
