#include "tapegrad/models/hf_config.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <stdexcept>

namespace tapegrad::models {

namespace {

using nlohmann::json;

[[noreturn]] void refuse(const std::string& where, const std::string& what) {
  throw std::runtime_error(fmt::format("{}: {}", where, what));
}

// A field that is absent or null counts as absent (transformers writes null for "the default").
const json* field(const json& config, const char* key) {
  const auto it = config.find(key);
  return it == config.end() || it->is_null() ? nullptr : &*it;
}

std::size_t size_field(const json& config, const char* key, std::size_t fallback, const std::string& where) {
  const json* v = field(config, key);
  if (!v) return fallback;
  if (!v->is_number_integer() || v->get<std::int64_t>() < 0) {
    refuse(where, fmt::format("{} must be a non-negative integer, got {}", key, v->dump()));
  }
  return v->get<std::size_t>();
}

double number_field(const json& config, const char* key, double fallback, const std::string& where) {
  const json* v = field(config, key);
  if (!v) return fallback;
  if (!v->is_number()) refuse(where, fmt::format("{} must be a number, got {}", key, v->dump()));
  return v->get<double>();
}

bool bool_field(const json& config, const char* key, bool fallback, const std::string& where) {
  const json* v = field(config, key);
  if (!v) return fallback;
  if (!v->is_boolean()) refuse(where, fmt::format("{} must be true or false, got {}", key, v->dump()));
  return v->get<bool>();
}

std::string string_field(const json& config, const char* key, const std::string& fallback, const std::string& where) {
  const json* v = field(config, key);
  if (!v) return fallback;
  if (!v->is_string()) refuse(where, fmt::format("{} must be a string, got {}", key, v->dump()));
  return v->get<std::string>();
}

// The RoPE variant a LlamaConfig names ("default" when none): transformers 4's rope_scaling {"type" or
// "rope_type"}, transformers 5's rope_parameters {"rope_type"}.
void check_rope_type(const json& config, const char* key, const std::string& where) {
  const json* v = field(config, key);
  if (!v) return;
  if (!v->is_object()) refuse(where, fmt::format("{} must be an object, got {}", key, v->dump()));
  for (const char* type_key : {"rope_type", "type"}) {
    const std::string type = string_field(*v, type_key, "default", where);
    if (type != "default") {
      refuse(where, fmt::format("{} type \"{}\" is not supported (only the default RoPE, without scaling)", key, type));
    }
  }
}

// A size of the options, the key config.json gives it and the Hugging Face config's default: one table
// per model serves reading (*_options) and writing (*_config), so that each key is named once.
template <typename Options>
struct SizeKey {
  const char* key;
  std::size_t Options::*field;
  std::size_t fallback;
};

const SizeKey<GPTOptions> kGpt2Sizes[] = {{"vocab_size", &GPTOptions::vocab_size, 50257},
                                          {"n_positions", &GPTOptions::max_len, 1024},
                                          {"n_embd", &GPTOptions::d_model, 768},
                                          {"n_layer", &GPTOptions::num_layers, 12},
                                          {"n_head", &GPTOptions::nhead, 12}};

const SizeKey<LlamaOptions> kLlamaSizes[] = {
    {"vocab_size", &LlamaOptions::vocab_size, 32000},    {"hidden_size", &LlamaOptions::d_model, 4096},
    {"intermediate_size", &LlamaOptions::hidden, 11008}, {"num_hidden_layers", &LlamaOptions::num_layers, 32},
    {"num_attention_heads", &LlamaOptions::nhead, 32},   {"max_position_embeddings", &LlamaOptions::max_len, 2048}};

template <typename Options, std::size_t N>
void read_sizes(const json& config, const SizeKey<Options> (&keys)[N], Options& o, const std::string& where) {
  for (const auto& k : keys) o.*k.field = size_field(config, k.key, k.fallback, where);
}

template <typename Options, std::size_t N>
void write_sizes(json& config, const SizeKey<Options> (&keys)[N], const Options& o) {
  for (const auto& k : keys) config[k.key] = o.*k.field;
}

}  // namespace

GPTOptions gpt2_options(const json& config, const std::string& where) {
  GPTOptions o;
  read_sizes(config, kGpt2Sizes, o, where);
  o.dim_feedforward = size_field(config, "n_inner", 4 * o.d_model, where);
  o.layer_norm_eps = number_field(config, "layer_norm_epsilon", 1e-5, where);
  o.dropout = number_field(config, "resid_pdrop", 0.1, where);
  o.embedding_dropout = number_field(config, "embd_pdrop", 0.1, where);
  o.attention_dropout = number_field(config, "attn_pdrop", 0.1, where);
  o.activation_dropout = 0.0;  // GPT2MLP drops after c_proj only (resid_pdrop), not between c_fc and c_proj
  o.tie_embeddings = bool_field(config, "tie_word_embeddings", true, where);
  o.positional = PositionalKind::Learned;
  o.padding_idx = std::nullopt;
  o.scale_embeddings = false;
  o.output_bias = false;
  // transformers' ACT2FN: "gelu" and "gelu_python" are the exact GELU; "gelu_new", "gelu_pytorch_tanh"
  // and "gelu_fast" (the same polynomial, factored) the tanh approximation.
  const std::string act = string_field(config, "activation_function", "gelu_new", where);
  if (act == "gelu" || act == "gelu_python") {
    o.activation = nn::Activation::GELU;
  } else if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast") {
    o.activation = nn::Activation::GELUTanh;
  } else if (act == "relu") {
    o.activation = nn::Activation::ReLU;
  } else {
    refuse(where, fmt::format("activation_function \"{}\" is not supported (gelu, gelu_new, gelu_pytorch_tanh, "
                              "gelu_fast, gelu_python, relu)",
                              act));
  }
  if (!bool_field(config, "scale_attn_weights", true, where)) {
    refuse(where, "scale_attn_weights false (attention scores not divided by sqrt(head_dim)) is not supported");
  }
  if (bool_field(config, "scale_attn_by_inverse_layer_idx", false, where)) {
    refuse(where, "scale_attn_by_inverse_layer_idx true is not supported");
  }
  if (bool_field(config, "add_cross_attention", false, where)) {
    refuse(where, "add_cross_attention true (a GPT-2 decoder with cross-attention) is not supported");
  }
  return o;
}

