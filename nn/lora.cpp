#include "tapegrad/nn/lora.hpp"

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <stdexcept>

#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/autograd/shape_ops.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/nn/attention.hpp"

namespace tapegrad::nn {

double LoraConfig::scaling() const {
  return use_rslora ? lora_alpha / std::sqrt(static_cast<double>(r)) : lora_alpha / static_cast<double>(r);
}

void LoraConfig::validate() const {
  if (r == 0) throw std::invalid_argument("LoraConfig: r must be positive, got 0");
  if (!std::isfinite(lora_alpha)) throw std::invalid_argument(fmt::format("LoraConfig: lora_alpha is {}", lora_alpha));
  if (!(lora_dropout >= 0.0 && lora_dropout < 1.0))
    throw std::invalid_argument(fmt::format("LoraConfig: lora_dropout must be in [0, 1), got {}", lora_dropout));
  if (target_modules.empty()) throw std::invalid_argument("LoraConfig: target_modules is empty");
  for (const auto& target : target_modules)
    if (target.empty()) throw std::invalid_argument("LoraConfig: target_modules holds an empty name");
  if (bias != "none" && bias != "all" && bias != "lora_only")
    throw std::invalid_argument(
        fmt::format("LoraConfig: bias must be \"none\", \"all\" or \"lora_only\", got \"{}\"", bias));
}

template <typename T>
Tensor<T> LoraAdapter<T>::forward(const Tensor<T>& x) const {
  const Tensor<T> h = dropout ? (*dropout)(x) : x;
  return (*B)((*A)(h)) * static_cast<T>(scaling);
}

template <typename T>
Tensor<T> LoraAdapter<T>::forward(const Tensor<T>& x, std::size_t begin, std::size_t end) const {
  const std::size_t out = B->out_features;
  if (begin == 0 && end == out) return forward(x);
  if (!(begin < end && end <= out)) {
    throw std::invalid_argument(
        fmt::format("LoraAdapter.forward: output features [{}, {}) are not within the adapter's {}", begin, end, out));
  }
  const Tensor<T> h = dropout ? (*dropout)(x) : x;
  const Tensor<T> rows = narrow(B->weight, 0, static_cast<std::int64_t>(begin), static_cast<std::int64_t>(end - begin));
  return linear((*A)(h), rows) * static_cast<T>(scaling);
}

template <typename T>
xt::xarray<T> LoraAdapter<T>::delta_weight() const {
  // r is small (8 to 64): a plain loop costs little next to the product that uses the weight, and
  // its fixed order gives the same bits at every call, which unmerge_lora relies on.
  const auto& a = A->weight.data();  // [r, in]
  const auto& b = B->weight.data();  // [out, r]
  const std::size_t out = b.shape()[0], in = a.shape()[1];
  const T s = static_cast<T>(scaling);
  xt::xarray<T> delta = xt::zeros<T>({out, in});
  for (std::size_t o = 0; o < out; ++o) {
    T* row = delta.data() + o * in;
    for (std::size_t k = 0; k < r; ++k) {
      const T bk = b.data()[o * r + k];
      const T* a_row = a.data() + k * in;
      for (std::size_t i = 0; i < in; ++i) row[i] += bk * a_row[i];
    }
    for (std::size_t i = 0; i < in; ++i) row[i] *= s;
  }
  return delta;
}

namespace {

// PEFT's match of a list of target_modules: the name itself or a dotted suffix of it.
bool matches(const std::string& name, const std::string& target) {
  if (name == target) return true;
  return name.size() > target.size() && name.compare(name.size() - target.size(), target.size(), target) == 0 &&
         name[name.size() - target.size() - 1] == '.';
}

// name as target_modules sees it: under module_name's naming when there is one.
std::string seen_as(const std::string& name, const LoraModuleName& module_name) {
  return module_name ? module_name(name) : name;
}

bool selected(const std::string& name, const LoraConfig& config, const LoraModuleName& module_name) {
  const std::string seen = seen_as(name, module_name);
  for (const auto& target : config.target_modules)
    if (matches(seen, target)) return true;
  return false;
}

// The LoRA view of a module LoRA can adapt; nullopt for any other module. A MultiheadAttention with
// separate q/k/v_proj_weight (kdim or vdim other than embed_dim) has no packed projection to adapt.
template <typename T>
std::optional<LoraLayer<T>> as_lora_layer(const std::shared_ptr<Module<T>>& module) {
  LoraLayer<T> layer;
  layer.module = module;
  if (auto linear = std::dynamic_pointer_cast<Linear<T>>(module)) {
    layer.weight = linear->weight;
    layer.bias = linear->bias;
    layer.bias_name = "bias";
    layer.in_features = linear->in_features;
    layer.out_features = linear->out_features;
    layer.lora = linear->lora;
    return layer;
  }
  auto attention = std::dynamic_pointer_cast<MultiheadAttention<T>>(module);
  if (!attention || !attention->in_proj_weight.defined()) return std::nullopt;
  layer.weight = attention->in_proj_weight;
  layer.bias = attention->in_proj_bias;
  layer.bias_name = "in_proj_bias";
  layer.in_features = attention->embed_dim;
  layer.out_features = 3 * attention->embed_dim;
  layer.lora = attention->lora;
  return layer;
}

// The module's adapter slot, which forward reads.
template <typename T>
std::shared_ptr<LoraAdapter<T>>& adapter_of(Module<T>& module) {
  if (auto* linear = dynamic_cast<Linear<T>*>(&module)) return linear->lora;
  return dynamic_cast<MultiheadAttention<T>&>(module).lora;
}

// Every module under root with its dotted name, parents before children; a module registered in
// two places once, under the first name (torch's named_modules), so that a shared Linear gets one
// adapter and is merged once. A Linear's own submodules (lora_A, lora_B) are not walked into, nor an
// attention's adapter.
template <typename T>
void collect_modules(const std::string& prefix, const Module<T>& root,
                     std::vector<std::pair<std::string, std::shared_ptr<Module<T>>>>& out) {
  const auto* attention = dynamic_cast<const MultiheadAttention<T>*>(&root);
  const LoraAdapter<T>* adapter = attention ? attention->lora.get() : nullptr;
  for (const auto& [name, child] : root.named_children()) {
    if (adapter && (child == adapter->A || child == adapter->B || child == adapter->dropout)) continue;
    bool seen = false;
    for (const auto& entry : out) seen = seen || entry.second == child;
    if (seen) continue;
    const std::string path = prefix.empty() ? name : prefix + "." + name;
    out.emplace_back(path, child);
    if (!dynamic_cast<Linear<T>*>(child.get())) collect_modules(path, *child, out);
  }
}

template <typename T>
std::vector<std::pair<std::string, std::shared_ptr<Module<T>>>> all_modules(const Module<T>& root) {
  std::vector<std::pair<std::string, std::shared_ptr<Module<T>>>> out;
  collect_modules("", root, out);
  return out;
}

}  // namespace

template <typename T>
std::vector<std::pair<std::string, LoraLayer<T>>> lora_layers(const Module<T>& module) {
  std::vector<std::pair<std::string, LoraLayer<T>>> out;
  for (const auto& [name, child] : all_modules(module)) {
    auto layer = as_lora_layer(child);
    if (layer && layer->lora) out.emplace_back(name, *layer);
  }
  return out;
}

template <typename T>
std::vector<std::pair<std::string, LoraLayer<T>>> lora_targets(const Module<T>& module, const LoraConfig& config,
                                                               const LoraModuleName& module_name) {
  config.validate();
  const auto modules = all_modules(module);
  std::vector<std::pair<std::string, LoraLayer<T>>> targets;
  for (const auto& [name, child] : modules) {
    if (!selected(name, config, module_name)) continue;
    auto layer = as_lora_layer(child);
    if (!layer) {
      const bool unpacked = dynamic_cast<const MultiheadAttention<T>*>(child.get()) != nullptr;
      throw std::invalid_argument(fmt::format(
          "LoRA: target module \"{}\" is a {}{}, not a Linear; LoRA adapts Linear layers and the packed in-projection "
          "of a MultiheadAttention only",
          name, child->name(), unpacked ? " with separate q/k/v_proj_weight (kdim or vdim other than embed_dim)" : ""));
    }
    targets.emplace_back(name, *layer);
  }
  for (const auto& target : config.target_modules) {
    bool found = false;
    for (const auto& entry : targets) found = found || matches(seen_as(entry.first, module_name), target);
    if (found) continue;
    std::string adaptable;
    for (const auto& [name, child] : modules) {
      if (!as_lora_layer(child)) continue;
      if (adaptable.size() > 400) {
        adaptable += ", ...";
        break;
      }
      adaptable += (adaptable.empty() ? "" : ", ") + seen_as(name, module_name);
    }
    throw std::invalid_argument(
        fmt::format("LoRA: target module \"{}\" matches no module of {} (the layers LoRA can adapt there: {})", target,
                    module.name(), adaptable.empty() ? "none" : adaptable));
  }
  return targets;
}

template <typename T>
void inject_lora(Module<T>& module, const LoraConfig& config, Generator& gen, const LoraModuleName& module_name) {
  const auto targets = lora_targets(module, config, module_name);
  for (const auto& [name, layer] : targets)
    if (layer.lora) throw std::invalid_argument(fmt::format("inject_lora: \"{}\" already has a LoRA adapter", name));
  // Freeze first: the adapters registered below are the parameters that train.
  for (auto& p : module.parameters()) {
    p.requires_grad_(false);
    p.zero_grad();
  }
  std::shared_ptr<Generator> dropout_gen;
  if (config.lora_dropout > 0) dropout_gen = std::make_shared<Generator>(gen.next_u64());
  for (const auto& [name, layer] : targets) {
    Module<T>& host = *layer.module;
    auto adapter = std::make_shared<LoraAdapter<T>>();
    adapter->r = config.r;
    adapter->lora_alpha = config.lora_alpha;
    adapter->lora_dropout = config.lora_dropout;
    adapter->use_rslora = config.use_rslora;
    adapter->scaling = config.scaling();
    if (dropout_gen) {
      adapter->dropout =
          host.register_module("lora_dropout", std::make_shared<Dropout<T>>(config.lora_dropout, dropout_gen));
      adapter->dropout->train(host.is_training());
    }
    // PEFT: A as torch's Linear weight (kaiming_uniform_ with a = sqrt(5)), B zero.
    adapter->A = host.register_module("lora_A", std::make_shared<Linear<T>>(layer.in_features, config.r, gen, false));
    adapter->B = host.register_module("lora_B", std::make_shared<Linear<T>>(config.r, layer.out_features, gen, false));
    adapter->B->weight.mutable_data().fill(T(0));
    adapter->A->train(host.is_training());
    adapter->B->train(host.is_training());
    adapter_of(host) = adapter;
  }
  for (auto& entry : lora_trained_biases(module, config, module_name)) entry.second.requires_grad_(true);
}

template <typename T>
std::vector<std::pair<std::string, Tensor<T>>> lora_trained_biases(const Module<T>& module, const LoraConfig& config,
                                                                   const LoraModuleName& module_name) {
  std::vector<std::pair<std::string, Tensor<T>>> out;
  if (config.bias == "all") {
    for (const auto& [name, p] : module.named_parameters()) {
      if (name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0) out.emplace_back(name, p);
    }
  } else if (config.bias == "lora_only") {
    for (const auto& [name, layer] : lora_targets(module, config, module_name))
      if (layer.bias.defined()) out.emplace_back(name + "." + layer.bias_name, layer.bias);
  }
  return out;
}

template <typename T>
std::vector<Tensor<T>> trainable_parameters(const Module<T>& module) {
  std::vector<Tensor<T>> out;
  for (const auto& p : module.parameters())
    if (p.requires_grad()) out.push_back(p);
  return out;
}

template <typename T>
bool lora_merged(const Module<T>& module) {
  std::size_t merged = 0;
  const auto layers = lora_layers(module);
  for (const auto& entry : layers) merged += entry.second.lora->merged ? 1 : 0;
  if (merged != 0 && merged != layers.size()) {
    throw std::logic_error(
        fmt::format("lora_merged: {} of the {} LoRA layers of {} are merged", merged, layers.size(), module.name()));
  }
  return merged != 0;
}

template <typename T>
void merge_lora(Module<T>& module) {
  const auto layers = lora_layers(module);
  if (layers.empty()) throw std::logic_error(fmt::format("merge_lora: {} has no LoRA adapter", module.name()));
  for (const auto& [name, layer] : layers)
    if (layer.lora->merged) throw std::logic_error(fmt::format("merge_lora: \"{}\" is already merged", name));
  NoGradGuard no_grad;
  for (auto [name, layer] : layers) {
    LoraAdapter<T>& adapter = *layer.lora;
    adapter.unmerged_weight = layer.weight.data();
    layer.weight += Tensor<T>(adapter.delta_weight());
    adapter.merged = true;
  }
}

template <typename T>
void unmerge_lora(Module<T>& module) {
  const auto layers = lora_layers(module);
  if (layers.empty()) throw std::logic_error(fmt::format("unmerge_lora: {} has no LoRA adapter", module.name()));
  for (const auto& [name, layer] : layers) {
    const LoraAdapter<T>& adapter = *layer.lora;
    if (!adapter.merged) throw std::logic_error(fmt::format("unmerge_lora: \"{}\" is not merged", name));
    // The merged weight must still be what merge_lora wrote, else restoring would drop a change.
    const xt::xarray<T>& w = layer.weight.data();
    const xt::xarray<T> delta = adapter.delta_weight();
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (w.data()[i] != adapter.unmerged_weight.data()[i] + delta.data()[i]) {
        throw std::logic_error(fmt::format(
            "unmerge_lora: \"{}\": its weight or its adapter changed since merge_lora (flat element {} is {}, the "
            "merge made it {}); restoring the unmerged weight would lose that change",
            name, i, w.data()[i], adapter.unmerged_weight.data()[i] + delta.data()[i]));
      }
    }
  }
  NoGradGuard no_grad;
  for (auto [name, layer] : layers) {
    LoraAdapter<T>& adapter = *layer.lora;
    layer.weight.copy_(Tensor<T>(std::move(adapter.unmerged_weight)));
    adapter.unmerged_weight = xt::xarray<T>();
    adapter.merged = false;
  }
}

