#include "tapegrad/io/state_dict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace tapegrad::io {

template <typename T, typename U>
void load_state_dict(StateDict<T>& target, const StateDict<U>& source, bool strict) {
  std::vector<std::string> problems;
  for (const auto& [name, from] : source) {
    const auto it = target.find(name);
    if (it == target.end()) {
      if (strict) problems.push_back(fmt::format("unexpected \"{}\"", name));
      continue;
    }
    if (!from.defined() || !it->second.defined()) {
      problems.push_back(
          fmt::format("\"{}\" is an undefined tensor in the {}", name, from.defined() ? "model" : "state_dict"));
      continue;
    }
    if (from.shape() != it->second.shape()) {
      problems.push_back(fmt::format("\"{}\" has shape {} in the state_dict, {} in the model", name,
                                     format_shape(from.shape()), format_shape(it->second.shape())));
      continue;
    }
    // A NaN or infinite weight (or a double beyond a float's range) would load silently and make every
    // prediction NaN.
    const auto& values = from.data();
    const auto bad = std::find_if(values.begin(), values.end(), [](U v) { return !std::isfinite(static_cast<T>(v)); });
    if (bad != values.end()) {
      problems.push_back(fmt::format("\"{}\" holds {} at flat index {}", name, static_cast<T>(*bad),
                                     static_cast<std::size_t>(bad - values.begin())));
    }
  }
  if (strict) {
    for (const auto& entry : target) {
      if (!source.count(entry.first)) problems.push_back(fmt::format("missing \"{}\"", entry.first));
    }
  }
  if (!problems.empty()) {
    std::string message = fmt::format("load_state_dict: {} problem(s):", problems.size());
    for (const auto& p : problems) message += "\n  " + p;
    throw std::runtime_error(message);
  }
  for (auto& [name, to] : target) {
    const auto from = source.find(name);
    if (from == source.end()) continue;
    const auto& values = from->second.data();
    std::transform(values.begin(), values.end(), to.mutable_data().begin(), [](U v) { return static_cast<T>(v); });
  }
}

template void load_state_dict<float, float>(StateDict<float>&, const StateDict<float>&, bool);
template void load_state_dict<float, double>(StateDict<float>&, const StateDict<double>&, bool);
template void load_state_dict<double, float>(StateDict<double>&, const StateDict<float>&, bool);
template void load_state_dict<double, double>(StateDict<double>&, const StateDict<double>&, bool);

}  // namespace tapegrad::io
