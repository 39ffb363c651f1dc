// The classifier sizes the benchmarks train (bench_tapegrad's model cases, bench_ddp, bench_zero) and
// their TransformerClassifierOptions.
#pragma once

#include <algorithm>
#include <cstddef>

#include "tapegrad/models/classifier.hpp"

namespace bench {

// B sequences of L tokens a step through a model d_model wide with `heads` heads, a feed-forward of ff
// and `layers` layers.
struct ModelConfig {
  std::size_t B, L, d, heads, ff, layers;
};
inline const ModelConfig kDefault{64, 256, 64, 4, 128, 1};
inline const ModelConfig kLarge{32, 512, 256, 4, 1024, 4};
// The default model on long sequences, the batch scaled so that tokens per step stay 64 x 256.
inline const ModelConfig kDefault1k{16, 1024, 64, 4, 128, 1};
inline const ModelConfig kDefault4k{4, 4096, 64, 4, 128, 1};
// The large model at contexts 2048 and 8192, the batch scaled so that tokens per step stay 32 x 512;
// each large case also with activation checkpointing (<case>_checkpointed: docs/memory.md).
inline const ModelConfig kLarge2k{8, 2048, 256, 4, 1024, 4};
inline const ModelConfig kLarge8k{2, 8192, 256, 4, 1024, 4};

// c's model on a 20,000-word vocabulary, with positions for max(512, L) tokens and dropout 0.1.
inline tapegrad::models::TransformerClassifierOptions classifier_options(const ModelConfig& c) {
  tapegrad::models::TransformerClassifierOptions o;
  o.vocab_size = 20000;
  o.max_len = std::max<std::size_t>(512, c.L);
  o.d_model = c.d;
  o.nhead = c.heads;
  o.dim_feedforward = c.ff;
  o.num_layers = c.layers;
  o.dropout = 0.1;
  o.attention_dropout = 0.1;
  return o;
}

}  // namespace bench
