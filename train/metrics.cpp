#include "tapegrad/train/metrics.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "tapegrad/io/atomic_file.hpp"
#include "tapegrad/io/json.hpp"

namespace tapegrad::train {

std::vector<nlohmann::json> read_metrics(const std::filesystem::path& path, std::vector<DamagedLine>* damaged) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  std::size_t number = 0;
  for (std::string text; std::getline(in, text);) {
    ++number;
    if (text.empty()) continue;
    nlohmann::json json;
    try {
      json = io::parse_json(text);  // bounded: the line may be written back (--resume) with dump()
    } catch (const std::runtime_error& e) {
      if (damaged) damaged->push_back({number, fmt::format("not JSON ({})", e.what())});
      continue;
    }
    if (!json.is_object()) {
      if (damaged) damaged->push_back({number, "not a JSON object"});
      continue;
    }
    lines.push_back(std::move(json));
  }
  return lines;
}

MetricsLog::MetricsLog(const std::filesystem::path& path, std::optional<std::int64_t> resume_step) : path_(path) {
  if (resume_step) {
    std::string kept;
    for (const auto& json : read_metrics(path)) {
      const auto step = json.find("step");
      if (step != json.end() && step->is_number_integer() && step->get<std::int64_t>() > *resume_step) continue;
      kept += json.dump() + '\n';
    }
    io::write_file_atomically(path, kept);
    out_.open(path, std::ios::app);
  } else {
    out_.open(path, std::ios::trunc);
  }
  if (!out_) throw std::runtime_error(fmt::format("{}: cannot write", path.string()));
}

void MetricsLog::write(const nlohmann::json& line) {
  out_ << line.dump() << '\n' << std::flush;
  if (!out_) throw std::runtime_error(fmt::format("{}: cannot write", path_.string()));
}

}  // namespace tapegrad::train
