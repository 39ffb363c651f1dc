#include "tapegrad/optim/optimizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

namespace tapegrad::optim {

void detail::check_nonnegative(const char* optimizer, std::initializer_list<std::pair<const char*, double>> values) {
  for (const auto& [what, value] : values) {
    if (!(value >= 0.0)) throw std::invalid_argument(fmt::format("{}: invalid {}: {}", optimizer, what, value));
  }
}

template <typename T>
Optimizer<T>::Optimizer(std::vector<Tensor<T>> params, double lr) : params_(std::move(params)), lr_(lr) {
  if (params_.empty()) throw std::invalid_argument("optimizer got an empty parameter list");
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].defined()) throw std::invalid_argument(fmt::format("optimizer: parameter {} is undefined", i));
    if (!params_[i].is_leaf()) {
      throw std::invalid_argument(fmt::format(
          "optimizer: can't optimize a non-leaf tensor (parameter {}, output of {})", i, params_[i].grad_fn_name()));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (params_[i].same_as(params_[j])) {
        throw std::invalid_argument(fmt::format("optimizer: parameter {} is the same tensor as parameter {}", i, j));
      }
    }
  }
  detail::check_nonnegative("optimizer", {{"learning rate", lr}});
  state_.resize(params_.size());
}

template <typename T>
void Optimizer<T>::zero_grad() {
  for (auto& p : params_) p.zero_grad();
}

template <typename T>
void Optimizer<T>::set_lr(double lr) {
  detail::check_nonnegative(name(), {{"learning rate", lr}});
  lr_ = lr;
}

template <typename T>
typename Optimizer<T>::ParamState& Optimizer<T>::state_for(std::size_t i) {
  ParamState& st = state_[i];
  if (!st.initialized) {
    st.initialized = true;
    st.step = 0;
    st.buffers.assign(buffer_names().size(), xt::xarray<T>(xt::zeros<T>(params_[i].shape())));
  }
  return st;
}

template <typename T>
StateDict<T> Optimizer<T>::state_dict() const {
  StateDict<T> out;
  const auto names = buffer_names();
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const ParamState& st = state_[i];
    if (!st.initialized) continue;
    const std::string prefix = fmt::format("state.{}.", i);
    for (std::size_t b = 0; b < names.size(); ++b) out[prefix + names[b]] = Tensor<T>(st.buffers[b]);
    if (counts_steps()) out[prefix + "step"] = Tensor<T>::scalar(static_cast<T>(st.step));
  }
  out["param_groups.0.lr"] = Tensor<T>::scalar(static_cast<T>(lr_));
  return out;
}

namespace {

template <typename T>
bool is_scalar(const Tensor<T>& t) {
  return t.defined() && t.numel() == 1 && t.dim() <= 1;
}

}  // namespace

bool parse_state_key(const std::string& key, std::size_t& index, std::string& field) {
  const std::string prefix = "state.";
  if (key.compare(0, prefix.size(), prefix) != 0) return false;
  const std::size_t dot = key.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size() || dot + 1 == key.size()) return false;
  index = 0;
  for (std::size_t k = prefix.size(); k < dot; ++k) {
    const char c = key[k];
    if (c < '0' || c > '9' || (k == prefix.size() && c == '0' && dot - prefix.size() > 1)) return false;
    if (index > (static_cast<std::size_t>(-1) - 9) / 10) return false;
    index = index * 10 + static_cast<std::size_t>(c - '0');
  }
  field = key.substr(dot + 1);
  return true;
}

template <typename T>
void Optimizer<T>::load_state_dict(const StateDict<T>& state) {
  const auto names = buffer_names();
  std::vector<std::string> problems;
  std::set<std::size_t> present;  // parameters with any state entry
  for (const auto& [key, value] : state) {
    if (key == "param_groups.0.lr") continue;
    std::size_t i = 0;
    std::string field;
    if (!parse_state_key(key, i, field) || i >= params_.size()) {
      problems.push_back(fmt::format("unexpected key \"{}\"", key));
      continue;
    }
    const bool is_buffer = std::find(names.begin(), names.end(), field) != names.end();
    const bool is_step = counts_steps() && field == "step";
    if (!is_buffer && !is_step) {
      problems.push_back(fmt::format("unexpected key \"{}\"", key));
      continue;
    }
    present.insert(i);
    if (!value.defined()) {
      problems.push_back(fmt::format("\"{}\" is an undefined tensor", key));
    } else if (is_buffer && value.shape() != params_[i].shape()) {
      problems.push_back(fmt::format("\"{}\" has shape {}, parameter {} has shape {}", key, format_shape(value.shape()),
                                     i, format_shape(params_[i].shape())));
    } else if (is_step) {
      if (!is_scalar(value)) {
        problems.push_back(
            fmt::format("\"{}\" must hold one number, it has shape {}", key, format_shape(value.shape())));
      } else {
        const double s = static_cast<double>(value.item());
        if (!(s >= 0.0) || std::floor(s) != s) {
          problems.push_back(fmt::format("\"{}\" is {}, not a non-negative integer", key, s));
        }
      }
    }
  }
  auto lr_it = state.find("param_groups.0.lr");
  if (lr_it == state.end()) {
    problems.push_back("missing key \"param_groups.0.lr\"");
  } else if (!is_scalar(lr_it->second)) {
    problems.push_back(fmt::format("\"param_groups.0.lr\" must hold one number, it has shape {}",
                                   lr_it->second.defined() ? format_shape(lr_it->second.shape()) : "undefined"));
  } else if (!(static_cast<double>(lr_it->second.item()) >= 0.0)) {
    problems.push_back(fmt::format("\"param_groups.0.lr\" is {}, not a valid learning rate", lr_it->second.item()));
  }
  // A parameter with state must have all of it; with eager state, every parameter that trains must
  // have it (a frozen one has none).
  if (eager_state()) {
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (params_[i].requires_grad()) present.insert(i);
  }
  for (std::size_t i : present) {
    std::vector<std::string> required = names;
    if (counts_steps()) required.push_back("step");
    for (const auto& field : required) {
      const std::string key = fmt::format("state.{}.{}", i, field);
      if (state.find(key) == state.end()) problems.push_back(fmt::format("missing key \"{}\"", key));
    }
  }
  if (!problems.empty()) {
    std::string message = fmt::format("{}.load_state_dict: {} problem(s):", name(), problems.size());
    for (const auto& p : problems) message += "\n  " + p;
    throw std::invalid_argument(message);
  }

  std::vector<ParamState> loaded(params_.size());
  for (std::size_t i : present) {
    ParamState& st = loaded[i];
    st.initialized = true;
    const std::string prefix = fmt::format("state.{}.", i);
    for (const auto& field : names) st.buffers.push_back(state.at(prefix + field).data());
    if (counts_steps()) st.step = static_cast<std::int64_t>(state.at(prefix + "step").item());
  }
  state_ = std::move(loaded);
  // The stored lr has T's precision; keep the current one when it is the same number at that
  // precision, so a float run resumed with its original lr continues bit for bit.
  const T stored_lr = lr_it->second.item();
  if (stored_lr != static_cast<T>(lr_)) lr_ = static_cast<double>(stored_lr);
}

template class Optimizer<float>;
template class Optimizer<double>;

}  // namespace tapegrad::optim
