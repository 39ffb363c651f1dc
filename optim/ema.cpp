#include "tapegrad/optim/ema.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "tapegrad/autograd/shape.hpp"

namespace tapegrad::optim {

template <typename T>
ExponentialMovingAverage<T>::ExponentialMovingAverage(std::vector<Tensor<T>> params, double decay)
    : params_(std::move(params)), decay_(decay) {
  if (params_.empty()) throw std::invalid_argument("ExponentialMovingAverage got an empty parameter list");
  if (!(decay >= 0.0 && decay <= 1.0)) {
    throw std::invalid_argument(fmt::format("ExponentialMovingAverage: decay must be in [0, 1], got {}", decay));
  }
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].defined()) {
      throw std::invalid_argument(fmt::format("ExponentialMovingAverage: parameter {} is undefined", i));
    }
    shadow_.push_back(params_[i].data());
  }
}

template <typename T>
void ExponentialMovingAverage<T>::update() {
  ++num_updates_;
  const double n = static_cast<double>(num_updates_);
  const T keep = static_cast<T>(std::min(decay_, (1.0 + n) / (10.0 + n)));
  const T take = T(1) - keep;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    T* avg = shadow_[i].data();
    const T* p = params_[i].data().data();
    const std::size_t size = shadow_[i].size();
    for (std::size_t k = 0; k < size; ++k) avg[k] = keep * avg[k] + take * p[k];
  }
}

template <typename T>
void ExponentialMovingAverage<T>::copy_to() {
  for (std::size_t i = 0; i < params_.size(); ++i) {
    auto& value = params_[i].mutable_data();
    std::copy(shadow_[i].begin(), shadow_[i].end(), value.begin());
  }
}

template <typename T>
void ExponentialMovingAverage<T>::store() {
  stored_.clear();
  for (const auto& p : params_) stored_.push_back(p.data());
}

template <typename T>
void ExponentialMovingAverage<T>::restore() {
  if (stored_.empty()) throw std::logic_error("ExponentialMovingAverage::restore: nothing was stored");
  for (std::size_t i = 0; i < params_.size(); ++i) {
    auto& value = params_[i].mutable_data();
    std::copy(stored_[i].begin(), stored_[i].end(), value.begin());
  }
  stored_.clear();
}

template <typename T>
StateDict<T> ExponentialMovingAverage<T>::state_dict() const {
  StateDict<T> out;
  for (std::size_t i = 0; i < shadow_.size(); ++i) out["shadow." + std::to_string(i)] = Tensor<T>(shadow_[i]);
  out["num_updates"] = Tensor<T>::scalar(static_cast<T>(num_updates_));
  return out;
}

template <typename T>
void ExponentialMovingAverage<T>::load_state_dict(const StateDict<T>& state) {
  std::vector<std::string> problems;
  std::set<std::string> expected{"num_updates"};
  for (std::size_t i = 0; i < shadow_.size(); ++i) {
    const std::string name = "shadow." + std::to_string(i);
    expected.insert(name);
    const auto it = state.find(name);
    if (it == state.end()) {
      problems.push_back(fmt::format("missing \"{}\"", name));
    } else if (it->second.shape() != params_[i].shape()) {
      problems.push_back(fmt::format("\"{}\" has shape {}, parameter {} has {}", name, format_shape(it->second.shape()),
                                     i, format_shape(params_[i].shape())));
    }
  }
  for (const auto& [name, tensor] : state) {
    if (!expected.count(name)) problems.push_back(fmt::format("unexpected \"{}\"", name));
  }
  const auto count = state.find("num_updates");
  double n = 0.0;
  if (count == state.end()) {
    problems.push_back("missing \"num_updates\"");
  } else if (count->second.data().size() != 1 || !((n = static_cast<double>(count->second.data()[0])) >= 0.0) ||
             n != std::floor(n)) {
    problems.push_back("\"num_updates\" is not a count");
  }
  if (!problems.empty()) {
    std::string message = "ExponentialMovingAverage::load_state_dict:";
    for (const auto& p : problems) message += " " + p + ";";
    message.pop_back();
    throw std::invalid_argument(message);
  }
  for (std::size_t i = 0; i < shadow_.size(); ++i) shadow_[i] = state.at("shadow." + std::to_string(i)).data();
  num_updates_ = static_cast<std::int64_t>(n);
}

template class ExponentialMovingAverage<float>;
template class ExponentialMovingAverage<double>;

}  // namespace tapegrad::optim
