// libFuzzer target: io::safetensors::File on arbitrary bytes, then every tensor read back. Contract:
// a valid file loads, with at most kMaxHeaderEntries entries; anything else throws std::runtime_error
// naming the file; nothing else escapes. The corpus holds headers at and over the limits (1,000 entries,
// 100,001 entries, a shape of 100,000 dimensions, dimensions whose product overflows), so that every
// run starts from them.
#include <cstdint>
#include <stdexcept>

#include "tapegrad/io/safetensors.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace st = tapegrad::io::safetensors;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static tapegrad::fuzz::InputFile input;
  const std::string& path = input.write(data, size);
  try {
    const st::File file(path);
    if (file.names().size() > st::kMaxHeaderEntries) __builtin_trap();
    for (const auto& name : file.names()) {
      switch (file.dtype(name)) {
        case st::Dtype::F32:
          file.get<float>(name);
          break;
        case st::Dtype::F64:
          file.get<double>(name);
          break;
        case st::Dtype::I64:
          file.get<std::int64_t>(name);
          break;
        case st::Dtype::U64:
          file.get<std::uint64_t>(name);
          break;
        case st::Dtype::BOOL:
          file.get<bool>(name);
          break;
        default:
          file.shape(name);
          break;
      }
    }
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).rfind(path, 0) != 0) __builtin_trap();  // must name the file first
  }
  return 0;
}
