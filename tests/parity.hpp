// Shared by the torch-parity tests: the fixture files, their dtype tags and the element-wise
// comparison that names the worst element when a result strays from torch's.
#pragma once

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/shape.hpp"
#include "tapegrad/autograd/tensor.hpp"
#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::testing {

// The tag of T in the fixture names: "f32" or "f64".
template <typename T>
const char* dtype_tag();
template <>
inline const char* dtype_tag<float>() {
  return "f32";
}
template <>
inline const char* dtype_tag<double>() {
  return "f64";
}

// Agreement is |got - want| <= atol + rtol * |want|. rtol is a few units in the last place of the
// rounding accumulated over an op or a module's dozen ops, summed in another order than torch's
// (worst seen: ~3e-6 relative in float, ~1e-13 in double). atol is for elements near 0 by
// cancellation, e.g. a gradient summing O(1) terms of both signs, or the key bias's gradient in
// attention (exactly 0 in exact arithmetic, since softmax ignores a shift common to all keys): their
// error is eps times the size of the terms (~1e-7 in float, ~5e-16 in double), not of the result.
template <typename T>
struct Tolerance;
template <>
struct Tolerance<float> {
  static constexpr double rtol = 1e-5, atol = 1e-6;
};
template <>
struct Tolerance<double> {
  static constexpr double rtol = 1e-10, atol = 1e-12;
};

// "" when every element satisfies |got - want| <= atol + rtol * |want|, or is NaN where torch has NaN, or
// the same infinity as torch's (a NaN where torch has none fails); otherwise the shapes, or the worst
// element as a multiple of its allowed error.
template <typename T>
std::string mismatch(const xt::xarray<T>& got, const xt::xarray<T>& want, double rtol, double atol) {
  const Shape gs(got.shape().begin(), got.shape().end()), ws(want.shape().begin(), want.shape().end());
  if (gs != ws) return "shape " + format_shape(gs) + ", torch has " + format_shape(ws);
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got.data()[i], w = want.data()[i];
    if (g == w || (std::isnan(g) && std::isnan(w))) continue;  // equal infinities, NaN where torch has NaN
    const double ratio = std::abs(g - w) / (atol + rtol * std::abs(w));
    if (!(ratio <= worst)) {  // NaN counts as the worst
      worst = ratio;
      at = i;
      if (std::isnan(ratio)) break;
    }
  }
  if (worst <= 1) return "";
  std::ostringstream out;
  out.precision(std::numeric_limits<T>::max_digits10);
  out << "flat element " << at << ": " << got.data()[at] << ", torch has " << want.data()[at] << " (" << worst
      << " times the tolerance)";
  return out.str();
}

// A committed fixture file of tests/fixtures/ ("ops.safetensors", ...), read once per process.
inline const io::safetensors::File& fixture_file(const std::string& name) {
  static std::map<std::string, std::unique_ptr<io::safetensors::File>> files;
  auto& file = files[name];
  if (!file) file = std::make_unique<io::safetensors::File>(std::string(TAPEGRAD_TEST_FIXTURES_DIR) + "/" + name);
  return *file;
}

// The cases of a fixture file: the <case> of every name holding <case>.f32<marker> or <case>.f64<marker>
// (marker "." matches any key of a case; with at_end, the name must end there), and those of them that
// the file holds in one dtype only.
struct FixtureCases {
  std::set<std::string> cases, in_one_dtype;
};
inline FixtureCases fixture_cases(const io::safetensors::File& file, const std::string& marker, bool at_end) {
  std::map<std::string, std::set<std::string>> dtypes;
  for (const auto& name : file.names()) {
    for (const std::string tag : {".f32", ".f64"}) {
      const auto at = name.find(tag + marker);
      if (at != std::string::npos && (!at_end || at + tag.size() + marker.size() == name.size()))
        dtypes[name.substr(0, at)].insert(tag);
    }
  }
  FixtureCases found;
  for (const auto& [name, tags] : dtypes) {
    found.cases.insert(name);
    if (tags.size() != 2) found.in_one_dtype.insert(name);
  }
  return found;
}

// The case names of a parity table: a list of (name, what runs the case) pairs.
template <typename Table>
std::vector<std::string> case_names(const Table& table) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.push_back(entry.first);
  return names;
}

// What is wrong with a parity table's case names against the cases of its fixture file: a name listed
// twice, a case the file holds in one dtype only, a case in the table or the file only; "" when none.
inline std::string coverage_problems(const FixtureCases& in_file, const std::vector<std::string>& in_table) {
  std::ostringstream out;
  std::set<std::string> listed;
  for (const auto& name : in_table)
    if (!listed.insert(name).second) out << "\"" << name << "\" is listed twice; ";
  for (const auto& name : in_file.in_one_dtype) out << "\"" << name << "\" is in one dtype only; ";
  for (const auto& name : listed)
    if (!in_file.cases.count(name)) out << "\"" << name << "\" is not in the fixture file; ";
  for (const auto& name : in_file.cases)
    if (!listed.count(name)) out << "\"" << name << "\" is in no table; ";
  return out.str();
}

// One case of a fixture file in one dtype: its differentiable inputs ("<prefix>.in.<name>") as fresh
// leaves that require grad, looked up by the names of the fixture script.
template <typename T>
class CaseInputs {
 public:
  CaseInputs(const io::safetensors::File& file, std::string prefix) : file_(file), prefix_(std::move(prefix)) {
    const std::string in = prefix_ + ".in.";
    for (const auto& name : file_.names()) {
      if (name.compare(0, in.size(), in) == 0)
        inputs_.emplace(name.substr(in.size()), Tensor<T>(file_.get<T>(name), /*requires_grad=*/true));
    }
  }
  const Tensor<T>& in(const std::string& name) const {
    const auto it = inputs_.find(name);
    if (it == inputs_.end()) throw std::runtime_error(prefix_ + ": no input " + name);
    return it->second;
  }
  const std::map<std::string, Tensor<T>>& inputs() const { return inputs_; }

 protected:
  const io::safetensors::File& file_;
  std::string prefix_;

 private:
  std::map<std::string, Tensor<T>> inputs_;
};

template <typename T>
std::string mismatch(const xt::xarray<T>& got, const xt::xarray<T>& want) {
  return mismatch(got, want, Tolerance<T>::rtol, Tolerance<T>::atol);
}

}  // namespace tapegrad::testing
