/// @file
/// Hugging Face model folders both ways: from_pretrained reads a GPT-2 (GPT2LMHeadModel) or Llama
/// (LlamaForCausalLM) checkpoint — config.json and safetensors weights — as a models::GPT or
/// models::Llama; save_pretrained writes one back in the layout transformers reads.
#pragma once

#include <memory>
#include <string>

#include "tapegrad/models/causal_lm.hpp"

namespace tapegrad::models {

/// The model of a Hugging Face folder, in eval mode (as transformers' from_pretrained returns it).
///
/// dir holds config.json (model_type "gpt2" or "llama"; its fields as models::gpt2_options and
/// models::llama_options read them) and the weights: model.safetensors, or the shards that
/// model.safetensors.index.json's weight_map names. F16, BF16, F32 and F64 tensors are converted to T.
/// GPT-2's names load with the "transformer." prefix (as save_pretrained writes them) or without it (as
/// the original GPT-2 file has them), its Conv1D weights [in, out] transposed into Linear's [out, in];
/// its attention-mask buffers (h.N.attn.bias, h.N.attn.masked_bias) and Llama's rotary_emb.inv_freq are
/// not weights and are skipped, as is lm_head.weight when the head is tied. Llama's names are
/// transformers' ("model.layers.N.self_attn.q_proj.weight", "lm_head.weight").
///
/// Throws std::runtime_error naming the folder: a missing or unreadable config.json or weights file, an
/// unknown model_type ("mistral" is not supported: gpt2, llama), an unsupported setting by its field,
/// and every weight problem together — a missing or unexpected tensor, a shape other than the config
/// implies (both named), a non-floating dtype, a NaN or infinite value.
template <typename T>
std::shared_ptr<CausalLM<T>> from_pretrained(const std::string& dir);

/// Writes model (a GPT or a Llama) into dir (created if needed) as config.json and model.safetensors
/// (F32, metadata format "pt") in transformers' layout: GPT as GPT2LMHeadModel ("transformer."-prefixed
/// names, Conv1D weights [in, out]), Llama as LlamaForCausalLM. A GPT's sinusoidal positions are written as
/// the learned table wpe that equals them; with scale_embeddings, wte holds the embedding times
/// sqrt(d_model) and the head is written untied (lm_head.weight the embedding itself), which computes the
/// same logits. from_pretrained of the folder then gives the same logits.
/// Throws std::invalid_argument for what GPT-2 cannot express (a nonzero output_bias: GPT2LMHeadModel's
/// head has no bias) or a model that is neither GPT nor Llama, std::runtime_error naming the file when
/// writing fails.
template <typename T>
void save_pretrained(const CausalLM<T>& model, const std::string& dir);

/// The name of model's module `name` (its dotted name in model) in the Hugging Face model that
/// save_pretrained writes, as PEFT's adapter files and target_modules name it (nn::LoraFileOptions):
/// a Llama's "layers.0.self_attn.q_proj" is "model.layers.0.self_attn.q_proj"; a GPT's
/// "encoder.layers.0.self_attn" (its packed in-projection) is "transformer.h.0.attn.c_attn", its
/// out_proj "transformer.h.0.attn.c_proj", linear1 "...mlp.c_fc" and linear2 "...mlp.c_proj". A module
/// without a weight of its own in the Hugging Face model (dropout, a whole block) keeps its name.
template <typename T>
std::string hugging_face_module_name(const CausalLM<T>& model, const std::string& name);

}  // namespace tapegrad::models
