#include "tapegrad/nn/lora_adapter_file.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "tapegrad/io/atomic_file.hpp"
#include "tapegrad/io/json.hpp"
#include "tapegrad/io/safetensors.hpp"

namespace tapegrad::nn {

namespace {

constexpr const char* kWeightsFile = "adapter_model.safetensors";
constexpr const char* kConfigFile = "adapter_config.json";
// PeftModel's prefix: the PeftModel's base_model (a LoraModel), whose model is the Hugging Face model.
constexpr const char* kPrefix = "base_model.model.";

std::string hf_name(const LoraFileOptions& options, const std::string& name) {
  return options.module_name ? options.module_name(name) : name;
}

// The file's name of a parameter "<module>.<leaf>" of the tapegrad model.
std::string file_key(const LoraFileOptions& options, const std::string& parameter) {
  const std::size_t dot = parameter.rfind('.');
  if (dot == std::string::npos) return kPrefix + parameter;
  return kPrefix + hf_name(options, parameter.substr(0, dot)) + parameter.substr(dot);
}

// The tensors of the file under their file names: the adapters' A and B and the trained biases. With
// placeholders, A and B are zeros of the shapes inject_lora would give (nothing is injected yet).
template <typename T>
StateDict<T> adapter_state(const Module<T>& module, const LoraConfig& config,
                           const std::vector<std::pair<std::string, LoraLayer<T>>>& layers,
                           const LoraFileOptions& options, bool placeholders) {
  StateDict<T> out;
  for (const auto& [name, layer] : layers) {
    const std::string key = kPrefix + hf_name(options, name);
    if (placeholders) {
      out.emplace(key + ".lora_A.weight", Tensor<T>::zeros({config.r, layer.in_features}));
      out.emplace(key + ".lora_B.weight", Tensor<T>::zeros({layer.out_features, config.r}));
    } else {
      out.emplace(key + ".lora_A.weight", layer.lora->A->weight);
      out.emplace(key + ".lora_B.weight", layer.lora->B->weight);
    }
  }
  for (const auto& [name, bias] : lora_trained_biases(module, config, options.module_name))
    out.emplace(file_key(options, name), bias);
  return out;
}

// How module's adapters differ from the ones config describes; empty when they are the same.
template <typename T>
std::vector<std::string> config_differences(const Module<T>& module, const LoraConfig& config,
                                            const LoraFileOptions& options) {
  std::vector<std::string> out;
  const auto layers = lora_layers(module);
  std::set<std::string> selected;
  try {
    for (const auto& entry : lora_targets(module, config, options.module_name)) selected.insert(entry.first);
  } catch (const std::invalid_argument& e) {
    out.push_back(e.what());
  }
  std::set<std::string> adapted;
  for (const auto& [name, layer] : layers) {
    adapted.insert(name);
    const LoraAdapter<T>& a = *layer.lora;
    if (!selected.count(name))
      out.push_back(fmt::format("\"{}\" has an adapter that target_modules does not select", name));
    if (a.r != config.r) out.push_back(fmt::format("\"{}\" has r {}, the config {}", name, a.r, config.r));
    if (a.lora_alpha != config.lora_alpha)
      out.push_back(fmt::format("\"{}\" has lora_alpha {}, the config {}", name, a.lora_alpha, config.lora_alpha));
    if (a.lora_dropout != config.lora_dropout)
      out.push_back(
          fmt::format("\"{}\" has lora_dropout {}, the config {}", name, a.lora_dropout, config.lora_dropout));
    if (a.use_rslora != config.use_rslora)
      out.push_back(fmt::format("\"{}\" has use_rslora {}, the config {}", name, a.use_rslora, config.use_rslora));
  }
  for (const auto& name : selected)
    if (!adapted.count(name))
      out.push_back(fmt::format("\"{}\" is selected by target_modules but has no adapter", name));
  return out;
}

std::string problems_text(const std::vector<std::string>& problems) {
  std::string text;
  for (const auto& p : problems) text += "\n  " + p;
  return text;
}

nlohmann::json config_json(const LoraConfig& config, const LoraFileOptions& options) {
  nlohmann::json j;
  // PEFT writes lora_alpha as an int; a fractional one stays a number PEFT reads as well.
  const bool integral_alpha = std::floor(config.lora_alpha) == config.lora_alpha && std::abs(config.lora_alpha) < 1e15;
  j["peft_type"] = "LORA";
  j["task_type"] = options.task_type;
  j["base_model_name_or_path"] =
      options.base_model_name_or_path.empty() ? nlohmann::json() : nlohmann::json(options.base_model_name_or_path);
  j["r"] = config.r;
  j["lora_alpha"] =
      integral_alpha ? nlohmann::json(static_cast<long long>(config.lora_alpha)) : nlohmann::json(config.lora_alpha);
  j["lora_dropout"] = config.lora_dropout;
  j["target_modules"] = config.target_modules;
  j["bias"] = config.bias;
  j["fan_in_fan_out"] = config.fan_in_fan_out;
  j["use_rslora"] = config.use_rslora;
  j["use_dora"] = false;
  j["init_lora_weights"] = true;
  j["inference_mode"] = true;
  j["modules_to_save"] = nullptr;
  j["layers_to_transform"] = nullptr;
  j["layers_pattern"] = nullptr;
  j["rank_pattern"] = nlohmann::json::object();
  j["alpha_pattern"] = nlohmann::json::object();
  j["revision"] = nullptr;
  return j;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot be read", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw std::runtime_error(fmt::format("{}: reading failed", path));
  return text.str();
}

// target_modules: a list of module names (PEFT's regular-expression form and its per-model defaults
// are not supported).
void read_target_modules(const nlohmann::json& j, LoraConfig& config, std::vector<std::string>& problems) {
  const auto targets = j.find("target_modules");
  if (targets == j.end() || targets->is_null()) {
    problems.push_back("target_modules is missing (PEFT's defaults by model type are not known to tapegrad)");
  } else if (targets->is_string()) {
    problems.push_back(fmt::format(
        "target_modules is the regular expression {}; tapegrad supports a list of module names", targets->dump()));
  } else if (!targets->is_array() || targets->empty()) {
    problems.push_back(fmt::format("target_modules is {}, not a non-empty list of names", targets->dump()));
  } else {
    for (const auto& t : *targets) {
      if (!t.is_string() || t.get<std::string>().empty()) {
        problems.push_back(fmt::format("target_modules holds {}, not a module name", t.dump()));
        break;
      }
      config.target_modules.push_back(t.get<std::string>());
    }
  }
}

// Settings that change what the adapters compute or where they go, which tapegrad does not do: an
// adapter using them would load and silently compute something else.
void refuse_unsupported(const nlohmann::json& j, std::vector<std::string>& problems) {
  const auto use_dora = j.find("use_dora");
  if (use_dora != j.end() && *use_dora == true)
    problems.push_back("use_dora is true; tapegrad implements LoRA, not DoRA");
  for (const char* list : {"layers_to_transform", "modules_to_save"}) {
    const auto it = j.find(list);
    if (it != j.end() && !it->is_null() && !(it->is_array() && it->empty()))
      problems.push_back(fmt::format("{} is {}; tapegrad does not support it", list, it->dump()));
  }
  for (const char* pattern : {"rank_pattern", "alpha_pattern"}) {
    const auto it = j.find(pattern);
    if (it != j.end() && !it->is_null() && !(it->is_object() && it->empty()))
      problems.push_back(
          fmt::format("{} is {}; tapegrad does not support per-module ranks or alphas", pattern, it->dump()));
  }
}

}  // namespace

LoraConfig read_lora_config(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / kConfigFile).string();
  nlohmann::json j;
  try {
    j = io::parse_json(read_text(path));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("{}: {}", path, e.what()));
  }
  if (!j.is_object()) throw std::runtime_error(fmt::format("{}: is not a JSON object", path));
  std::vector<std::string> problems;
  LoraConfig config;
  const auto peft_type = j.find("peft_type");
  if (peft_type == j.end() || *peft_type != "LORA") {
    problems.push_back(
        fmt::format("peft_type is {}, not \"LORA\"", peft_type == j.end() ? "missing" : peft_type->dump()));
  }
  const auto r = j.find("r");
  if (r == j.end() || !r->is_number_unsigned() || r->get<std::uint64_t>() == 0) {
    problems.push_back(fmt::format("r is {}, not a positive integer", r == j.end() ? "missing" : r->dump()));
  } else {
    config.r = r->get<std::size_t>();
  }
  const auto alpha = j.find("lora_alpha");
  if (alpha == j.end() || !alpha->is_number()) {
    problems.push_back(fmt::format("lora_alpha is {}, not a number", alpha == j.end() ? "missing" : alpha->dump()));
  } else {
    config.lora_alpha = alpha->get<double>();
  }
  const auto dropout = j.find("lora_dropout");
  if (dropout != j.end()) {
    if (!dropout->is_number() || !(dropout->get<double>() >= 0.0 && dropout->get<double>() < 1.0))
      problems.push_back(fmt::format("lora_dropout is {}, not a number in [0, 1)", dropout->dump()));
    else
      config.lora_dropout = dropout->get<double>();
  }
  read_target_modules(j, config, problems);
  const auto bias = j.find("bias");
  if (bias != j.end()) {
    if (!bias->is_string() || (*bias != "none" && *bias != "all" && *bias != "lora_only"))
      problems.push_back(fmt::format("bias is {}, not \"none\", \"all\" or \"lora_only\"", bias->dump()));
    else
      config.bias = bias->get<std::string>();
  }
  for (const char* flag : {"fan_in_fan_out", "use_rslora"}) {
    const auto it = j.find(flag);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_boolean()) {
      problems.push_back(fmt::format("{} is {}, not true or false", flag, it->dump()));
      continue;
    }
    (std::string(flag) == "fan_in_fan_out" ? config.fan_in_fan_out : config.use_rslora) = it->get<bool>();
  }
  refuse_unsupported(j, problems);
  if (!problems.empty())
    throw std::runtime_error(fmt::format("{}: {} problem(s):{}", path, problems.size(), problems_text(problems)));
  return config;
}

