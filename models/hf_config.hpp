/// @file
/// Hugging Face's config.json for the causal language models it shares with tapegrad: a GPT2Config
/// (model_type "gpt2") as GPTOptions, a LlamaConfig (model_type "llama") as LlamaOptions, and back.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tapegrad/models/gpt.hpp"
#include "tapegrad/models/llama.hpp"

namespace tapegrad::models {

/// The options of a GPT2Config: every field that changes the computation is honoured (n_embd, n_layer,
/// n_head, n_inner, n_positions, vocab_size, layer_norm_epsilon, activation_function, the dropouts,
/// tie_word_embeddings), with GPT2Config's defaults for absent ones; embeddings unscaled, no output bias,
/// no padding row, no dropout inside the feed-forward. A setting tapegrad does not compute (an activation such as
/// "quick_gelu", scale_attn_by_inverse_layer_idx, add_cross_attention, scale_attn_weights false) throws
/// std::runtime_error "<where>: <field> ... is not supported" naming the field and its value, as does a
/// field of the wrong JSON type.
GPTOptions gpt2_options(const nlohmann::json& config, const std::string& where);

/// The options of a LlamaConfig: hidden_size, intermediate_size, num_hidden_layers,
/// num_attention_heads, num_key_value_heads, head_dim, max_position_embeddings, vocab_size,
/// rms_norm_eps, rope_theta (top level, or in rope_parameters as transformers 5 writes it),
/// attention_bias, mlp_bias, tie_word_embeddings, pad_token_id, with LlamaConfig's defaults. Refused by
/// name as gpt2_options does: a RoPE scaling type other than "default" (rope_scaling or
/// rope_parameters), a hidden_act other than "silu", a nonzero attention_dropout.
LlamaOptions llama_options(const nlohmann::json& config, const std::string& where);

/// The GPT2Config (model_type "gpt2", architectures ["GPT2LMHeadModel"]) of options. tie_word_embeddings
/// is given by the caller: a GPT with scaled embeddings is written untied (see save_pretrained). The
/// activations map to "gelu" (exact), "gelu_new" (tanh) and "relu".
nlohmann::json gpt2_config(const GPTOptions& options, bool tie_word_embeddings);

/// The LlamaConfig (model_type "llama", architectures ["LlamaForCausalLM"]) of options, with rope_theta
/// both at the top level (transformers 4) and in rope_parameters (transformers 5).
nlohmann::json llama_config(const LlamaOptions& options);

}  // namespace tapegrad::models
