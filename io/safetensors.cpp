#include "tapegrad/io/safetensors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "tapegrad/autograd/messages.hpp"
#include "tapegrad/io/atomic_file.hpp"
#include "tapegrad/io/json.hpp"

namespace tapegrad::io::safetensors {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors stores little-endian data; port the byte copies");
static_assert(sizeof(bool) == 1, "BOOL tensors are written from one-byte bools");

namespace {

struct DtypeInfo {
  Dtype dtype;
  const char* name;
  std::size_t size;
};
constexpr DtypeInfo kDtypes[] = {
    {Dtype::BOOL, "BOOL", 1},       {Dtype::U8, "U8", 1},   {Dtype::I8, "I8", 1},   {Dtype::F8_E5M2, "F8_E5M2", 1},
    {Dtype::F8_E4M3, "F8_E4M3", 1}, {Dtype::I16, "I16", 2}, {Dtype::U16, "U16", 2}, {Dtype::F16, "F16", 2},
    {Dtype::BF16, "BF16", 2},       {Dtype::I32, "I32", 4}, {Dtype::U32, "U32", 4}, {Dtype::F32, "F32", 4},
    {Dtype::F64, "F64", 8},         {Dtype::I64, "I64", 8}, {Dtype::U64, "U64", 8},
};

const DtypeInfo& info(Dtype d) {
  for (const auto& i : kDtypes)
    if (i.dtype == d) return i;
  throw std::logic_error("safetensors: unknown Dtype value");
}

bool parse_dtype(const std::string& name, Dtype& out) {
  for (const auto& i : kDtypes) {
    if (name == i.name) {
      out = i.dtype;
      return true;
    }
  }
  return false;
}

constexpr const char* kMetadataKey = "__metadata__";

// A tensor's bytes as they go to disk, under its name.
struct RawEntry {
  std::string name;
  TensorView view;
};

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw std::runtime_error(fmt::format("{}: {}", path, problem));
}

std::string errno_text() { return std::strerror(errno); }

// A header value as an error message shows it: its JSON, clipped. dump() recurses, which is safe only
// because the parser refused headers nested deeper than kMaxHeaderDepth.
std::string brief(const nlohmann::json& j) { return clip_for_message(j.dump()); }

// The name of a tensor or metadata key as an error message shows it.
std::string quoted(const std::string& name) { return "\"" + clip_for_message(name) + "\""; }

// Parses the header with its nesting bounded, so that no recursive walk of it (dump, comparisons) can
// overflow the stack, and its entries bounded before any is built.
nlohmann::json parse_header(const std::string& path, const std::string& header) {
  try {
    return parse_json(header, kMaxHeaderDepth, kMaxHeaderEntries);
  } catch (const std::runtime_error& e) {
    fail(path, fmt::format("header {}", e.what()));
  }
}

// Lays out the entries (largest element size first, then by name, so that every tensor is aligned
// to its element size after the 8-byte-padded header, as the reference writer does), builds the
// header and writes the file.
void write_file(const std::string& path, std::vector<RawEntry> entries, const Metadata& metadata) {
  for (const auto& e : entries) {
    if (e.name == kMetadataKey) {
      throw std::invalid_argument(fmt::format("{}: a tensor cannot be named \"{}\"", path, kMetadataKey));
    }
  }
  std::stable_sort(entries.begin(), entries.end(), [](const RawEntry& a, const RawEntry& b) {
    const std::size_t sa = dtype_size(a.view.dtype), sb = dtype_size(b.view.dtype);
    return sa != sb ? sa > sb : a.name < b.name;
  });
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    auto& m = header[kMetadataKey] = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
  }
  std::size_t offset = 0;
  for (const auto& e : entries) {
    header[e.name] = {{"dtype", dtype_name(e.view.dtype)},
                      {"shape", e.view.shape},
                      {"data_offsets", {offset, offset + e.view.nbytes}}};
    offset += e.view.nbytes;
  }
  std::string json;
  try {
    json = header.dump();
  } catch (const nlohmann::json::exception& ex) {  // a name or metadata string that is not UTF-8
    throw std::invalid_argument(fmt::format("{}: cannot encode the header: {}", path, ex.what()));
  }
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string bytes(8, '\0');
  std::uint64_t n = json.size();
  std::memcpy(bytes.data(), &n, 8);
  bytes += json;
  std::vector<std::string_view> parts = {bytes};
  for (const auto& e : entries) parts.emplace_back(static_cast<const char*>(e.view.data), e.view.nbytes);
  write_file_atomically(path, parts);
}

}  // namespace

