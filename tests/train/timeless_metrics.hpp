// A run's metrics.jsonl less the keys that time it: what two runs of the same training must agree on.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "tapegrad/train/metrics.hpp"

namespace tapegrad::testing {

// The lines of the metrics.jsonl at path (as train::read_metrics reads them) without "elapsed",
// "tokens_per_s", "train_seconds" and "wall_seconds", which depend on the clock.
inline std::vector<nlohmann::json> metrics_without_timing(const std::filesystem::path& path) {
  auto lines = train::read_metrics(path);
  for (auto& line : lines)
    for (const char* key : {"elapsed", "tokens_per_s", "train_seconds", "wall_seconds"}) line.erase(key);
  return lines;
}

}  // namespace tapegrad::testing
