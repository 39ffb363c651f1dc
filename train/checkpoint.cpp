#include "tapegrad/train/checkpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace tapegrad::train {

namespace {

const char* const kModel = "model.";
const char* const kOptimizer = "optimizer.";
const char* const kExtra = "extra.";
const char* const kChecksum = "tapegrad.checksum";
const char* const kGeneratorFields[] = {".state", ".has_spare_normal", ".spare_normal"};

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// 64-bit FNV-1a: each step h = (h ^ byte) * prime is a bijection of h for a given byte, and a changed
// byte changes h at its step, so any single changed byte of a fixed-length input changes the hash.
class Fnv1a {
 public:
  void bytes(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 0x100000001b3ULL;
  }
  void text(const std::string& s) { bytes(s.c_str(), s.size() + 1); }  // with its '\0': unambiguous
  void u64(std::uint64_t v) { bytes(&v, sizeof v); }
  std::string hex() const { return fmt::format("{:016x}", h_); }

 private:
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

// The checksum of tensors (by name, in the map's order) and of the metadata other than the checksum.
std::string checksum(const std::map<std::string, io::safetensors::Array>& tensors,
                     const io::safetensors::Metadata& metadata) {
  Fnv1a h;
  for (const auto& [name, value] : tensors) {
    std::visit(
        [&h, &name = name](const auto& a) {
          using V = typename std::decay_t<decltype(a)>::value_type;
          h.text(name);
          h.text(io::safetensors::dtype_name(io::safetensors::dtype_of<V>()));
          h.u64(a.dimension());
          for (auto d : a.shape()) h.u64(d);
          if constexpr (std::is_same_v<V, bool>) {
            for (bool b : a) h.u64(b ? 1 : 0);  // a bool's object bytes are not guaranteed to be 0 / 1
          } else {
            h.bytes(a.data(), a.size() * sizeof(V));
          }
        },
        value);
  }
  for (const auto& [key, value] : metadata) {
    if (key == kChecksum) continue;
    h.text(key);
    h.text(value);
  }
  return h.hex();
}

// Every tensor of the file as loaded, for the checksum; a dtype a checkpoint never holds is a problem.
std::map<std::string, io::safetensors::Array> read_all(const io::safetensors::File& file,
                                                       std::vector<std::string>& problems) {
  using io::safetensors::Dtype;
  std::map<std::string, io::safetensors::Array> out;
  for (const auto& name : file.names()) {
    switch (file.dtype(name)) {
      case Dtype::F32:
        out[name] = file.get<float>(name);
        break;
      case Dtype::F64:
        out[name] = file.get<double>(name);
        break;
      case Dtype::I64:
        out[name] = file.get<std::int64_t>(name);
        break;
      case Dtype::U64:
        out[name] = file.get<std::uint64_t>(name);
        break;
      case Dtype::BOOL:
        out[name] = file.get<bool>(name);
        break;
      default:
        problems.push_back(fmt::format("\"{}\" is {}, a dtype no checkpoint holds", name,
                                       io::safetensors::dtype_name(file.dtype(name))));
    }
  }
  return out;
}

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
  std::map<std::string, io::safetensors::Array> entries;
  for (const auto& [name, tensor] : model) {
    if (!tensor.defined()) {
      throw std::invalid_argument(fmt::format("{}: model tensor \"{}\" is undefined", path, name));
    }
    entries[kModel + name] = tensor.data();
  }
  for (const auto& [name, tensor] : optimizer.state_dict()) entries[kOptimizer + name] = tensor.data();
  for (const auto& [name, tensor] : extra) {
    if (!tensor.defined()) throw std::invalid_argument(fmt::format("{}: extra tensor \"{}\" is undefined", path, name));
    entries[kExtra + name] = tensor.data();
  }
  entries["step"] = xt::xarray<std::int64_t>(step);
  for (const auto& [key, gen] : generators) {
    const Generator::State g = gen->state();
    entries[key + ".state"] = xt::xarray<std::uint64_t>({g.s[0], g.s[1], g.s[2], g.s[3]});
    entries[key + ".has_spare_normal"] = xt::xarray<bool>(g.has_spare_normal);
    entries[key + ".spare_normal"] = xt::xarray<double>(g.spare_normal);
  }
  io::safetensors::Metadata with_checksum = metadata;
  with_checksum[kChecksum] = checksum(entries, metadata);
  io::safetensors::save_file(path, entries, with_checksum);
}

template <typename T>
std::int64_t load(const std::string& path, StateDict<T>& model, optim::Optimizer<T>& optimizer,
                  const Generators<Generator>& generators, StateDict<T>& extra) {
  const io::safetensors::File file(path);
  std::vector<std::string> problems;
  const auto tensors = read_all(file, problems);
  const auto stored = file.metadata().find(kChecksum);
  if (stored == file.metadata().end()) {
    problems.push_back(
        fmt::format("no \"{}\" in the metadata: not a tapegrad checkpoint, or a damaged one", kChecksum));
  } else if (const std::string actual = checksum(tensors, file.metadata()); actual != stored->second) {
    problems.push_back(
        fmt::format("checksum mismatch (stored {}, computed {}): the file is corrupted", stored->second, actual));
  }
  // Mismatches found below are reported too: with a damaged name, they say which entry was hit.
  auto model_problems = io::safetensors::detail::state_dict_problems(file, model, true, kModel);
  problems.insert(problems.end(), model_problems.begin(), model_problems.end());
  auto extra_problems = io::safetensors::detail::state_dict_problems(file, extra, true, kExtra);
  problems.insert(problems.end(), extra_problems.begin(), extra_problems.end());
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
      if (file.dtype(name) != io::safetensors::dtype_of<T>()) {
        problems.push_back(fmt::format("\"{}\" is {}, expected {}", name, io::safetensors::dtype_name(file.dtype(name)),
                                       io::safetensors::dtype_name(io::safetensors::dtype_of<T>())));
      } else {
        opt_state[name.substr(std::string(kOptimizer).size())] = Tensor<T>(file.get<T>(name));
      }
    } else if (!starts_with(name, kModel) && !starts_with(name, kExtra) && name != "step" &&
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
  try {
    optimizer.load_state_dict(opt_state);
  } catch (const std::invalid_argument& ex) {
    throw std::runtime_error(fmt::format("{}: load_checkpoint: optimizer state: {}", path, ex.what()));
  }
  io::safetensors::load_state_dict(file, model, true, kModel);
  io::safetensors::load_state_dict(file, extra, true, kExtra);
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

template <typename G, typename T>
Generators<G> named(const nn::Module<T>& model) {
  Generators<G> out;
  for (const auto& [name, gen] : model.named_generators()) out.emplace_back("generator." + name, gen.get());
  return out;
}

}  // namespace

template <typename T>
void save_checkpoint(const std::string& path, const nn::Module<T>& model, const optim::Optimizer<T>& optimizer,
                     std::int64_t step, const io::safetensors::Metadata& metadata, const StateDict<T>& extra) {
  save(path, model.state_dict(), optimizer, step, named<const Generator>(model), metadata, extra);
}

template <typename T>
std::int64_t load_checkpoint(const std::string& path, nn::Module<T>& model, optim::Optimizer<T>& optimizer) {
  StateDict<T> no_extra;
  return load_checkpoint(path, model, optimizer, no_extra);
}

template <typename T>
std::int64_t load_checkpoint(const std::string& path, nn::Module<T>& model, optim::Optimizer<T>& optimizer,
                             StateDict<T>& extra) {
  StateDict<T> state = model.state_dict();  // aliases the model's tensors: loading it loads the model
  return load(path, state, optimizer, named<Generator>(model), extra);
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
  return load(path, model, optimizer, {{"generator", &generator}}, no_extra);
}

template void save_checkpoint<float>(const std::string&, const nn::Module<float>&, const optim::Optimizer<float>&,
                                     std::int64_t, const io::safetensors::Metadata&, const StateDict<float>&);
template void save_checkpoint<double>(const std::string&, const nn::Module<double>&, const optim::Optimizer<double>&,
                                      std::int64_t, const io::safetensors::Metadata&, const StateDict<double>&);
template std::int64_t load_checkpoint<float>(const std::string&, nn::Module<float>&, optim::Optimizer<float>&);
template std::int64_t load_checkpoint<double>(const std::string&, nn::Module<double>&, optim::Optimizer<double>&);
template std::int64_t load_checkpoint<float>(const std::string&, nn::Module<float>&, optim::Optimizer<float>&,
                                             StateDict<float>&);
template std::int64_t load_checkpoint<double>(const std::string&, nn::Module<double>&, optim::Optimizer<double>&,
                                              StateDict<double>&);
template void save_checkpoint<float>(const std::string&, const StateDict<float>&, const optim::Optimizer<float>&,
                                     std::int64_t, const Generator&, const io::safetensors::Metadata&);
template void save_checkpoint<double>(const std::string&, const StateDict<double>&, const optim::Optimizer<double>&,
                                      std::int64_t, const Generator&, const io::safetensors::Metadata&);
template std::int64_t load_checkpoint<float>(const std::string&, StateDict<float>&, optim::Optimizer<float>&,
                                             Generator&);
template std::int64_t load_checkpoint<double>(const std::string&, StateDict<double>&, optim::Optimizer<double>&,
                                              Generator&);

}  // namespace tapegrad::train