LlamaOptions llama_options(const json& config, const std::string& where) {
  LlamaOptions o;
  read_sizes(config, kLlamaSizes, o, where);
  o.num_kv_heads = size_field(config, "num_key_value_heads", o.nhead, where);
  o.head_dim = size_field(config, "head_dim", 0, where);
  o.rms_norm_eps = number_field(config, "rms_norm_eps", 1e-6, where);
  o.rope_base = number_field(config, "rope_theta", 10000.0, where);
  if (const json* p = field(config, "rope_parameters"); p && p->is_object()) {
    o.rope_base = number_field(*p, "rope_theta", o.rope_base, where + ": rope_parameters");
  }
  check_rope_type(config, "rope_scaling", where);
  check_rope_type(config, "rope_parameters", where);
  o.attention_bias = bool_field(config, "attention_bias", false, where);
  o.mlp_bias = bool_field(config, "mlp_bias", false, where);
  o.tie_embeddings = bool_field(config, "tie_word_embeddings", false, where);
  o.dropout = 0.0;
  if (const json* pad = field(config, "pad_token_id")) {
    if (!pad->is_number_integer()) refuse(where, fmt::format("pad_token_id must be an integer, got {}", pad->dump()));
    // transformers' embedding takes it as padding_idx; an id outside the vocabulary (some configs carry
    // one) would be refused by nn.Embedding, and means no padding row here.
    const auto id = pad->get<std::int64_t>();
    o.padding_idx =
        id >= 0 && static_cast<std::size_t>(id) < o.vocab_size ? std::optional<std::int64_t>(id) : std::nullopt;
  } else {
    o.padding_idx = std::nullopt;
  }
  const std::string act = string_field(config, "hidden_act", "silu", where);
  if (act != "silu" && act != "swish") {
    refuse(where, fmt::format("hidden_act \"{}\" is not supported (only silu, SwiGLU's)", act));
  }
  if (const double p = number_field(config, "attention_dropout", 0.0, where); p != 0.0) {
    refuse(where, fmt::format("attention_dropout {} is not supported (Llama has no dropout on attention weights)", p));
  }
  return o;
}

json gpt2_config(const GPTOptions& o, bool tie_word_embeddings) {
  const char* activation = o.activation == nn::Activation::GELU       ? "gelu"
                           : o.activation == nn::Activation::GELUTanh ? "gelu_new"
                                                                      : "relu";
  json config{{"architectures", {"GPT2LMHeadModel"}},
              {"model_type", "gpt2"},
              {"n_ctx", o.max_len},
              {"n_inner", o.dim_feedforward},
              {"activation_function", activation},
              {"layer_norm_epsilon", o.layer_norm_eps},
              {"resid_pdrop", o.dropout},
              {"embd_pdrop", o.embedding_dropout.value_or(o.dropout)},
              {"attn_pdrop", o.attention_dropout},
              {"scale_attn_weights", true},
              {"scale_attn_by_inverse_layer_idx", false},
              {"reorder_and_upcast_attn", false},
              {"initializer_range", 0.02},
              {"tie_word_embeddings", tie_word_embeddings},
              {"torch_dtype", "float32"}};
  write_sizes(config, kGpt2Sizes, o);
  return config;
}

json llama_config(const LlamaOptions& o) {
  json config{{"architectures", {"LlamaForCausalLM"}},
              {"model_type", "llama"},
              {"num_key_value_heads", o.kv_heads()},
              {"head_dim", o.head_size()},
              {"rms_norm_eps", o.rms_norm_eps},
              {"rope_theta", o.rope_base},
              {"rope_scaling", nullptr},
              {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", o.rope_base}}},
              {"hidden_act", "silu"},
              {"attention_bias", o.attention_bias},
              {"attention_dropout", 0.0},
              {"mlp_bias", o.mlp_bias},
              {"pretraining_tp", 1},
              {"tie_word_embeddings", o.tie_embeddings},
              {"pad_token_id", o.padding_idx ? json(*o.padding_idx) : json(nullptr)},
              {"initializer_range", 0.02},
              {"torch_dtype", "float32"}};
  write_sizes(config, kLlamaSizes, o);
  return config;
}

}  // namespace tapegrad::models
