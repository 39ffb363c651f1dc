/// @file
/// Containers: Sequential chains Tensor -> Tensor modules; ModuleList holds modules under the names
/// "0", "1", ... (torch.nn.Sequential / torch.nn.ModuleList).
#pragma once

#include <fmt/format.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

/// torch.nn.Sequential: children named "0", "1", ..., each forward feeding the next.
template <typename T>
class Sequential : public Module<T, Sequential<T>> {
 public:
  Sequential() = default;
  /// Any modules with a `Tensor<T> forward(const Tensor<T>&)` member.
  template <typename... M>
  explicit Sequential(std::shared_ptr<M>... modules) {
    (push_back(std::move(modules)), ...);
  }

  template <typename M>
  void push_back(std::shared_ptr<M> module) {
    const std::string index = std::to_string(forwards_.size());
    this->add_child(index, module);
    forwards_.push_back([module](const Tensor<T>& x) { return module->forward(x); });
  }

  /// Each module's output is the next one's input.
  Tensor<T> forward(const Tensor<T>& x) const {
    Tensor<T> h = x;
    for (const auto& f : forwards_) h = f(h);
    return h;
  }

  std::size_t size() const { return forwards_.size(); }
  std::shared_ptr<Module<T>> operator[](std::size_t i) const {
    if (i >= size())
      throw std::out_of_range(fmt::format("Sequential: index {} out of range for {} modules", i, size()));
    return this->named_children()[i].second;
  }
  std::string name() const override { return "Sequential"; }

 private:
  std::vector<std::function<Tensor<T>(const Tensor<T>&)>> forwards_;
};

/// torch.nn.ModuleList: children named "0", "1", ..., with no forward of its own.
template <typename T>
class ModuleList : public Module<T> {
 public:
  ModuleList() = default;

  void push_back(std::shared_ptr<Module<T>> module) { this->add_child(std::to_string(size()), std::move(module)); }
  std::size_t size() const { return this->named_children().size(); }
  std::shared_ptr<Module<T>> operator[](std::size_t i) const {
    if (i >= size())
      throw std::out_of_range(fmt::format("ModuleList: index {} out of range for {} modules", i, size()));
    return this->named_children()[i].second;
  }
  /// The i-th module as its own type; throws if it is of another type.
  template <typename M>
  std::shared_ptr<M> at(std::size_t i) const {
    auto m = std::dynamic_pointer_cast<M>((*this)[i]);
    if (!m) throw std::invalid_argument(fmt::format("ModuleList: module {} is a {}", i, (*this)[i]->name()));
    return m;
  }
  std::string name() const override { return "ModuleList"; }
};

}  // namespace tapegrad::nn
