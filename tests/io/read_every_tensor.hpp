// What the robustness checks of the safetensors reader (its fuzz target, its corrupt-byte test) do with a
// file that opened: read every tensor back, so that a header that lied shows when the data is read.
#pragma once

#include <cstdint>

#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::testing {

// Reads each tensor of file in its own dtype; of a dtype without a C++ type here (F16, BF16), the shape.
inline void read_every_tensor(const io::safetensors::File& file) {
  namespace st = io::safetensors;
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
}

}  // namespace tapegrad::testing
