/// @file
/// The datasets layer: generic text pieces (tokenizer, vocabulary, encoding, batching, word
/// dropout, splits, the seed of an epoch's shuffle), readers of two datasets (IMDb's movie reviews,
/// numbers in words) (namespace tapegrad::datasets), and the tokenizers of pretrained models: GPT-2's
/// byte-level BPE and SentencePiece (namespace tapegrad::datasets::tokenizers).
#pragma once

#include "tapegrad/datasets/download.hpp"
#include "tapegrad/datasets/epoch_seed.hpp"
#include "tapegrad/datasets/imdb/imdb.hpp"
#include "tapegrad/datasets/imdb/locate.hpp"
#include "tapegrad/datasets/numbers/numbers.hpp"
#include "tapegrad/datasets/text/batching.hpp"
#include "tapegrad/datasets/text/encode.hpp"
#include "tapegrad/datasets/text/masking.hpp"
#include "tapegrad/datasets/text/next_token.hpp"
#include "tapegrad/datasets/text/random_crop.hpp"
#include "tapegrad/datasets/text/split.hpp"
#include "tapegrad/datasets/text/tokenizer.hpp"
#include "tapegrad/datasets/text/vocab.hpp"
#include "tapegrad/datasets/text/word_dropout.hpp"
#include "tapegrad/datasets/tokenizers/byte_level_bpe.hpp"
#include "tapegrad/datasets/tokenizers/sentencepiece.hpp"
