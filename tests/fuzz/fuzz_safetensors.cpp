// libFuzzer target: io::safetensors::File on arbitrary bytes, then every tensor read back. Contract:
// a valid file loads, with at most kMaxHeaderEntries entries; anything else throws std::runtime_error
// naming the file; nothing else escapes. The corpus holds headers at and over the limits (1,000 entries,
// 100,001 entries, a shape of 100,000 dimensions, dimensions whose product overflows), so that every
// run starts from them.
#include <cstdint>
#include <stdexcept>

#include "tapegrad/io/safetensors.hpp"
#include "tests/fuzz/fuzz_input.hpp"
#include "tests/io/read_every_tensor.hpp"

namespace st = tapegrad::io::safetensors;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = tapegrad::fuzz::input_path(data, size);
  try {
    const st::File file(path);
    if (file.names().size() > st::kMaxHeaderEntries) __builtin_trap();
    tapegrad::testing::read_every_tensor(file);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).rfind(path, 0) != 0) __builtin_trap();  // must name the file first
  }
  return 0;
}