const char* dtype_name(Dtype dtype) { return info(dtype).name; }
std::size_t dtype_size(Dtype dtype) { return info(dtype).size; }

template <>
Dtype dtype_of<float>() {
  return Dtype::F32;
}
template <>
Dtype dtype_of<double>() {
  return Dtype::F64;
}
template <>
Dtype dtype_of<std::int64_t>() {
  return Dtype::I64;
}
template <>
Dtype dtype_of<std::uint64_t>() {
  return Dtype::U64;
}
template <>
Dtype dtype_of<bool>() {
  return Dtype::BOOL;
}

namespace {

// The header after its 8-byte length, checked against the file's size; `size` gets the file's size.
std::string read_header(std::ifstream& in, const std::string& path, std::uint64_t& size) {
  if (!in) fail(path, fmt::format("cannot open for reading: {}", errno_text()));
  const std::streamoff size_off = in.tellg();
  if (size_off < 0) fail(path, "cannot determine the file size");
  size = static_cast<std::uint64_t>(size_off);
  if (size < 8) fail(path, fmt::format("file is {} bytes, too short for the 8-byte header length", size));
  in.seekg(0);
  unsigned char len_bytes[8];
  if (!in.read(reinterpret_cast<char*>(len_bytes), 8)) fail(path, "cannot read the header length");
  std::uint64_t header_len = 0;
  for (int k = 7; k >= 0; --k) header_len = (header_len << 8) | len_bytes[k];
  if (header_len > kMaxHeaderBytes) {
    fail(path, fmt::format("header length {} exceeds the limit of {} bytes", header_len, kMaxHeaderBytes));
  }
  if (header_len > size - 8) {
    fail(path, fmt::format("header length {} exceeds the {} bytes that follow it (truncated or not a safetensors file)",
                           header_len, size - 8));
  }
  std::string header(header_len, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(header_len))) fail(path, "cannot read the header");
  return header;
}

// A tensor's entry of the header, checked: its dtype, its shape, and offsets within the data_len data
// bytes that hold exactly the shape's elements.
struct ParsedEntry {
  Dtype dtype;
  Shape shape;
  std::uint64_t begin, end;
};

ParsedEntry parse_entry(const std::string& path, const std::string& name, const nlohmann::json& value,
                        std::uint64_t data_len) {
  const auto where = "tensor " + quoted(name);
  if (!value.is_object()) fail(path, fmt::format("{}: entry is a {}, not an object", where, value.type_name()));
  const auto dt = value.find("dtype");
  const auto sh = value.find("shape");
  const auto off = value.find("data_offsets");
  if (dt == value.end() || sh == value.end() || off == value.end()) {
    fail(path, fmt::format("{}: entry needs \"dtype\", \"shape\" and \"data_offsets\"", where));
  }
  ParsedEntry e{};
  if (!dt->is_string() || !parse_dtype(dt->get<std::string>(), e.dtype)) {
    fail(path, fmt::format("{}: unknown dtype {}", where, brief(*dt)));
  }
  if (!sh->is_array()) fail(path, fmt::format("{}: shape {} is not an array", where, brief(*sh)));
  std::uint64_t count = 1;
  bool overflow = false;
  for (const auto& d : *sh) {
    if (!d.is_number_unsigned()) {
      fail(path, fmt::format("{}: shape {} has an entry that is not a non-negative integer", where, brief(*sh)));
    }
    const auto v = d.get<std::uint64_t>();
    if (v != 0 && count > std::numeric_limits<std::uint64_t>::max() / v) overflow = true;
    count *= v;
    e.shape.push_back(static_cast<std::size_t>(v));
  }
  if (!off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned()) {
    fail(path, fmt::format("{}: data_offsets {} is not a pair of non-negative integers", where, brief(*off)));
  }
  e.begin = (*off)[0].get<std::uint64_t>();
  e.end = (*off)[1].get<std::uint64_t>();
  if (e.begin > e.end || e.end > data_len) {
    fail(path,
         fmt::format("{}: data_offsets [{}, {}] out of range for {} data bytes", where, e.begin, e.end, data_len));
  }
  const std::uint64_t elem = dtype_size(e.dtype);
  if (overflow || count > std::numeric_limits<std::uint64_t>::max() / elem || count * elem != e.end - e.begin) {
    fail(path, fmt::format("{}: shape {} of {} needs {} bytes, data_offsets [{}, {}] hold {}", where, brief(*sh),
                           dtype_name(e.dtype), overflow ? std::string("too many") : std::to_string(count * elem),
                           e.begin, e.end, e.end - e.begin));
  }
  return e;
}

