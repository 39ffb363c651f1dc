#include "tapegrad/train/checksum.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <variant>

#include "tapegrad/io/fnv1a.hpp"

namespace tapegrad::train {

using io::Fnv1a;

// The checksum of tensors (by name, in the map's order) and of the metadata other than the checksum.
std::string checksum(const std::map<std::string, io::safetensors::Array>& tensors,
                     const io::safetensors::Metadata& metadata) {
  Fnv1a h;
  for (const auto& [name, value] : tensors) {
    std::visit(
        [&h, &name = name](const auto& a) {
          using V = typename std::decay_t<decltype(a)>::value_type;
          h.text(name);
          h.text(io::safetensors::dtype_name(io::safetensors::dtype_of<V>()));
          h.u64(a.dimension());
          for (auto d : a.shape()) h.u64(d);
          if constexpr (std::is_same_v<V, bool>) {
            for (bool b : a) h.u64(b ? 1 : 0);  // a bool's object bytes are not guaranteed to be 0 / 1
          } else {
            h.bytes(a.data(), a.size() * sizeof(V));
          }
        },
        value);
  }
  for (const auto& [key, value] : metadata) {
    if (key == kChecksumKey) continue;
    h.text(key);
    h.text(value);
  }
  return h.hex();
}

// Every tensor of the file as loaded, for the checksum; a dtype a checkpoint never holds is a problem.
std::map<std::string, io::safetensors::Array> read_all(const io::safetensors::File& file,
                                                       std::vector<std::string>& problems) {
  using io::safetensors::Dtype;
  std::map<std::string, io::safetensors::Array> out;
  for (const auto& name : file.names()) {
    switch (file.dtype(name)) {
      case Dtype::F32:
        out[name] = file.get<float>(name);
        break;
      case Dtype::F64:
        out[name] = file.get<double>(name);
        break;
      case Dtype::I64:
        out[name] = file.get<std::int64_t>(name);
        break;
      case Dtype::U64:
        out[name] = file.get<std::uint64_t>(name);
        break;
      case Dtype::BOOL:
        out[name] = file.get<bool>(name);
        break;
      default:
        problems.push_back(fmt::format("\"{}\" is {}, a dtype no checkpoint holds", name,
                                       io::safetensors::dtype_name(file.dtype(name))));
    }
  }
  return out;
}

void check_checksum(const io::safetensors::File& file, const std::map<std::string, io::safetensors::Array>& tensors,
                    std::vector<std::string>& problems) {
  const auto stored = file.metadata().find(kChecksumKey);
  if (stored == file.metadata().end()) {
    problems.push_back(
        fmt::format("no \"{}\" in the metadata: not written by tapegrad's train layer, or damaged", kChecksumKey));
  } else if (const std::string actual = checksum(tensors, file.metadata()); actual != stored->second) {
    problems.push_back(
        fmt::format("checksum mismatch (stored {}, computed {}): the file is corrupted", stored->second, actual));
  }
}

void check_finite(const std::map<std::string, io::safetensors::Array>& tensors, const std::string& prefix,
                  std::vector<std::string>& problems) {
  for (const auto& [name, value] : tensors) {
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    std::visit(
        [&problems, &name = name](const auto& a) {
          using V = typename std::decay_t<decltype(a)>::value_type;
          if constexpr (std::is_floating_point_v<V>) {
            std::size_t bad = 0;
            for (const V v : a) bad += std::isfinite(v) ? 0 : 1;
            if (bad > 0) {
              problems.push_back(
                  fmt::format("\"{}\" holds {} non-finite value(s) (NaN or infinity) of {}", name, bad, a.size()));
            }
          }
        },
        value);
  }
}

}  // namespace tapegrad::train
