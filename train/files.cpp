#include "tapegrad/train/files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tapegrad::train {

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  const std::string tmp = fmt::format("{}.tmp.{}", path.string(), ::getpid());
  const auto fail = [&](const char* what) {
    const std::string reason = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("{}: cannot {}: {}", path.string(), what, reason));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("create a temporary file");
  for (std::size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      fail("write");
    }
    done += static_cast<std::size_t>(n);
  }
  // fsync before the rename: otherwise a power loss can leave the new name pointing at no data.
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("flush to disk");
  }
  if (::close(fd) != 0) fail("close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename its temporary file over it");
}

}  // namespace tapegrad::train
