// libFuzzer target: train_lm's config.json reader (lm::read_config of a run folder, as --resume,
// evaluate and generate read it) on arbitrary bytes, under the contract of tests/fuzz/fuzz_config.hpp.
#include <cstddef>
#include <cstdint>

#include "examples/lm/model.hpp"
#include "tests/fuzz/fuzz_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const tapegrad::fuzz::ScratchFolder folder("tapegrad_fuzz_lm_config");
  return tapegrad::fuzz::check_config_reader(folder, data, size, [](const auto& run) { lm::read_config(run); });
}