// The data must be exactly the tensors, back to back: no gaps, no overlaps, nothing left over. Sorts
// the entries by their offsets.
void check_layout(const std::string& path, std::vector<std::pair<std::string, ParsedEntry>>& entries,
                  std::uint64_t data_len) {
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return a.second.begin != b.second.begin ? a.second.begin < b.second.begin : a.second.end < b.second.end;
  });
  std::uint64_t expected = 0;
  for (const auto& [name, e] : entries) {
    if (e.begin != expected) {
      fail(path, fmt::format("tensor {}: data starts at byte {}, expected {} ({})", quoted(name), e.begin, expected,
                             e.begin < expected ? "overlaps the previous tensor" : "leaves a gap"));
    }
    expected = e.end;
  }
  if (expected != data_len) {
    fail(path, fmt::format("the tensors cover {} data bytes but the file holds {}", expected, data_len));
  }
}

// A bool holds 0 or 1; any other byte is corruption, not "true".
void check_bools(const std::string& path, const std::vector<std::pair<std::string, ParsedEntry>>& entries,
                 const std::vector<char>& data) {
  for (const auto& [name, e] : entries) {
    if (e.dtype != Dtype::BOOL) continue;
    for (std::uint64_t k = e.begin; k < e.end; ++k) {
      const auto byte = static_cast<unsigned char>(data[k]);
      if (byte > 1) {
        fail(path, fmt::format("tensor {}: BOOL element {} is byte {}, not 0 or 1", quoted(name), k - e.begin, byte));
      }
    }
  }
}

}  // namespace

File::File(std::string path) : path_(std::move(path)) {
  std::ifstream in(path_, std::ios::binary | std::ios::ate);
  std::uint64_t size = 0;
  const std::string header = read_header(in, path_, size);
  const nlohmann::json json = parse_header(path_, header);
  if (!json.is_object()) fail(path_, fmt::format("header is a JSON {}, not an object", json.type_name()));

  const std::uint64_t data_len = size - 8 - header.size();
  std::vector<std::pair<std::string, ParsedEntry>> ordered;
  for (const auto& [name, value] : json.items()) {
    if (name != kMetadataKey) {
      ordered.emplace_back(name, parse_entry(path_, name, value, data_len));
      continue;
    }
    if (!value.is_object()) fail(path_, "\"__metadata__\" is not an object");
    for (const auto& [k, v] : value.items()) {
      if (!v.is_string()) fail(path_, fmt::format("metadata {} is a {}, not a string", quoted(k), v.type_name()));
      metadata_[k] = v.get<std::string>();
    }
  }
  check_layout(path_, ordered, data_len);
  data_.resize(static_cast<std::size_t>(data_len));
  if (data_len > 0 && !in.read(data_.data(), static_cast<std::streamsize>(data_len))) {
    fail(path_, "cannot read the tensor data");
  }
  check_bools(path_, ordered, data_);
  for (auto& [name, e] : ordered) {
    entries_.emplace(
        name, Entry{e.dtype, std::move(e.shape), static_cast<std::size_t>(e.begin), static_cast<std::size_t>(e.end)});
  }
}

std::vector<std::string> File::names() const {
  std::vector<std::string> out;
  for (const auto& kv : entries_) out.push_back(kv.first);
  return out;
}

bool File::contains(const std::string& name) const { return entries_.count(name) != 0; }

const File::Entry& File::entry(const std::string& name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end()) fail(path_, fmt::format("no tensor named {}", quoted(name)));
  return it->second;
}

Dtype File::dtype(const std::string& name) const { return entry(name).dtype; }

TensorView File::view(const std::string& name) const {
  const Entry& e = entry(name);
  return TensorView{e.dtype, e.shape, data_.data() + e.begin, e.end - e.begin};
}
Shape File::shape(const std::string& name) const { return entry(name).shape; }

