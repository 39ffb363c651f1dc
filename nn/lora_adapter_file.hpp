/// @file
/// LoRA adapters saved and loaded alone, as PEFT's `model.save_pretrained(dir)` and
/// `PeftModel.from_pretrained(model, dir)` do: a folder holding adapter_model.safetensors and
/// adapter_config.json, so adapters move between tapegrad and the Python ecosystem.
///
/// adapter_model.safetensors names each tensor `base_model.model.<module>.lora_A.weight` and
/// `...lora_B.weight` (plus `...bias` for the biases LoraConfig::bias trains), where `<module>` is the
/// adapted layer's name in the Hugging Face model. A tapegrad model whose names differ from Hugging
/// Face's maps them with `module_name` (models::hugging_face_module_name): models::Llama lacks the
/// leading "model." of LlamaForCausalLM; models::GPT's encoder.layers.N.self_attn (its in-projection)
/// is GPT2LMHeadModel's transformer.h.N.attn.c_attn. adapter_config.json's target_modules are then
/// matched against those names, as PEFT matches them in the Hugging Face model ("c_attn", "c_proj").
#pragma once

#include <functional>
#include <string>

#include "tapegrad/nn/lora.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

/// What adapter_config.json records besides LoraConfig, and how module names are written.
struct LoraFileOptions {
  std::string base_model_name_or_path;  ///< the base model's folder or Hub name, "" if none
  std::string task_type = "CAUSAL_LM";  ///< PEFT's TaskType
  /// A tapegrad module name to the module's name in the Hugging Face model, under which tensors are
  /// named and target_modules match; identity when empty.
  LoraModuleName module_name;
};

/// Writes dir/adapter_model.safetensors (F32 for float, F64 for double, metadata {"format": "pt"}) and
/// dir/adapter_config.json (peft_type "LORA" and config's fields), creating dir. Throws
/// std::invalid_argument if module's adapters are not exactly the ones config describes (a layer
/// config selects, by options.module_name, without an adapter or the reverse, another r, lora_alpha, lora_dropout or
/// use_rslora), naming each difference, and std::runtime_error naming the path if writing fails.
template <typename T>
void save_lora_adapter(const Module<T>& module, const LoraConfig& config, const std::string& dir,
                       const LoraFileOptions& options = {});

/// Reads dir/adapter_config.json and dir/adapter_model.safetensors into module and returns the config.
/// A module without adapters gets them first, as inject_lora(module, config) makes them; a module that
/// has some must have exactly those the file's config describes. Throws std::runtime_error naming the
/// file and every problem, changing nothing: an unreadable or malformed file, a peft_type other than
/// "LORA", a setting tapegrad does not implement (use_dora, a regular expression for target_modules,
/// layers_to_transform, rank_pattern, alpha_pattern, modules_to_save), a config that differs from the
/// module's adapters, merged adapters, missing or unexpected tensors, and tensors whose shape differs
/// from the module's.
template <typename T>
LoraConfig load_lora_adapter(Module<T>& module, const std::string& dir, const LoraFileOptions& options = {});

/// The config of an adapter folder's adapter_config.json, checked as load_lora_adapter checks it.
LoraConfig read_lora_config(const std::string& dir);

}  // namespace tapegrad::nn
