/// @file
/// The models layer: the Transformer classifier, the encoder-decoder Transformer with greedy and beam
/// search, and the language models (GPT and Llama with sampling and a KV cache, the masked-token encoder, bigram
/// baselines), and Hugging Face checkpoints read and written (from_pretrained, save_pretrained)
/// (namespace tapegrad::models).
#pragma once

#include "tapegrad/models/causal_lm.hpp"
#include "tapegrad/models/classifier.hpp"
#include "tapegrad/models/embedding.hpp"
#include "tapegrad/models/generate.hpp"
#include "tapegrad/models/gpt.hpp"
#include "tapegrad/models/hf_config.hpp"
#include "tapegrad/models/layer_options.hpp"
#include "tapegrad/models/llama.hpp"
#include "tapegrad/models/masked_lm.hpp"
#include "tapegrad/models/ngram.hpp"
#include "tapegrad/models/option_checks.hpp"
#include "tapegrad/models/pretrained.hpp"
#include "tapegrad/models/seq2seq_search.hpp"
#include "tapegrad/models/transformer.hpp"
