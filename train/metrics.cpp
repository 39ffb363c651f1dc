#include "tapegrad/train/metrics.hpp"

#include <fmt/format.h>

#include <sstream>
#include <stdexcept>
#include <string>

namespace tapegrad::train {

MetricsLog::MetricsLog(const std::filesystem::path& path, std::optional<std::int64_t> resume_step) : path_(path) {
  std::string kept;
  if (resume_step) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      const auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      // A line cut short by a crash does not parse; it goes too.
      if (json.is_discarded() || !json.is_object()) continue;
      const auto step = json.find("step");
      if (step != json.end() && step->is_number_integer() && step->get<std::int64_t>() > *resume_step) continue;
      kept += line + '\n';
    }
  }
  out_.open(path, std::ios::trunc);
  out_ << kept << std::flush;
  if (!out_) throw std::runtime_error(fmt::format("{}: cannot write", path.string()));
}

void MetricsLog::write(const nlohmann::json& line) {
  out_ << line.dump() << '\n' << std::flush;
  if (!out_) throw std::runtime_error(fmt::format("{}: cannot write", path_.string()));
}

}  // namespace tapegrad::train
