/// @file
/// The models layer: the Transformer classifier and the encoder-decoder Transformer with greedy and
/// beam search (namespace tapegrad::models).
#pragma once

#include "tapegrad/models/classifier.hpp"
#include "tapegrad/models/seq2seq_search.hpp"
#include "tapegrad/models/transformer.hpp"
