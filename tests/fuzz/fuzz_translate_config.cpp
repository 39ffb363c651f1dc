// libFuzzer target: train_translate's config.json reader (translate::read_config of a run folder, as
// --resume, evaluate and translate read it) on arbitrary bytes, under the contract of
// tests/fuzz/fuzz_config.hpp.
#include <cstddef>
#include <cstdint>

#include "examples/translate/training.hpp"
#include "tests/fuzz/fuzz_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const tapegrad::fuzz::ScratchFolder folder("tapegrad_fuzz_translate_config");
  return tapegrad::fuzz::check_config_reader(folder, data, size, [](const auto& run) { translate::read_config(run); });
}
