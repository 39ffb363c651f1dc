#include "tapegrad/train/run_directory.hpp"

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "tapegrad/autograd/messages.hpp"
#include "tapegrad/io/atomic_file.hpp"
#include "tapegrad/io/fnv1a.hpp"
#include "tapegrad/io/json.hpp"
#include "tapegrad/train/errors.hpp"

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
  // nothing to resume, and its settings and log are simply replaced. An overwritten run still kept aside
  // counts as well.
  const bool resumable = fs::exists(checkpoint()) || fs::exists(previous() / kCheckpoint),
             trained = resumable || fs::exists(model()) || fs::exists(previous() / kModel);
  auto found = existing_files();
  if (fs::exists(previous())) found.push_back(std::string(kPrevious) + "/");
  if (trained && !overwrite) {
    // A model without a checkpoint: the run was stopped between its first model and checkpoint saves
    // (the model goes first), so --resume has nothing to start from.
    throw UsageError(fmt::format("{} {} already holds a run ({}): {}", flag, dir_.string(), fmt::join(found, ", "),
                                 resumable ? "continue it with --resume, or pass --overwrite to replace it"
                                           : "it has no checkpoint to continue from; pass --overwrite to replace it"));
  }
}

std::vector<std::string> RunDirectory::start_new(bool overwrite, const std::string& flag) const {
  check_new(overwrite, flag);
  fs::create_directories(dir_);
  const auto found = existing_files();
  const bool worth_keeping = fs::exists(checkpoint()) || fs::exists(model());
  if (!worth_keeping) {
    for (const auto& name : found) fs::remove(dir_ / name);
    return {};
  }
  // The overwritten run moves aside whole; an older one still aside was replaced by it already.
  fs::remove_all(previous());
  fs::create_directory(previous());
  for (const auto& name : found) fs::rename(dir_ / name, previous() / name);
  return found;
}

bool RunDirectory::drop_previous() const { return fs::remove_all(previous()) > 0; }

std::vector<std::string> RunDirectory::restore_previous() const {
  if (!fs::is_directory(previous())) return {};
  for (const auto& name : existing_files()) fs::remove(dir_ / name);
  const RunDirectory kept(previous(), own_files_);
  const auto names = kept.existing_files();
  for (const auto& name : names) fs::rename(previous() / name, dir_ / name);
  fs::remove_all(previous());
  return names;
}

std::vector<std::string> RunDirectory::settle() const {
  std::vector<std::string> done;
  if (fs::is_directory(previous())) {
    if (fs::exists(checkpoint())) {
      drop_previous();
      done.push_back(fmt::format("removed {}: the run that replaced it has a checkpoint", previous().string()));
    } else {
      const auto names = restore_previous();
      done.push_back(
          fmt::format("put back the previous run's {} from {}: the run that was to replace it stopped "
                      "before its first checkpoint",
                      fmt::join(names, ", "), previous().string()));
    }
  }
  for (const auto& name : io::remove_stale_temporaries(dir_)) {
    done.push_back(fmt::format("removed {}, left by a save that was killed", (dir_ / name).string()));
  }
  return done;
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
  io::write_file_atomically(this->config(), config.dump(2) + '\n');
}

namespace {

constexpr std::string_view kFileDigestPrefix = "file.";

// The FNV-1a digest of a file's bytes, or nothing if it cannot be read.
std::optional<std::string> file_digest(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  io::Fnv1a h;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) h.bytes(buf, static_cast<std::size_t>(in.gcount()));
  if (in.bad()) return std::nullopt;
  return h.hex();
}

}  // namespace

io::safetensors::Metadata RunDirectory::file_digests() const {
  std::vector<std::string> names = {kConfig};
  names.insert(names.end(), own_files_.begin(), own_files_.end());
  io::safetensors::Metadata out;
  for (const auto& name : names) {
    if (const auto digest = file_digest(dir_ / name)) out[std::string(kFileDigestPrefix) + name] = *digest;
  }
  return out;
}

void RunDirectory::check_files(const fs::path& recorded_in) const {
  const io::safetensors::Metadata metadata = io::safetensors::File(recorded_in.string()).metadata();
  for (const auto& [key, stored] : metadata) {
    if (key.compare(0, kFileDigestPrefix.size(), kFileDigestPrefix) != 0) continue;
    const std::string name = key.substr(kFileDigestPrefix.size());
    // A name from the file's metadata is data: never let it reach outside the run folder.
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
      throw std::runtime_error(
          fmt::format("{}: bad file entry \"{}\" in its metadata", recorded_in.string(), clip_for_message(key)));
    }
    const fs::path path = dir_ / name;
    const auto actual = file_digest(path);
    if (!actual) {
      throw std::runtime_error(
          fmt::format("{}: missing or unreadable, but {} was written with it", path.string(), recorded_in.string()));
    }
    if (*actual != stored) {
      throw std::runtime_error(fmt::format(
          "{}: changed or damaged since {} was written (FNV-1a {} now, {} recorded); the run cannot be read back "
          "as it was trained",
          path.string(), recorded_in.filename().string(), *actual, stored));
    }
  }
}

nlohmann::json RunDirectory::read_config() const { return io::read_json_file(config()); }

}  // namespace tapegrad::train
