/// @file
/// The layer options a token model's own options give its nn::Transformer{Encoder,Decoder} stacks.
#pragma once

#include "tapegrad/nn/transformer.hpp"

namespace tapegrad::models {

/// Batch-first layers of o's d_model, nhead, dim_feedforward, dropout and activation; the model sets
/// what else it has (attention_dropout, layer_norm_eps, norm_first) on the result.
template <typename Options>
nn::TransformerLayerOptions batch_first_layer(const Options& o) {
  nn::TransformerLayerOptions layer(o.d_model, o.nhead);
  layer.dim_feedforward = o.dim_feedforward;
  layer.dropout = o.dropout;
  layer.activation = o.activation;
  layer.batch_first = true;
  return layer;
}

}  // namespace tapegrad::models
