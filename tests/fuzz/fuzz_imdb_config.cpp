// libFuzzer target: train_imdb's config.json reader (imdb::read_config of a run folder) on arbitrary
// bytes. Contract: a valid configuration loads and validates, anything else throws std::runtime_error
// naming the file; nothing else escapes.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "examples/imdb/model.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {

// One run folder per process, in memory where the system has /dev/shm, removed at exit.
struct RunFolder {
  RunFolder() {
    const std::filesystem::path base =
        std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    path = base / ("tapegrad_fuzz_imdb_config." + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~RunFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::filesystem::path path;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const RunFolder folder;
  const std::filesystem::path& dir = folder.path;
  const tapegrad::train::RunDirectory run(dir);
  tapegrad::fuzz::write_text(run.config(), std::string(reinterpret_cast<const char*>(data), size));
  try {
    imdb::read_config(run);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).rfind(run.config().string(), 0) != 0) __builtin_trap();
  }
  return 0;
}
