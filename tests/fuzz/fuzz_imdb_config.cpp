// libFuzzer target: train_imdb's config.json reader (imdb::read_config of a run folder) on arbitrary
// bytes, under the contract of tests/fuzz/fuzz_config.hpp.
#include <cstddef>
#include <cstdint>

#include "examples/imdb/model.hpp"
#include "tests/fuzz/fuzz_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const tapegrad::fuzz::ScratchFolder folder("tapegrad_fuzz_imdb_config");
  return tapegrad::fuzz::check_config_reader(folder, data, size, [](const auto& run) { imdb::read_config(run); });
}
