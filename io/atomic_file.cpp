#include "tapegrad/io/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tapegrad::io {

namespace fs = std::filesystem;

namespace {

std::string errno_text() { return std::strerror(errno); }

[[noreturn]] void fail(const fs::path& path, const std::string& problem) {
  throw std::runtime_error(fmt::format("{}: {}", path.string(), problem));
}

// Writes all of buf, retrying partial writes and interrupted calls.
bool write_all(int fd, const char* buf, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, buf, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    buf += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// Whether `rest`, what follows ".tmp." in a file's name, marks a temporary file of a process that no
// longer exists: "<pid>.<n>", or "<pid>" as the text files of runs before this writer had them. Files of
// running processes, which may be saving right now, are kept; so are names that only look similar.
bool of_dead_process(const std::string& rest) {
  const auto digits = [](const std::string& t) {
    return !t.empty() && t.size() < 12 && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  const auto dot = rest.find('.');
  const std::string pid_text = rest.substr(0, dot);
  if (!digits(pid_text) || (dot != std::string::npos && !digits(rest.substr(dot + 1)))) return false;
  const long pid = std::stol(pid_text);
  if (pid <= 0 || pid == static_cast<long>(::getpid())) return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;  // else alive, or not ours to judge
}

// Removes the stale temporary files in dir whose name before ".tmp." is `name`, or any name when empty.
std::vector<std::string> remove_stale(const fs::path& dir, const std::string& name) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    const auto marker = name.empty()
                            ? file.rfind(".tmp.")
                            : (file.compare(0, name.size() + 5, name + ".tmp.") == 0 ? name.size() : std::string::npos);
    if (marker == std::string::npos || marker == 0 || !of_dead_process(file.substr(marker + 5))) continue;
    std::error_code remove_ec;
    if (fs::remove(it->path(), remove_ec)) removed.push_back(file);
  }
  return removed;
}

}  // namespace

void write_file_atomically(const fs::path& path, const std::vector<std::string_view>& parts) {
  static std::atomic<unsigned> counter{0};
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  remove_stale(dir, path.filename().string());
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = fmt::format("{}.tmp.{}.{}", path.string(), static_cast<long>(::getpid()), counter.fetch_add(1));
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) fail(path, fmt::format("cannot create temporary file {}: {}", tmp, errno_text()));
  }
  if (fd < 0) fail(path, "cannot create a temporary file: every candidate name exists");
  const auto abandon = [&](const std::string& what) {
    const std::string reason = errno_text();
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(path, fmt::format("{} (temporary file {}): {}; the previous file is unchanged", what, tmp, reason));
  };
  for (const std::string_view part : parts) {
    if (!write_all(fd, part.data(), part.size())) abandon("cannot write");
  }
  // fsync before the rename: otherwise a power loss can leave the new name pointing at no data.
  if (::fsync(fd) != 0) abandon("cannot flush to disk");
  if (::close(fd) != 0) {
    const std::string reason = errno_text();
    ::unlink(tmp.c_str());
    fail(path, fmt::format("cannot close temporary file {}: {}; the previous file is unchanged", tmp, reason));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = errno_text();
    ::unlink(tmp.c_str());
    fail(path, fmt::format("cannot rename {} over it: {}; the previous file is unchanged", tmp, reason));
  }
  // Make the rename itself durable; the data is already safe, so a folder that cannot be opened or
  // synced (some filesystems refuse) is not an error.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomically(const fs::path& path, std::string_view content) {
  write_file_atomically(path, std::vector<std::string_view>{content});
}

std::vector<std::string> remove_stale_temporaries(const fs::path& dir) { return remove_stale(dir, ""); }

}  // namespace tapegrad::io
