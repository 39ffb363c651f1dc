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

// Removes the temporary files of saves to target in dir whose process no longer exists. Files of running
// processes, which may be saving right now, are kept; so are names that only look similar.
void remove_stale_temporaries(const fs::path& target, const fs::path& dir) {
  const std::string prefix = target.filename().string() + ".tmp.";
  const auto digits = [](const std::string& t) {
    return !t.empty() && t.size() < 12 && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    // "<pid>.<n>", or "<pid>" as the text files of runs before this writer had them.
    const std::string rest = name.substr(prefix.size());
    const auto dot = rest.find('.');
    const std::string pid_text = rest.substr(0, dot);
    if (!digits(pid_text) || (dot != std::string::npos && !digits(rest.substr(dot + 1)))) continue;
    const long pid = std::stol(pid_text);
    if (pid <= 0 || pid == static_cast<long>(::getpid())) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    std::error_code remove_ec;
    fs::remove(it->path(), remove_ec);
  }
}

}  // namespace

void write_file_atomically(const fs::path& path, const std::vector<std::string_view>& parts) {
  static std::atomic<unsigned> counter{0};
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  remove_stale_temporaries(path, dir);
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

}  // namespace tapegrad::io