namespace {

template <typename T>
void remove_adapter(Module<T>& module) {
  std::shared_ptr<LoraAdapter<T>>& adapter = adapter_of(module);
  if (adapter->dropout) module.remove_module("lora_dropout");
  module.remove_module("lora_A");
  module.remove_module("lora_B");
  adapter = nullptr;
}

}  // namespace

template <typename T>
void merge_and_unload_lora(Module<T>& module) {
  const auto layers = lora_layers(module);
  if (layers.empty())
    throw std::logic_error(fmt::format("merge_and_unload_lora: {} has no LoRA adapter", module.name()));
  NoGradGuard no_grad;
  for (auto [name, layer] : layers) {
    if (!layer.lora->merged) layer.weight += Tensor<T>(layer.lora->delta_weight());
    remove_adapter(*layer.module);
  }
}

template <typename T>
void unload_lora(Module<T>& module) {
  const auto layers = lora_layers(module);
  if (layers.empty()) throw std::logic_error(fmt::format("unload_lora: {} has no LoRA adapter", module.name()));
  if (lora_merged(module)) unmerge_lora(module);
  for (const auto& [name, layer] : layers) remove_adapter(*layer.module);
}

#define TAPEGRAD_INSTANTIATE_LORA(T)                                                                                  \
  template struct LoraAdapter<T>;                                                                                     \
  template std::vector<std::pair<std::string, LoraLayer<T>>> lora_targets<T>(const Module<T>&, const LoraConfig&,     \
                                                                             const LoraModuleName&);                  \
  template void inject_lora<T>(Module<T>&, const LoraConfig&, Generator&, const LoraModuleName&);                     \
  template std::vector<std::pair<std::string, LoraLayer<T>>> lora_layers<T>(const Module<T>&);                        \
  template std::vector<std::pair<std::string, Tensor<T>>> lora_trained_biases<T>(const Module<T>&, const LoraConfig&, \
                                                                                 const LoraModuleName&);              \
  template std::vector<Tensor<T>> trainable_parameters<T>(const Module<T>&);                                          \
  template void merge_lora<T>(Module<T>&);                                                                            \
  template void unmerge_lora<T>(Module<T>&);                                                                          \
  template void merge_and_unload_lora<T>(Module<T>&);                                                                 \
  template void unload_lora<T>(Module<T>&);                                                                           \
  template bool lora_merged<T>(const Module<T>&);
TAPEGRAD_INSTANTIATE_LORA(float)
TAPEGRAD_INSTANTIATE_LORA(double)
#undef TAPEGRAD_INSTANTIATE_LORA

}  // namespace tapegrad::nn
