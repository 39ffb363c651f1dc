#include "tapegrad/train/run_directory.hpp"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>

#include "tapegrad/train/errors.hpp"
#include "tapegrad/train/files.hpp"

namespace tapegrad::train {

namespace fs = std::filesystem;

RunDirectory::RunDirectory(fs::path dir, std::vector<std::string> own_files)
    : dir_(std::move(dir)), own_files_(std::move(own_files)) {}

std::vector<std::string> RunDirectory::existing_files() const {
  std::vector<std::string> names = {kConfig, kMetrics, kCheckpoint, kModel};
  names.insert(names.end(), own_files_.begin(), own_files_.end());
  std::vector<std::string> found;
  for (const auto& name : names) {
    std::error_code ec;
    if (fs::exists(dir_ / name, ec)) found.push_back(name);
  }
  return found;
}

void RunDirectory::check_new(bool overwrite, const std::string& flag) const {
  if (fs::exists(dir_) && !fs::is_directory(dir_)) {
    throw UsageError(fmt::format("{} {} is a file, not a run folder", flag, dir_.string()));
  }
  // Only a checkpoint or a model is worth keeping: a run that stopped before its first checkpoint left
  // nothing to resume, and its settings and log are simply replaced.
  const bool trained = fs::exists(checkpoint()) || fs::exists(model());
  const auto found = existing_files();
  if (trained && !overwrite) {
    throw UsageError(
        fmt::format("{} {} already holds a run ({}): continue it with --resume, or pass --overwrite to replace it",
                    flag, dir_.string(), fmt::join(found, ", ")));
  }
}

std::vector<std::string> RunDirectory::start_new(bool overwrite, const std::string& flag) const {
  check_new(overwrite, flag);
  fs::create_directories(dir_);
  const auto found = existing_files();
  for (const auto& name : found) fs::remove(dir_ / name);
  return found;
}

void RunDirectory::check_resumable(std::initializer_list<const char*> names) const {
  for (const char* name : names) {
    if (!fs::exists(dir_ / name)) {
      throw UsageError(
          fmt::format("--resume: {} does not exist, so there is no run to continue", (dir_ / name).string()));
    }
  }
}

void RunDirectory::check_has(std::initializer_list<const char*> names, const std::string& flag) const {
  for (const char* name : names) {
    if (!fs::exists(dir_ / name)) throw UsageError(fmt::format("{} {} has no {}", flag, dir_.string(), name));
  }
}

void RunDirectory::write_config(const nlohmann::json& config) const {
  write_file_atomically(this->config(), config.dump(2) + '\n');
}

nlohmann::json RunDirectory::read_config() const {
  const fs::path path = config();
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open", path.string()));
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: {}", path.string(), e.what()));
  }
}

}  // namespace tapegrad::train