template <typename V>
xt::xarray<V> File::get(const std::string& name) const {
  const Entry& e = entry(name);
  if (e.dtype != dtype_of<V>()) {
    fail(path_, fmt::format("tensor \"{}\" is {}, not {}", name, dtype_name(e.dtype), dtype_name(dtype_of<V>())));
  }
  auto out = xt::xarray<V>::from_shape(e.shape);
  const char* src = data_.data() + e.begin;
  if constexpr (std::is_same_v<V, bool>) {
    // The constructor checked every byte is 0 or 1; converting still never makes an invalid bool.
    for (std::size_t k = 0; k < out.size(); ++k) out.data()[k] = src[k] != 0;
  } else if (e.end > e.begin) {
    std::memcpy(out.data(), src, e.end - e.begin);
  }
  return out;
}

namespace {
// IEEE binary16 (1 sign, 5 exponent, 10 mantissa bits) to float, exactly: subnormals are normalized,
// infinities and NaNs keep their class.
float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  std::uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu, bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {
      int e = -1;
      do {
        mantissa <<= 1;
        ++e;
      } while ((mantissa & 0x400u) == 0);
      bits = sign | (static_cast<std::uint32_t>(127 - 15 - e) << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float bfloat16_to_float(std::uint16_t b) {
  const std::uint32_t bits = std::uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

template <typename V, typename From, typename Convert>
void convert_bytes(const char* src, xt::xarray<V>& out, Convert convert) {
  for (std::size_t k = 0; k < out.size(); ++k) {
    From v;
    std::memcpy(&v, src + k * sizeof(From), sizeof(From));
    out.data()[k] = static_cast<V>(convert(v));
  }
}
}  // namespace

template <typename V>
xt::xarray<V> File::get_as(const std::string& name) const {
  const Entry& e = entry(name);
  auto out = xt::xarray<V>::from_shape(e.shape);
  const char* src = data_.data() + e.begin;
  switch (e.dtype) {
    case Dtype::F16:
      convert_bytes<V, std::uint16_t>(src, out, half_to_float);
      break;
    case Dtype::BF16:
      convert_bytes<V, std::uint16_t>(src, out, bfloat16_to_float);
      break;
    case Dtype::F32:
      convert_bytes<V, float>(src, out, [](float v) { return v; });
      break;
    case Dtype::F64:
      convert_bytes<V, double>(src, out, [](double v) { return v; });
      break;
    default:
      fail(path_,
           fmt::format("tensor \"{}\" is {}, not a floating dtype (F16, BF16, F32 or F64)", name, dtype_name(e.dtype)));
  }
  return out;
}

template xt::xarray<float> File::get_as<float>(const std::string&) const;
template xt::xarray<double> File::get_as<double>(const std::string&) const;
template xt::xarray<float> File::get<float>(const std::string&) const;
template xt::xarray<double> File::get<double>(const std::string&) const;
template xt::xarray<std::int64_t> File::get<std::int64_t>(const std::string&) const;
template xt::xarray<std::uint64_t> File::get<std::uint64_t>(const std::string&) const;
template xt::xarray<bool> File::get<bool>(const std::string&) const;

std::map<std::string, TensorView> views_of(const std::map<std::string, Array>& tensors) {
  std::map<std::string, TensorView> out;
  for (const auto& [name, array] : tensors) out[name] = std::visit([](const auto& a) { return view_of(a); }, array);
  return out;
}

void save_file(const std::string& path, const std::map<std::string, TensorView>& tensors, const Metadata& metadata) {
  std::vector<RawEntry> entries;
  for (const auto& [name, view] : tensors) {
    if (view.nbytes != numel(view.shape) * dtype_size(view.dtype)) {
      throw std::invalid_argument(fmt::format("{}: tensor {} has {} bytes for {} {} values", path, quoted(name),
                                              view.nbytes, numel(view.shape), dtype_name(view.dtype)));
    }
    entries.push_back(RawEntry{name, view});
  }
  write_file(path, std::move(entries), metadata);
}

void save_file(const std::string& path, const std::map<std::string, Array>& tensors, const Metadata& metadata) {
  save_file(path, views_of(tensors), metadata);
}

template <typename T>
void save_state_dict(const std::string& path, const StateDict<T>& state, const Metadata& metadata) {
  std::vector<RawEntry> entries;
  for (const auto& [name, tensor] : state) {
    if (!tensor.defined()) throw std::invalid_argument(fmt::format("{}: tensor \"{}\" is undefined", path, name));
    entries.push_back(RawEntry{name, view_of(tensor.data())});
  }
  write_file(path, std::move(entries), metadata);
}

namespace detail {

void throw_problems(const std::string& path, const std::string& what, const std::vector<std::string>& problems) {
  if (problems.empty()) return;
  std::string message = fmt::format("{}: {}: {} problem(s):", path, what, problems.size());
  for (const auto& p : problems) message += "\n  " + p;
  throw std::runtime_error(message);
}

namespace {
// The floating dtypes a state_dict loads from into a float or double model, converting as needed.
bool is_float_dtype(Dtype dtype) {
  return dtype == Dtype::F16 || dtype == Dtype::BF16 || dtype == Dtype::F32 || dtype == Dtype::F64;
}
}  // namespace

template <typename T>
std::vector<std::string> state_dict_problems(const File& file, const StateDict<T>& target, bool strict,
                                             const std::string& prefix) {
  std::vector<std::string> problems;
  for (const auto& full : file.names()) {
    if (full.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string name = full.substr(prefix.size());
    const auto it = target.find(name);
    if (it == target.end()) {
      if (strict) problems.push_back(fmt::format("unexpected \"{}\"", full));
      continue;
    }
    const Shape file_shape = file.shape(full);
    if (!it->second.defined()) {
      problems.push_back(fmt::format("target \"{}\" is an undefined tensor", name));
      continue;
    }
    if (file_shape != it->second.shape()) {
      problems.push_back(fmt::format("\"{}\" has shape {} in the file, {} in the model", full, format_shape(file_shape),
                                     format_shape(it->second.shape())));
    }
    if (!is_float_dtype(file.dtype(full))) {
      problems.push_back(fmt::format("\"{}\" is {} in the file, {} in the model (only F16, BF16, F32 and F64 convert)",
                                     full, dtype_name(file.dtype(full)), dtype_name(dtype_of<T>())));
    } else if (file_shape == it->second.shape()) {
      // A NaN or infinite weight (or an F64 value beyond a float's range) would load silently and make
      // every prediction NaN.
      const xt::xarray<T> values = file.get_as<T>(full);
      const auto bad = std::find_if(values.begin(), values.end(), [](T v) { return !std::isfinite(v); });
      if (bad != values.end()) {
        problems.push_back(fmt::format("\"{}\" holds {} at flat index {} (as {})", full, *bad,
                                       static_cast<std::size_t>(bad - values.begin()), dtype_name(dtype_of<T>())));
      }
    }
  }
  if (strict) {
    for (const auto& [name, tensor] : target) {
      if (!file.contains(prefix + name)) problems.push_back(fmt::format("missing \"{}\"", prefix + name));
    }
  }
  return problems;
}

}  // namespace detail

template <typename T>
void load_state_dict(const File& file, StateDict<T>& target, bool strict, const std::string& prefix) {
  detail::throw_problems(file.path(), "load_state_dict", detail::state_dict_problems(file, target, strict, prefix));
  for (auto& [name, tensor] : target) {
    if (!file.contains(prefix + name)) continue;
    // Copy into the existing storage (the target aliases a module's parameter), converting as torch's
    // copy_ does.
    const xt::xarray<T> values = file.get_as<T>(prefix + name);
    std::copy(values.begin(), values.end(), tensor.mutable_data().begin());
  }
}

template <typename T>
void load_state_dict(const std::string& path, StateDict<T>& target, bool strict) {
  load_state_dict(File(path), target, strict, "");
}

template void save_state_dict<float>(const std::string&, const StateDict<float>&, const Metadata&);
template void save_state_dict<double>(const std::string&, const StateDict<double>&, const Metadata&);
template void load_state_dict<float>(const std::string&, StateDict<float>&, bool);
template void load_state_dict<double>(const std::string&, StateDict<double>&, bool);
template void load_state_dict<float>(const File&, StateDict<float>&, bool, const std::string&);
template void load_state_dict<double>(const File&, StateDict<double>&, bool, const std::string&);
template std::vector<std::string> detail::state_dict_problems<float>(const File&, const StateDict<float>&, bool,
                                                                     const std::string&);
template std::vector<std::string> detail::state_dict_problems<double>(const File&, const StateDict<double>&, bool,
                                                                      const std::string&);

}  // namespace tapegrad::io::safetensors
