#include "tapegrad/nn/module.hpp"

#include <fmt/format.h>

#include <ostream>
#include <sstream>
#include <stdexcept>

namespace tapegrad::nn {

namespace {
// Indents every line but the first by two spaces (torch's _addindent).
std::string indent_tail(const std::string& text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += "  ";
  }
  return out;
}

template <typename T>
bool contains(const std::vector<std::pair<std::string, Tensor<T>>>& list, const Tensor<T>& t) {
  for (const auto& entry : list)
    if (entry.second.same_as(t)) return true;
  return false;
}

// The tensors of a named list, in its order.
template <typename T>
std::vector<Tensor<T>> tensors_of(const std::vector<std::pair<std::string, Tensor<T>>>& named) {
  std::vector<Tensor<T>> out;
  for (const auto& entry : named) out.push_back(entry.second);
  return out;
}
}  // namespace

std::string python_float(double value) {
  std::string s = fmt::format("{}", value);
  if (s.find_first_of(".eainf") == std::string::npos) s += ".0";
  return s;
}

template <typename T>
void Module<T>::check_new_name(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos) {
    throw std::invalid_argument(
        fmt::format("{}: the name \"{}\" is not valid (it must be non-empty and contain no '.')", this->name(), name));
  }
  bool taken = false;
  for (const auto& p : parameters_) taken = taken || p.first == name;
  for (const auto& b : buffers_) taken = taken || b.name == name;
  for (const auto& c : children_) taken = taken || c.first == name;
  for (const auto& g : generators_) taken = taken || g.first == name;
  if (taken) throw std::invalid_argument(fmt::format("{}: \"{}\" is already registered", this->name(), name));
}

template <typename T>
Tensor<T> Module<T>::register_parameter(const std::string& name, Tensor<T> tensor) {
  check_new_name(name);
  if (!tensor.defined())
    throw std::invalid_argument(fmt::format("{}: parameter \"{}\" is an undefined tensor", this->name(), name));
  if (!tensor.is_leaf())
    throw std::invalid_argument(fmt::format("{}: parameter \"{}\" must be a leaf tensor, not the output of {}",
                                            this->name(), name, tensor.grad_fn_name()));
  tensor.requires_grad_(true);
  parameters_.emplace_back(name, tensor);
  return tensor;
}

template <typename T>
Tensor<T> Module<T>::register_buffer(const std::string& name, Tensor<T> tensor, bool persistent) {
  check_new_name(name);
  if (!tensor.defined())
    throw std::invalid_argument(fmt::format("{}: buffer \"{}\" is an undefined tensor", this->name(), name));
  buffers_.push_back({name, tensor, persistent});
  return tensor;
}

template <typename T>
void Module<T>::register_generator(const std::string& name, std::shared_ptr<Generator> gen) {
  check_new_name(name);
  if (!gen) throw std::invalid_argument(fmt::format("{}: generator \"{}\" is null", this->name(), name));
  generators_.emplace_back(name, std::move(gen));
}

template <typename T>
std::shared_ptr<Generator> Module<T>::register_dropout_generator(Generator& gen, std::shared_ptr<Generator> shared) {
  if (!shared) shared = std::make_shared<Generator>(gen.next_u64());
  register_generator("dropout_generator", shared);
  return shared;
}

template <typename T>
void Module<T>::collect_generators(const std::string& prefix,
                                   std::vector<std::pair<std::string, std::shared_ptr<Generator>>>& out) const {
  for (const auto& [name, gen] : generators_) {
    bool seen = false;
    for (const auto& entry : out) seen = seen || entry.second == gen;
    if (!seen) out.emplace_back(prefix + name, gen);
  }
  for (const auto& [name, child] : children_) child->collect_generators(prefix + name + ".", out);
}

template <typename T>
std::vector<std::pair<std::string, std::shared_ptr<Generator>>> Module<T>::named_generators() const {
  std::vector<std::pair<std::string, std::shared_ptr<Generator>>> out;
  collect_generators("", out);
  return out;
}

template <typename T>
void Module<T>::add_child(const std::string& name, std::shared_ptr<Module<T>> module) {
  check_new_name(name);
  if (!module) throw std::invalid_argument(fmt::format("{}: submodule \"{}\" is null", this->name(), name));
  children_.emplace_back(name, std::move(module));
}

