/// @file
/// metrics.jsonl: one JSON object per line, appended as training goes (every log_every steps, at every
/// validation, and a program's final scores), flushed each time so a crash loses nothing already logged.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tapegrad::train {

/// metrics.jsonl: one JSON object per line, appended and flushed as training goes.
class MetricsLog {
 public:
  /// A fresh run starts the file empty. A resumed run passes the step of its checkpoint: lines with a
  /// larger "step" (written by the interrupted run after that checkpoint) are dropped, so the log reads
  /// as one uninterrupted run; the kept lines are written to a new file that replaces the old one
  /// atomically (a kill at that moment leaves the old log whole), and the log is appended to from there.
  /// Throws std::runtime_error naming the path if it cannot be written.
  MetricsLog(const std::filesystem::path& path, std::optional<std::int64_t> resume_step);
  void write(const nlohmann::json& line);
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::ofstream out_;
};

/// A line of a metrics.jsonl that read_metrics skipped: its number (from 1) and why.
struct DamagedLine {
  std::size_t line = 0;
  std::string problem;
};

/// The objects of a metrics.jsonl in order; a missing file gives none, and a line that is not a JSON
/// object (one cut short by a crash, or nested deeper than io::kMaxJsonDepth) is skipped, and added to
/// `damaged` when given.
std::vector<nlohmann::json> read_metrics(const std::filesystem::path& path,
                                         std::vector<DamagedLine>* damaged = nullptr);

}  // namespace tapegrad::train
