// The models' options from a program's flags where the programs name them alike: --d-model, --heads,
// --layers, --ff, --dropout, --attn-dropout, --activation and --pos (fields of the same names in each
// program's Config), the vocabulary's padding id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tapegrad/datasets/text/vocab.hpp"
#include "tapegrad/models/embedding.hpp"
#include "tapegrad/nn/activation.hpp"

namespace examples {

/// vocab_size, max_len, d_model, nhead, num_layers, dropout and padding_idx: what every model takes.
template <typename Options, typename Config>
Options model_sizes(const Config& c, std::size_t vocab_size, std::int64_t max_len) {
  Options o;
  o.vocab_size = vocab_size;
  o.max_len = static_cast<std::size_t>(max_len);
  o.d_model = static_cast<std::size_t>(c.d_model);
  o.nhead = static_cast<std::size_t>(c.heads);
  o.num_layers = static_cast<std::size_t>(c.layers);
  o.dropout = c.dropout;
  o.padding_idx = tapegrad::datasets::Vocabulary::pad_id;
  return o;
}

/// model_sizes and what a GPT or a Transformer encoder takes besides: dim_feedforward,
/// attention_dropout, the activation ("relu" | "gelu") and the positions ("learned" | "sinusoidal"),
/// the names the programs' validation has checked.
template <typename Options, typename Config>
Options transformer_options(const Config& c, std::size_t vocab_size, std::int64_t max_len) {
  Options o = model_sizes<Options>(c, vocab_size, max_len);
  o.dim_feedforward = static_cast<std::size_t>(c.ff);
  o.attention_dropout = c.attn_dropout;
  o.activation = c.activation == "relu" ? tapegrad::nn::Activation::ReLU : tapegrad::nn::Activation::GELU;
  o.positional =
      c.pos == "learned" ? tapegrad::models::PositionalKind::Learned : tapegrad::models::PositionalKind::Sinusoidal;
  return o;
}

}  // namespace examples
