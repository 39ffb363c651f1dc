#include "nn/checkpoint.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace tapegrad {

namespace {

const char* const kModel = "model.";
const char* const kOptimizer = "optimizer.";

// Adds a problem if name is absent or is not a tensor of the given dtype and shape.
void check_entry(const safetensors::File& file, const std::string& name, safetensors::Dtype dtype, const Shape& shape,
                 std::vector<std::string>& problems) {
  if (!file.contains(name)) {
    problems.push_back(fmt::format("missing \"{}\"", name));
    return;
  }
  if (file.dtype(name) != dtype) {
    problems.push_back(fmt::format("\"{}\" is {}, expected {}", name, safetensors::dtype_name(file.dtype(name)),
                                   safetensors::dtype_name(dtype)));
  }
  if (file.shape(name) != shape) {
    problems.push_back(
        fmt::format("\"{}\" has shape {}, expected {}", name, format_shape(file.shape(name)), format_shape(shape)));
  }
}

}  // namespace

template <typename T>
void save_checkpoint(const std::string& path, const StateDict<T>& model, const optim::Optimizer<T>& optimizer,
                     std::int64_t step, const Generator& generator, const safetensors::Metadata& metadata) {
  std::map<std::string, safetensors::Array> entries;
  for (const auto& [name, tensor] : model) {
    if (!tensor.defined()) {
      throw std::invalid_argument(fmt::format("{}: model tensor \"{}\" is undefined", path, name));
    }
    entries[kModel + name] = tensor.data();
  }
  for (const auto& [name, tensor] : optimizer.state_dict()) entries[kOptimizer + name] = tensor.data();
  entries["step"] = xt::xarray<std::int64_t>(step);
  const Generator::State g = generator.state();
  entries["generator.state"] = xt::xarray<std::uint64_t>({g.s[0], g.s[1], g.s[2], g.s[3]});
  entries["generator.has_spare_normal"] = xt::xarray<bool>(g.has_spare_normal);
  entries["generator.spare_normal"] = xt::xarray<double>(g.spare_normal);
  safetensors::save_file(path, entries, metadata);
}

template <typename T>
std::int64_t load_checkpoint(const std::string& path, StateDict<T>& model, optim::Optimizer<T>& optimizer,
                             Generator& generator) {
  const safetensors::File file(path);
  std::vector<std::string> problems = safetensors::detail::state_dict_problems(file, model, true, kModel);
  check_entry(file, "step", safetensors::Dtype::I64, {}, problems);
  check_entry(file, "generator.state", safetensors::Dtype::U64, {4}, problems);
  check_entry(file, "generator.has_spare_normal", safetensors::Dtype::BOOL, {}, problems);
  check_entry(file, "generator.spare_normal", safetensors::Dtype::F64, {}, problems);
  const std::string opt_prefix = kOptimizer;
  StateDict<T> opt_state;
  for (const auto& name : file.names()) {
    if (name.compare(0, opt_prefix.size(), opt_prefix) == 0) {
      if (file.dtype(name) != safetensors::dtype_of<T>()) {
        problems.push_back(fmt::format("\"{}\" is {}, expected {}", name, safetensors::dtype_name(file.dtype(name)),
                                       safetensors::dtype_name(safetensors::dtype_of<T>())));
      } else {
        opt_state[name.substr(opt_prefix.size())] = Tensor<T>(file.get<T>(name));
      }
    } else if (name.compare(0, std::string(kModel).size(), kModel) != 0 && name != "step" &&
               name.compare(0, 10, "generator.") != 0) {
      problems.push_back(fmt::format("unexpected \"{}\"", name));
    }
  }
  std::int64_t step = 0;
  if (problems.empty()) {
    step = file.get<std::int64_t>("step")();
    if (step < 0) problems.push_back(fmt::format("\"step\" is {}, not a step count", step));
  }
  safetensors::detail::throw_problems(path, "load_checkpoint", problems);

  // The optimizer checks its state before changing anything; it goes first so that a bad optimizer
  // state leaves the model untouched too.
  try {
    optimizer.load_state_dict(opt_state);
  } catch (const std::invalid_argument& ex) {
    throw std::runtime_error(fmt::format("{}: load_checkpoint: optimizer state: {}", path, ex.what()));
  }
  safetensors::load_state_dict(file, model, true, kModel);
  Generator::State g;
  const auto words = file.get<std::uint64_t>("generator.state");
  for (std::size_t k = 0; k < 4; ++k) g.s[k] = words(k);
  g.has_spare_normal = file.get<bool>("generator.has_spare_normal")();
  g.spare_normal = file.get<double>("generator.spare_normal")();
  generator.set_state(g);
  return step;
}

template void save_checkpoint<float>(const std::string&, const StateDict<float>&, const optim::Optimizer<float>&,
                                     std::int64_t, const Generator&, const safetensors::Metadata&);
template void save_checkpoint<double>(const std::string&, const StateDict<double>&, const optim::Optimizer<double>&,
                                      std::int64_t, const Generator&, const safetensors::Metadata&);
template std::int64_t load_checkpoint<float>(const std::string&, StateDict<float>&, optim::Optimizer<float>&,
                                             Generator&);
template std::int64_t load_checkpoint<double>(const std::string&, StateDict<double>&, optim::Optimizer<double>&,
                                              Generator&);

}  // namespace tapegrad
