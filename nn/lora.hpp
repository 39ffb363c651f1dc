/// @file
/// LoRA (Hu et al. 2021, "Low-Rank Adaptation of Large Language Models"): trainable low-rank adapters
/// added to chosen nn::Linear layers (and nn::MultiheadAttention in-projections) of a frozen model, with
/// the names, initialization and arithmetic of Hugging Face's PEFT (peft.LoraConfig, get_peft_model,
/// merge_adapter / unmerge_adapter).
///
/// @code{.cpp}
///   nn::LoraConfig config;
///   config.r = 8;
///   config.lora_alpha = 16;
///   config.target_modules = {"q_proj", "v_proj"};
///   nn::inject_lora(*model, config, gen);  // the base is frozen, the adapters train
///   optim::AdamW<float> opt(nn::trainable_parameters(*model), adamw);
/// @endcode
///
/// An adapted Linear computes y = x W^T + b + scaling * B(A(dropout(x))), with A [r, in] and B [out, r]
/// registered in it as the submodules lora_A and lora_B, so that state_dict() names them
/// `...q_proj.lora_A.weight` as PEFT saves them. nn/lora_adapter_file.hpp saves and loads them alone.
///
/// A target that is an nn::MultiheadAttention adapts its packed in-projection (query, key and value in
/// one in_proj_weight [3E, E]) as PEFT's lora.MultiheadAttention does, with A [r, E] and B [3E, r]
/// registered in the attention as lora_A and lora_B (`...self_attn.lora_A.weight`): the projection
/// stays one GEMM plus the adapter's two thin ones. Unlike PEFT's, it leaves out_proj alone, which is
/// an nn::Linear of its own here that a target "out_proj" adapts: so GPT-2's c_attn, a Conv1D holding
/// the in-projection only, is exactly this adapter.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/nn/dropout.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::nn {

/// peft.LoraConfig's fields that shape the adapters, under PEFT's names and with its defaults.
struct LoraConfig {
  std::size_t r = 8;          ///< the rank of every adapter
  double lora_alpha = 8.0;    ///< scaling = lora_alpha / r (lora_alpha / sqrt(r) with use_rslora)
  double lora_dropout = 0.0;  ///< on the adapter's input only, in training
  /// Which layers get an adapter, as PEFT matches a list: a module whose dotted name equals an entry or
  /// ends with "." followed by it ("q_proj" matches "layers.0.self_attn.q_proj").
  std::vector<std::string> target_modules;
  /// Which biases train with the adapters: "none", "all" (every bias of the model) or "lora_only"
  /// (those of the adapted layers). Trained biases are saved with the adapters, as PEFT saves them.
  std::string bias = "none";
  /// Whether the base weights are stored [in, out] in the saved model (GPT-2's Conv1D). tapegrad's
  /// Linear (and in_proj_weight) always holds [out, in], and A and B have the same layout either way; the flag is
  /// written to adapter_config.json so that PEFT merges into the Hugging Face model correctly.
  bool fan_in_fan_out = false;
  bool use_rslora = false;  ///< rank-stabilized scaling (Kalajdzievski 2023)

  /// lora_alpha / r, or lora_alpha / sqrt(r) with use_rslora.
  double scaling() const;
  /// Throws std::invalid_argument naming the first bad field and its value: r = 0, lora_alpha not
  /// finite, lora_dropout outside [0, 1), no target_modules or an empty one, an unknown bias.
  void validate() const;
};

/// The adapter an nn::Linear (or an nn::MultiheadAttention's in-projection) holds once inject_lora
/// reaches it. A and B are the layer's registered submodules lora_A and lora_B, dropout its
/// lora_dropout (null when lora_dropout is 0, where PEFT has an Identity).
template <typename T>
struct LoraAdapter {
  std::shared_ptr<Linear<T>> A;  ///< weight [r, in], torch's Linear init (kaiming_uniform_, a = sqrt(5))
  std::shared_ptr<Linear<T>> B;  ///< weight [out, r], zeros: the adapted model starts as the base
  std::shared_ptr<Dropout<T>> dropout;
  std::size_t r = 0;
  double lora_alpha = 0.0;
  double lora_dropout = 0.0;
  bool use_rslora = false;
  double scaling = 0.0;
  /// While merged the base weight holds W + scaling * B A and forward adds nothing more.
  bool merged = false;
  /// The base weight as it was before merging (held while merged), so that unmerging restores it
  /// bit for bit instead of subtracting the product again, which would round.
  xt::xarray<T> unmerged_weight;

  /// scaling * B(A(dropout(x))): what the adapter adds to the base's output.
  Tensor<T> forward(const Tensor<T>& x) const;
  /// The output features [begin, end) of forward(x) alone (B's rows begin..end - 1), for a layer that
  /// projects its input by part of its weight (MultiheadAttention's query apart from key and value).
  Tensor<T> forward(const Tensor<T>& x, std::size_t begin, std::size_t end) const;
  /// scaling * B A [out, in], computed in a fixed order (the same bits at every call).
  xt::xarray<T> delta_weight() const;
};

