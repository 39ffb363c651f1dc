/// @file
/// metrics.jsonl: one JSON object per line, appended as training goes (every --log-every steps, per
/// epoch, and the final test score), flushed each time so a crash loses nothing already logged.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

namespace tapegrad::train {

class MetricsLog {
 public:
  /// A fresh run truncates the file. A resumed run passes the step of its checkpoint: lines with a
  /// larger "step" (written by the interrupted run after that checkpoint) are dropped, so the log reads
  /// as one uninterrupted run. Throws std::runtime_error naming the path if it cannot be written.
  MetricsLog(const std::filesystem::path& path, std::optional<std::int64_t> resume_step);
  void write(const nlohmann::json& line);

 private:
  std::filesystem::path path_;
  std::ofstream out_;
};

}  // namespace tapegrad::train
