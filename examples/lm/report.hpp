// report.html of a language-model run: the training and validation loss, the validation perplexity
// next to the bigram baselines, the configuration and the timing, from config.json and metrics.jsonl.
#pragma once

#include <filesystem>
#include <string>

namespace lm {

// The page for run_dir; throws std::runtime_error naming config.json if it is unreadable. A missing
// or partly written metrics.jsonl gives a page with whatever it holds.
std::string report_html(const std::filesystem::path& run_dir);
// Writes run_dir/report.html and returns its path.
std::filesystem::path write_report(const std::filesystem::path& run_dir);

}  // namespace lm