/// A layer LoRA adapts, as lora_targets and lora_layers list it: an nn::Linear (its weight) or an
/// nn::MultiheadAttention (its packed in_proj_weight), with what merging and saving need of it.
template <typename T>
struct LoraLayer {
  std::shared_ptr<Module<T>> module;  ///< the Linear or the MultiheadAttention
  Tensor<T> weight;                   ///< the adapted weight [out_features, in_features] (the module's own)
  Tensor<T> bias;                     ///< its bias [out_features]; undefined when the layer has none
  std::string bias_name;              ///< the bias's name in module: "bias" or "in_proj_bias"
  std::size_t in_features = 0, out_features = 0;
  std::shared_ptr<LoraAdapter<T>> lora;  ///< the module's adapter; null before inject_lora
};

/// A module's dotted name as target_modules is matched against it; the identity when empty. A model
/// whose modules Hugging Face names otherwise (models::hugging_face_module_name) passes that naming, so
/// that PEFT's target_modules ("c_attn") select what they select in the Hugging Face model.
using LoraModuleName = std::function<std::string(const std::string&)>;

/// The layers of module that config.target_modules selects, with their dotted names, in the order of
/// the module tree (PEFT's inspect_matched_modules); a module is matched under module_name(its name).
/// Throws std::invalid_argument for a config validate() refuses, an entry of target_modules that
/// matches no module (naming it and the layers LoRA can adapt there), or a match that is neither an nn::Linear
/// nor an nn::MultiheadAttention with a packed in_proj_weight.
template <typename T>
std::vector<std::pair<std::string, LoraLayer<T>>> lora_targets(const Module<T>& module, const LoraConfig& config,
                                                               const LoraModuleName& module_name = {});

/// Adds an adapter to every layer of module that config.target_modules selects (lora_targets), drawing
/// each A from gen in the order of the module tree, and freezes everything else: every other parameter
/// stops requiring grad and loses its gradient (so no optimizer step changes it or keeps state for
/// it), except the biases config.bias names. Dropout masks come from one generator seeded from gen and
/// shared by the adapters (listed by named_generators()). Throws std::invalid_argument, before
/// changing anything, as lora_targets does, and for a target that already has an adapter.
template <typename T>
void inject_lora(Module<T>& module, const LoraConfig& config, Generator& gen, const LoraModuleName& module_name = {});

/// The dotted names and adapters of every adapted layer of module, in the order of the module tree.
template <typename T>
std::vector<std::pair<std::string, LoraLayer<T>>> lora_layers(const Module<T>& module);

/// The biases config.bias trains, under their names in module: none ("none"), every parameter whose
/// name ends in "bias" ("all": bias, in_proj_bias, ..., as PEFT trains every one named so), or the
/// biases of the layers config selects ("lora_only"). Throws as lora_targets.
template <typename T>
std::vector<std::pair<std::string, Tensor<T>>> lora_trained_biases(const Module<T>& module, const LoraConfig& config,
                                                                   const LoraModuleName& module_name = {});

/// The parameters that require grad, in named_parameters() order: what an optimizer of a LoRA model
/// is given (torch's `[p for p in model.parameters() if p.requires_grad]`).
template <typename T>
std::vector<Tensor<T>> trainable_parameters(const Module<T>& module);

/// PEFT's merge_adapter: W += scaling * B A in every adapted layer of module, after which forward
/// costs what the base's does. Each adapted weight's unmerged values are kept while merged (one copy
/// of those weights; merge_and_unload_lora keeps none). Throws std::logic_error, changing nothing, if
/// module has no adapter or one is merged already.
template <typename T>
void merge_lora(Module<T>& module);

/// PEFT's unmerge_adapter, exact: every adapted layer gets back the weight it had before merge_lora,
/// bit for bit. Throws std::logic_error, changing nothing, if module has no adapter, one is not
/// merged, or a merged weight (or its A or B) has changed since merge_lora, naming the layer: restoring
/// the old weight would lose that change.
template <typename T>
void unmerge_lora(Module<T>& module);

/// PEFT's merge_and_unload: merges every adapter that is not merged yet (keeping no copy of the old
/// weights) and removes the adapters, leaving plain layers whose state_dict is the base model's, to
/// be saved or served as such. The parameters keep their requires_grad (the base stays frozen). Throws
/// std::logic_error if module has no adapter.
template <typename T>
void merge_and_unload_lora(Module<T>& module);

/// PEFT's unload: removes every adapter without merging it (a merged one is unmerged first, exactly,
/// as unmerge_lora does), giving back the base model. Throws std::logic_error if module has no adapter
/// or unmerge_lora would refuse.
template <typename T>
void unload_lora(Module<T>& module);

/// Whether module's adapters are merged into their base weights (false without adapters). Throws
/// std::logic_error if some are and some are not.
template <typename T>
bool lora_merged(const Module<T>& module);

}  // namespace tapegrad::nn
