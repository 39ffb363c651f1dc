#include "tapegrad/train/checksum.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "tapegrad/io/fnv1a.hpp"

namespace tapegrad::train {

using io::Fnv1a;

// The checksum of tensors (by name, in the map's order) and of the metadata other than the checksum.
// The same bytes as when it hashed copies of the values: files written before views keep their sums.
std::string checksum(const std::map<std::string, io::safetensors::TensorView>& tensors,
                     const io::safetensors::Metadata& metadata) {
  Fnv1a h;
  for (const auto& [name, view] : tensors) {
    h.text(name);
    h.text(io::safetensors::dtype_name(view.dtype));
    h.u64(view.shape.size());
    for (auto d : view.shape) h.u64(d);
    if (view.dtype == io::safetensors::Dtype::BOOL) {
      const auto* bytes = static_cast<const unsigned char*>(view.data);
      for (std::size_t i = 0; i < view.nbytes; ++i) h.u64(bytes[i] != 0 ? 1 : 0);  // as 0 / 1 whatever the byte
    } else {
      h.bytes(view.data, view.nbytes);
    }
  }
  for (const auto& [key, value] : metadata) {
    if (key == kChecksumKey) continue;
    h.text(key);
    h.text(value);
  }
  return h.hex();
}

template <typename T>
void add_views(std::map<std::string, io::safetensors::TensorView>& out, const StateDict<T>& state,
               const std::string& prefix, const std::string& path, const char* what) {
  for (const auto& [name, tensor] : state) {
    if (!tensor.defined()) {
      throw std::invalid_argument(fmt::format("{}: {} tensor \"{}\" is undefined", path, what, name));
    }
    out[prefix + name] = io::safetensors::view_of(tensor.data());
  }
}
template void add_views<float>(std::map<std::string, io::safetensors::TensorView>&, const StateDict<float>&,
                               const std::string&, const std::string&, const char*);
template void add_views<double>(std::map<std::string, io::safetensors::TensorView>&, const StateDict<double>&,
                                const std::string&, const std::string&, const char*);

// Every tensor of the file, viewed, for the checksum; a dtype a checkpoint never holds is a problem.
std::map<std::string, io::safetensors::TensorView> views_of(const io::safetensors::File& file,
                                                            std::vector<std::string>& problems) {
  using io::safetensors::Dtype;
  std::map<std::string, io::safetensors::TensorView> out;
  for (const auto& name : file.names()) {
    const Dtype dtype = file.dtype(name);
    if (dtype == Dtype::F32 || dtype == Dtype::F64 || dtype == Dtype::I64 || dtype == Dtype::U64 ||
        dtype == Dtype::BOOL) {
      out[name] = file.view(name);
    } else {
      problems.push_back(
          fmt::format("\"{}\" is {}, a dtype no checkpoint holds", name, io::safetensors::dtype_name(dtype)));
    }
  }
  return out;
}

void check_checksum(const io::safetensors::File& file,
                    const std::map<std::string, io::safetensors::TensorView>& tensors,
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

namespace {
template <typename V>
std::size_t non_finite(const io::safetensors::TensorView& view) {
  // memcpy per value: a File's bytes need not be aligned for V.
  std::size_t bad = 0;
  const auto* bytes = static_cast<const char*>(view.data);
  for (std::size_t i = 0; i < view.nbytes / sizeof(V); ++i) {
    V v;
    std::memcpy(&v, bytes + i * sizeof(V), sizeof(V));
    bad += std::isfinite(v) ? 0 : 1;
  }
  return bad;
}
}  // namespace

void check_finite(const std::map<std::string, io::safetensors::TensorView>& tensors, const std::string& prefix,
                  std::vector<std::string>& problems) {
  using io::safetensors::Dtype;
  for (const auto& [name, view] : tensors) {
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    if (view.dtype != Dtype::F32 && view.dtype != Dtype::F64) continue;
    const std::size_t count = view.nbytes / io::safetensors::dtype_size(view.dtype);
    const std::size_t bad = view.dtype == Dtype::F32 ? non_finite<float>(view) : non_finite<double>(view);
    if (bad > 0) {
      problems.push_back(fmt::format("\"{}\" holds {} non-finite value(s) (NaN or infinity) of {}", name, bad, count));
    }
  }
}

}  // namespace tapegrad::train
