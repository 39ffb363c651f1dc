#include "tapegrad/train/checkpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tapegrad/train/checksum.hpp"

namespace tapegrad::train {

namespace {

const char* const kModel = "model.";
const char* const kOptimizer = "optimizer.";
const char* const kExtra = "extra.";
const char* const kChecksum = kChecksumKey;
const char* const kGeneratorFields[] = {".state", ".has_spare_normal", ".spare_normal"};

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// Adds a problem if name is absent or is not a tensor of the given dtype and shape.
void check_entry(const io::safetensors::File& file, const std::string& name, io::safetensors::Dtype dtype,
                 const Shape& shape, std::vector<std::string>& problems) {
  if (!file.contains(name)) {
    problems.push_back(fmt::format("missing \"{}\"", name));
    return;
  }
  if (file.dtype(name) != dtype) {
    problems.push_back(fmt::format("\"{}\" is {}, expected {}", name, io::safetensors::dtype_name(file.dtype(name)),
                                   io::safetensors::dtype_name(dtype)));
  }
  if (file.shape(name) != shape) {
    problems.push_back(
        fmt::format("\"{}\" has shape {}, expected {}", name, format_shape(file.shape(name)), format_shape(shape)));
  }
}

// The generators of a checkpoint under their keys ("generator" or "generator.<name>").
template <typename G>
using Generators = std::vector<std::pair<std::string, G*>>;

template <typename T>
void save(const std::string& path, const StateDict<T>& model, const optim::Optimizer<T>& optimizer, std::int64_t step,
          const Generators<const Generator>& generators, const io::safetensors::Metadata& metadata,
          const StateDict<T>& extra) {
  if (metadata.count(kChecksum)) {
    throw std::invalid_argument(fmt::format("{}: metadata key \"{}\" is reserved for the checkpoint", path, kChecksum));
  }
  // Views of the tensors where they are, not copies: a checkpoint of a model with a large embedding table reaches 0.4
  // GB, and copies made while saving stayed in the process's footprint for the rest of the run.
  std::map<std::string, io::safetensors::TensorView> entries;
  add_views(entries, model, kModel, path, "model");
  const StateDict<T> optimizer_state = optimizer.state_dict();  // alive until written: viewed below
  add_views(entries, optimizer_state, kOptimizer, path, "optimizer");
  add_views(entries, extra, kExtra, path, "extra");
  // A model load refuses non-finite weights: such a checkpoint must not replace a good one.
  std::vector<std::string> problems;
  check_finite(entries, kModel, problems);
  if (!problems.empty()) throw std::invalid_argument(fmt::format("{}: not saved, {}", path, problems.front()));
  std::map<std::string, io::safetensors::Array> small;  // the step and the generators, owned here
  small["step"] = xt::xarray<std::int64_t>(step);
  for (const auto& [key, gen] : generators) {
    const Generator::State g = gen->state();
    small[key + ".state"] = xt::xarray<std::uint64_t>({g.s[0], g.s[1], g.s[2], g.s[3]});
    small[key + ".has_spare_normal"] = xt::xarray<bool>(g.has_spare_normal);
    small[key + ".spare_normal"] = xt::xarray<double>(g.spare_normal);
  }
  for (auto& [name, view] : io::safetensors::views_of(small)) entries[name] = view;
  io::safetensors::Metadata with_checksum = metadata;
  with_checksum[kChecksum] = checksum(entries, metadata);
  io::safetensors::save_file(path, entries, with_checksum);
}

// Loads a checkpoint into model, and into optimizer, generators and extra unless they are null
// (a model-only load: the other entries are covered by the checksum but neither checked nor loaded).
template <typename T>
std::int64_t load(const std::string& path, StateDict<T>& model, optim::Optimizer<T>* optimizer,
                  const Generators<Generator>& generators, StateDict<T>* extra) {
  const io::safetensors::File file(path);
  std::vector<std::string> problems;
  const auto tensors = views_of(file, problems);
  check_checksum(file, tensors, problems);
  const bool model_only = optimizer == nullptr;
  // Mismatches found below are reported too: with a damaged name, they say which entry was hit. Non-finite
  // model values are among them: a model, for further training or for use, must hold numbers.
  auto model_problems = io::safetensors::detail::state_dict_problems(file, model, true, kModel);
  problems.insert(problems.end(), model_problems.begin(), model_problems.end());
  if (extra) {
    auto extra_problems = io::safetensors::detail::state_dict_problems(file, *extra, true, kExtra);
    problems.insert(problems.end(), extra_problems.begin(), extra_problems.end());
  }
  check_entry(file, "step", io::safetensors::Dtype::I64, {}, problems);
  std::vector<std::string> expected_generator_entries;
  for (const auto& [key, gen] : generators) {
    check_entry(file, key + ".state", io::safetensors::Dtype::U64, {4}, problems);
    check_entry(file, key + ".has_spare_normal", io::safetensors::Dtype::BOOL, {}, problems);
    check_entry(file, key + ".spare_normal", io::safetensors::Dtype::F64, {}, problems);
    for (const char* field : kGeneratorFields) expected_generator_entries.push_back(key + field);
  }
  StateDict<T> opt_state;
  for (const auto& name : file.names()) {
    if (starts_with(name, kOptimizer)) {
      if (model_only) continue;
      if (file.dtype(name) != io::safetensors::dtype_of<T>()) {
        problems.push_back(fmt::format("\"{}\" is {}, expected {}", name, io::safetensors::dtype_name(file.dtype(name)),
                                       io::safetensors::dtype_name(io::safetensors::dtype_of<T>())));
      } else {
        opt_state[name.substr(std::string(kOptimizer).size())] = Tensor<T>(file.get<T>(name));
      }
    } else if (!model_only && !starts_with(name, kModel) && !starts_with(name, kExtra) && name != "step" &&
               std::find(expected_generator_entries.begin(), expected_generator_entries.end(), name) ==
                   expected_generator_entries.end()) {
      problems.push_back(fmt::format("unexpected \"{}\"", name));
    }
  }
  std::int64_t step = 0;
  if (problems.empty()) {
    step = file.get<std::int64_t>("step")();
    if (step < 0) problems.push_back(fmt::format("\"step\" is {}, not a step count", step));
  }
  io::safetensors::detail::throw_problems(path, "load_checkpoint", problems);

  // The optimizer checks its state before changing anything; it goes first so that a bad optimizer
  // state leaves the model untouched too.
  if (optimizer) {
    try {
      optimizer->load_state_dict(opt_state);
    } catch (const std::invalid_argument& ex) {
      throw std::runtime_error(fmt::format("{}: load_checkpoint: optimizer state: {}", path, ex.what()));
    }
  }
  io::safetensors::load_state_dict(file, model, true, kModel);
  if (extra) io::safetensors::load_state_dict(file, *extra, true, kExtra);
  for (const auto& [key, gen] : generators) {
    Generator::State g;
    const auto words = file.get<std::uint64_t>(key + ".state");
    for (std::size_t k = 0; k < 4; ++k) g.s[k] = words(k);
    g.has_spare_normal = file.get<bool>(key + ".has_spare_normal")();
    g.spare_normal = file.get<double>(key + ".spare_normal")();
    gen->set_state(g);
  }
  return step;
}

// The model's generators, then the run's own under "rng.<name>".
template <typename G, typename T>
Generators<G> named(const nn::Module<T>& model, const NamedGenerators& others = {}) {
  Generators<G> out;
  for (const auto& [name, gen] : model.named_generators()) out.emplace_back("generator." + name, gen.get());
  for (const auto& [name, gen] : others) {
    if (gen == nullptr) throw std::invalid_argument(fmt::format("checkpoint generator \"{}\" is null", name));
    out.emplace_back("rng." + name, gen);
  }
  return out;
}

}  // namespace

template <typename T>
void save_checkpoint(const std::string& path, const nn::Module<T>& model, const optim::Optimizer<T>& optimizer,
                     std::int64_t step, const io::safetensors::Metadata& metadata, const StateDict<T>& extra,
                     const NamedGenerators& generators) {
  save(path, model.state_dict(), optimizer, step, named<const Generator>(model, generators), metadata, extra);
}

template <typename T>
std::int64_t load_checkpoint(const std::string& path, nn::Module<T>& model, optim::Optimizer<T>& optimizer) {
  StateDict<T> no_extra;
  return load_checkpoint(path, model, optimizer, no_extra);
}

template <typename T>
std::int64_t load_checkpoint(const std::string& path, nn::Module<T>& model, optim::Optimizer<T>& optimizer,
                             StateDict<T>& extra, const NamedGenerators& generators) {
  StateDict<T> state = model.state_dict();  // aliases the model's tensors: loading it loads the model
  return load(path, state, &optimizer, named<Generator>(model, generators), &extra);
}

template <typename T>
std::int64_t load_checkpoint(const std::string& path, nn::Module<T>& model) {
  StateDict<T> state = model.state_dict();
  return load(path, state, static_cast<optim::Optimizer<T>*>(nullptr), {}, static_cast<StateDict<T>*>(nullptr));
}

template <typename T>
void save_checkpoint(const std::string& path, const StateDict<T>& model, const optim::Optimizer<T>& optimizer,
                     std::int64_t step, const Generator& generator, const io::safetensors::Metadata& metadata) {
  save(path, model, optimizer, step, {{"generator", &generator}}, metadata, StateDict<T>{});
}

template <typename T>
std::int64_t load_checkpoint(const std::string& path, StateDict<T>& model, optim::Optimizer<T>& optimizer,
                             Generator& generator) {
  StateDict<T> no_extra;
  return load(path, model, &optimizer, {{"generator", &generator}}, &no_extra);
}

template void save_checkpoint<float>(const std::string&, const nn::Module<float>&, const optim::Optimizer<float>&,
                                     std::int64_t, const io::safetensors::Metadata&, const StateDict<float>&,
                                     const NamedGenerators&);
template void save_checkpoint<double>(const std::string&, const nn::Module<double>&, const optim::Optimizer<double>&,
                                      std::int64_t, const io::safetensors::Metadata&, const StateDict<double>&,
                                      const NamedGenerators&);
template std::int64_t load_checkpoint<float>(const std::string&, nn::Module<float>&);
template std::int64_t load_checkpoint<double>(const std::string&, nn::Module<double>&);
template std::int64_t load_checkpoint<float>(const std::string&, nn::Module<float>&, optim::Optimizer<float>&);
template std::int64_t load_checkpoint<double>(const std::string&, nn::Module<double>&, optim::Optimizer<double>&);
template std::int64_t load_checkpoint<float>(const std::string&, nn::Module<float>&, optim::Optimizer<float>&,
                                             StateDict<float>&, const NamedGenerators&);
template std::int64_t load_checkpoint<double>(const std::string&, nn::Module<double>&, optim::Optimizer<double>&,
                                              StateDict<double>&, const NamedGenerators&);
template void save_checkpoint<float>(const std::string&, const StateDict<float>&, const optim::Optimizer<float>&,
                                     std::int64_t, const Generator&, const io::safetensors::Metadata&);
template void save_checkpoint<double>(const std::string&, const StateDict<double>&, const optim::Optimizer<double>&,
                                      std::int64_t, const Generator&, const io::safetensors::Metadata&);
template std::int64_t load_checkpoint<float>(const std::string&, StateDict<float>&, optim::Optimizer<float>&,
                                             Generator&);
template std::int64_t load_checkpoint<double>(const std::string&, StateDict<double>&, optim::Optimizer<double>&,
                                              Generator&);

}  // namespace tapegrad::train
