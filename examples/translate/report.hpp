// report.html of a train_translate run: the training loss and token accuracy per log window, and per
// validation the teacher-forced loss and accuracy and the exact match of greedy decoding; the test
// score; the configuration.
#pragma once

#include <filesystem>
#include <string>

namespace translate {

// The page for run_dir. Throws std::runtime_error naming the file if config.json is unreadable; a
// missing or partly written metrics.jsonl gives a page with whatever it holds.
std::string report_html(const std::filesystem::path& run_dir);

// Writes run_dir/report.html (atomically) and returns its path.
std::filesystem::path write_report(const std::filesystem::path& run_dir);

}  // namespace translate
