// Handing a fuzz input to a reader that takes a path: the bytes go into an in-memory file (memfd)
// named by /proc/self/fd/N, so no fuzz run touches the disk.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace tapegrad::fuzz {

class InputFile {
 public:
  InputFile() : fd_(::memfd_create("tapegrad_fuzz", 0)) {
    if (fd_ < 0) std::abort();
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  /// Replaces the file's contents with data[0, size) and returns its path.
  const std::string& write(const std::uint8_t* data, std::size_t size) {
    if (::ftruncate(fd_, 0) != 0) std::abort();
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) std::abort();
      done += static_cast<std::size_t>(n);
    }
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

/// The path of a file holding data[0, size): the process's one InputFile, rewritten for every input.
inline const std::string& input_path(const std::uint8_t* data, std::size_t size) {
  static InputFile input;
  return input.write(data, size);
}

/// When TAPEGRAD_FUZZ_WRITE_SEEDS names a folder, a target writes its generated seed inputs there
/// and exits (scripts/fuzz.sh --seeds regenerates tests/fuzz/corpus/ this way); else returns.
template <typename F>
void write_seeds_if_asked(F&& write) {
  const char* dir = std::getenv("TAPEGRAD_FUZZ_WRITE_SEEDS");
  if (!dir) return;
  std::filesystem::create_directories(dir);
  write(std::filesystem::path(dir));
  std::exit(0);
}

/// One folder per process for a target whose reader takes a run folder: in memory where the system
/// has /dev/shm, removed at exit.
struct ScratchFolder {
  explicit ScratchFolder(const std::string& name) {
    const std::filesystem::path base =
        std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    path = base / (name + "." + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~ScratchFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  std::filesystem::path path;
};

/// tok.encode(text), trapping on an id outside [0, tok.vocab_size()): the contract of every target whose
/// tokenizer loaded.
template <typename Tokenizer>
auto encode_in_vocabulary(const Tokenizer& tok, const std::string& text) {
  const auto ids = tok.encode(text);
  for (const auto id : ids)
    if (id < 0 || static_cast<std::size_t>(id) >= tok.vocab_size()) __builtin_trap();
  return ids;
}

inline void copy_file(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
}

inline void write_text(const std::filesystem::path& to, const std::string& text) {
  std::ofstream(to, std::ios::binary) << text;
}

}  // namespace tapegrad::fuzz