template <typename T>
std::shared_ptr<Module<T>> Module<T>::remove_module(const std::string& name) {
  for (auto it = children_.begin(); it != children_.end(); ++it) {
    if (it->first != name) continue;
    std::shared_ptr<Module<T>> removed = std::move(it->second);
    children_.erase(it);
    return removed;
  }
  throw std::invalid_argument(fmt::format("{}: no submodule \"{}\" to remove", this->name(), name));
}

template <typename T>
void Module<T>::collect_parameters(const std::string& prefix,
                                   std::vector<std::pair<std::string, Tensor<T>>>& out) const {
  for (const auto& [name, tensor] : parameters_)  // a shared parameter is listed once, like torch
    if (!contains(out, tensor)) out.emplace_back(prefix + name, tensor);
  for (const auto& [name, child] : children_) child->collect_parameters(prefix + name + ".", out);
}

template <typename T>
void Module<T>::collect_buffers(const std::string& prefix, bool persistent_only,
                                std::vector<std::pair<std::string, Tensor<T>>>& out) const {
  for (const auto& b : buffers_)
    if ((b.persistent || !persistent_only) && !contains(out, b.tensor)) out.emplace_back(prefix + b.name, b.tensor);
  for (const auto& [name, child] : children_) child->collect_buffers(prefix + name + ".", persistent_only, out);
}

template <typename T>
std::vector<std::pair<std::string, Tensor<T>>> Module<T>::named_parameters() const {
  std::vector<std::pair<std::string, Tensor<T>>> out;
  collect_parameters("", out);
  return out;
}

template <typename T>
std::vector<Tensor<T>> Module<T>::parameters() const {
  return tensors_of(named_parameters());
}

template <typename T>
std::vector<std::pair<std::string, Tensor<T>>> Module<T>::named_buffers() const {
  std::vector<std::pair<std::string, Tensor<T>>> out;
  collect_buffers("", false, out);
  return out;
}

template <typename T>
std::vector<Tensor<T>> Module<T>::buffers() const {
  return tensors_of(named_buffers());
}

template <typename T>
StateDict<T> Module<T>::state_dict() const {
  StateDict<T> out;
  for (auto& [name, tensor] : named_parameters()) out.emplace(name, tensor);
  std::vector<std::pair<std::string, Tensor<T>>> persistent;
  collect_buffers("", true, persistent);
  for (auto& [name, tensor] : persistent) out.emplace(name, tensor);
  return out;
}

template <typename T>
std::vector<std::shared_ptr<Module<T>>> Module<T>::children() const {
  std::vector<std::shared_ptr<Module<T>>> out;
  for (const auto& entry : children_) out.push_back(entry.second);
  return out;
}

template <typename T>
void Module<T>::train(bool on) {
  training_ = on;
  for (auto& entry : children_) entry.second->train(on);
}

template <typename T>
void Module<T>::zero_grad() {
  for (auto& p : parameters()) p.zero_grad();
}

template <typename T>
std::size_t Module<T>::num_parameters() const {
  std::size_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

template <typename T>
std::string Module<T>::to_string() const {
  std::vector<std::string> extra_lines;
  const std::string extra = extra_repr();
  if (!extra.empty()) {
    std::istringstream in(extra);
    for (std::string line; std::getline(in, line);) extra_lines.push_back(line);
  }
  std::vector<std::string> lines = extra_lines;
  for (const auto& [child_name, child] : children_)
    lines.push_back("(" + child_name + "): " + indent_tail(child->to_string()));
  std::string out = name() + "(";
  if (!lines.empty()) {
    if (extra_lines.size() == 1 && children_.empty()) {
      out += extra_lines[0];
    } else {
      out += "\n";
      for (const auto& line : lines) out += "  " + line + "\n";
    }
  }
  return out + ")";
}

template <typename T>
std::ostream& operator<<(std::ostream& os, const Module<T>& module) {
  return os << module.to_string();
}

template class Module<float>;
template class Module<double>;
template std::ostream& operator<< <float>(std::ostream&, const Module<float>&);
template std::ostream& operator<< <double>(std::ostream&, const Module<double>&);

}  // namespace tapegrad::nn
