// The config.json readers' fuzz targets (fuzz_imdb_config, fuzz_lm_config, fuzz_translate_config): the
// bytes become a run folder's config.json, which the program's reader reads. Contract: a valid
// configuration loads and validates, anything else throws std::runtime_error naming the file (its
// message starts with the path); nothing else escapes, and a message without the path traps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "tapegrad/train/run_directory.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace tapegrad::fuzz {

template <typename Read>
int check_config_reader(const ScratchFolder& folder, const std::uint8_t* data, std::size_t size, Read read) {
  const train::RunDirectory run(folder.path);
  write_text(run.config(), std::string(reinterpret_cast<const char*>(data), size));
  try {
    read(run);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).rfind(run.config().string(), 0) != 0) __builtin_trap();
  }
  return 0;
}

}  // namespace tapegrad::fuzz