template <typename T>
void save_lora_adapter(const Module<T>& module, const LoraConfig& config, const std::string& dir,
                       const LoraFileOptions& options) {
  config.validate();
  const auto layers = lora_layers(module);
  if (layers.empty())
    throw std::invalid_argument(fmt::format("save_lora_adapter: {} has no LoRA adapter", module.name()));
  const auto differences = config_differences(module, config, options);
  if (!differences.empty()) {
    throw std::invalid_argument(fmt::format("save_lora_adapter: the config differs from {}'s adapters:{}",
                                            module.name(), problems_text(differences)));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("{}: cannot create the folder: {}", dir, ec.message()));
  const StateDict<T> state = adapter_state(module, config, layers, options, false);
  io::safetensors::save_state_dict((std::filesystem::path(dir) / kWeightsFile).string(), state, {{"format", "pt"}});
  io::write_file_atomically(std::filesystem::path(dir) / kConfigFile, config_json(config, options).dump(2) + "\n");
}

template <typename T>
LoraConfig load_lora_adapter(Module<T>& module, const std::string& dir, const LoraFileOptions& options) {
  const LoraConfig config = read_lora_config(dir);
  const std::string weights = (std::filesystem::path(dir) / kWeightsFile).string();
  const io::safetensors::File file(weights);
  const auto existing = lora_layers(module);
  std::vector<std::pair<std::string, LoraLayer<T>>> layers = existing;
  if (existing.empty()) {
    try {
      layers = lora_targets(module, config, options.module_name);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(fmt::format("{}: the config does not fit {}: {}", dir, module.name(), e.what()));
    }
  } else {
    const auto differences = config_differences(module, config, options);
    if (!differences.empty()) {
      throw std::runtime_error(
          fmt::format("{}: the config differs from {}'s adapters:{}", dir, module.name(), problems_text(differences)));
    }
    if (lora_merged(module)) {
      throw std::runtime_error(
          fmt::format("{}: {}'s adapters are merged; unmerge_lora before loading others", dir, module.name()));
    }
  }
  // Every check before anything changes: a file that does not fit leaves the module as it was.
  const StateDict<T> expected = adapter_state(module, config, layers, options, existing.empty());
  io::safetensors::detail::throw_problems(weights, "the adapter does not fit " + module.name(),
                                          io::safetensors::detail::state_dict_problems(file, expected, true, ""));
  if (existing.empty()) {
    Generator unused(0);  // A's draws are overwritten by the file's values
    inject_lora(module, config, unused, options.module_name);
    layers = lora_layers(module);
  }
  StateDict<T> target = adapter_state(module, config, layers, options, false);
  io::safetensors::load_state_dict(file, target, true);
  return config;
}

template void save_lora_adapter<float>(const Module<float>&, const LoraConfig&, const std::string&,
                                       const LoraFileOptions&);
template void save_lora_adapter<double>(const Module<double>&, const LoraConfig&, const std::string&,
                                        const LoraFileOptions&);
template LoraConfig load_lora_adapter<float>(Module<float>&, const std::string&, const LoraFileOptions&);
template LoraConfig load_lora_adapter<double>(Module<double>&, const std::string&, const LoraFileOptions&);

}  // namespace tapegrad::nn
