// libFuzzer target: train_translate's config.json reader (translate::read_config of a run folder, as
// --resume, evaluate and translate read it) on arbitrary bytes. Contract: a valid configuration loads
// and validates, anything else throws std::runtime_error naming the file; nothing else escapes.
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "examples/translate/training.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const tapegrad::fuzz::ScratchFolder folder("tapegrad_fuzz_translate_config");
  const tapegrad::train::RunDirectory run(folder.path);
  tapegrad::fuzz::write_text(run.config(), std::string(reinterpret_cast<const char*>(data), size));
  try {
    translate::read_config(run);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).rfind(run.config().string(), 0) != 0) __builtin_trap();
  }
  return 0;
}
