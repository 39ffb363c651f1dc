/// @file
/// Hugging Face safetensors files (https://github.com/huggingface/safetensors): an 8-byte
/// little-endian header length N, N bytes of JSON {name: {"dtype", "shape", "data_offsets"}, optional
/// "__metadata__": {string: string}}, then the raw little-endian tensor bytes.
/// Reading validates everything and throws std::runtime_error naming the file and the problem;
/// writing goes to a temporary file in the same directory that is fsynced and renamed over the
/// target, so a failed or interrupted save never destroys the previous file; the temporary files of
/// saves to the same path whose process was killed are removed by the next save.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/shape.hpp"
#include "tapegrad/io/state_dict.hpp"

namespace tapegrad::io::safetensors {

/// The longest header File reads: 100,000,000 bytes, the limit of the reference implementation. A
/// longer one is refused before anything is allocated for it.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;
/// The deepest nesting of arrays and objects File accepts in a header (a valid one nests 3 deep); a
/// deeper one is refused while parsing, so no recursive walk of the JSON can overflow the stack.
constexpr int kMaxHeaderDepth = 32;
/// The most entries (tensors and "__metadata__") File accepts in a header: far more than a model
/// holds, and a header with more is refused after a pass that builds nothing, in one line, instead of
/// becoming a map of a million empty tensors (a 100 MB header fits about two million).
constexpr std::size_t kMaxHeaderEntries = 100'000;

/// Every dtype of the format; the typed getters and the writer handle F32, F64, I64, U64 and BOOL.
enum class Dtype { BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64 };

const char* dtype_name(Dtype dtype);  ///< "F32", ...
std::size_t dtype_size(Dtype dtype);  ///< bytes per element

/// The dtype that stores T: F32 for float, F64 for double, I64, U64, BOOL.
template <typename T>
Dtype dtype_of();
/// @cond
template <>
Dtype dtype_of<float>();
template <>
Dtype dtype_of<double>();
template <>
Dtype dtype_of<std::int64_t>();
template <>
Dtype dtype_of<std::uint64_t>();
template <>
Dtype dtype_of<bool>();
/// @endcond

/// A tensor to save, of any writable element type.
using Array = std::variant<xt::xarray<float>, xt::xarray<double>, xt::xarray<std::int64_t>, xt::xarray<std::uint64_t>,
                           xt::xarray<bool>>;
/// The file's optional "__metadata__": string keys to string values.
using Metadata = std::map<std::string, std::string>;

/// A tensor's values where they already are, not owned: its dtype, shape and little-endian bytes (a
/// BOOL byte is 0 or 1). A view of an xarray or of a File's bytes; what it views must outlive it.
struct TensorView {
  Dtype dtype;
  Shape shape;
  const void* data;
  std::size_t nbytes;
};
/// A view of a's values (V float, double, std::int64_t, std::uint64_t or bool).
template <typename V>
TensorView view_of(const xt::xarray<V>& a) {
  return TensorView{dtype_of<V>(), Shape(a.shape().begin(), a.shape().end()), a.data(), a.size() * sizeof(V)};
}
/// Views of every tensor of a map, under the same names.
std::map<std::string, TensorView> views_of(const std::map<std::string, Array>& tensors);

/// A loaded and validated file; the tensor bytes are held in memory.
class File {
 public:
  /// Throws std::runtime_error naming the path for an unreadable, truncated or malformed file, a header
  /// beyond kMaxHeaderBytes, kMaxHeaderDepth or kMaxHeaderEntries, or a BOOL tensor with a byte other than 0 and 1.
  explicit File(std::string path);

  const std::string& path() const { return path_; }
  std::vector<std::string> names() const;  ///< sorted
  bool contains(const std::string& name) const;
  /// These throw std::runtime_error naming the file and the tensor if there is no such tensor.
  Dtype dtype(const std::string& name) const;
  Shape shape(const std::string& name) const;
  /// The values as V (float, double, std::int64_t, std::uint64_t or bool); asking for a dtype other
  /// than the stored one throws std::runtime_error naming the tensor and both dtypes.
  template <typename V>
  xt::xarray<V> get(const std::string& name) const;
  /// The values of a floating tensor (F16, BF16, F32 or F64) as V (float or double): widened exactly,
  /// or rounded to nearest when narrowing, as torch's Tensor.to. Another dtype throws std::runtime_error
  /// naming the tensor and its dtype.
  template <typename V>
  xt::xarray<V> get_as(const std::string& name) const;
  /// The tensor's bytes in the file, not copied: valid as long as this File. Throws std::runtime_error
  /// naming the file and the tensor if there is no such tensor.
  TensorView view(const std::string& name) const;
  const Metadata& metadata() const { return metadata_; }

 private:
  struct Entry {
    Dtype dtype;
    Shape shape;
    std::size_t begin, end;  ///< byte offsets into data_
  };
  const Entry& entry(const std::string& name) const;

  std::string path_;
  std::map<std::string, Entry> entries_;
  Metadata metadata_;
  std::vector<char> data_;
};

/// Writes the tensors and metadata atomically (temp file, fsync, rename). Throws std::invalid_argument
/// for a tensor named "__metadata__" and std::runtime_error naming the path if writing fails; the
/// previous file at path, if any, is then untouched.
void save_file(const std::string& path, const std::map<std::string, Array>& tensors, const Metadata& metadata = {});
/// The same from views, without copying the values (a checkpoint's model and optimizer state).
void save_file(const std::string& path, const std::map<std::string, TensorView>& tensors,
               const Metadata& metadata = {});

/// A state_dict saved as F32 (float) or F64 (double) tensors under its own names, without copying.
template <typename T>
void save_state_dict(const std::string& path, const StateDict<T>& state, const Metadata& metadata = {});

/// Copies the file's tensors into target's tensors (which alias a module's parameters, so this loads
/// the module). Like torch's copy_, F64, F32, F16 and BF16 values load into a float or double model,
/// converted (rounded to nearest when narrowing). Every problem — missing or unexpected names,
/// wrong shapes, a dtype other than these four, NaN or infinite values (after conversion) — is reported
/// together in one std::runtime_error naming the file, and nothing is changed then. strict = false
/// ignores missing and unexpected names but still rejects wrong shapes, dtypes and values.
template <typename T>
void load_state_dict(const std::string& path, StateDict<T>& target, bool strict = true);
/// The same from an opened file, matching only its names that start with prefix (stripped before
/// comparing with target's names): how a checkpoint keeps a model and an optimizer in one file.
template <typename T>
void load_state_dict(const File& file, StateDict<T>& target, bool strict = true, const std::string& prefix = "");

namespace detail {
/// The checks of load_state_dict without the copy: the problems found, empty if loading would succeed.
template <typename T>
std::vector<std::string> state_dict_problems(const File& file, const StateDict<T>& target, bool strict,
                                             const std::string& prefix);
/// Throws std::runtime_error "<path>: <what>: <problem>..." if problems is not empty.
void throw_problems(const std::string& path, const std::string& what, const std::vector<std::string>& problems);
}  // namespace detail

}  // namespace tapegrad::io::safetensors
