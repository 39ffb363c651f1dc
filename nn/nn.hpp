/// @file
/// Every nn module of tapegrad (namespace tapegrad::nn), for users who want them all.
#pragma once

#include "tapegrad/io/state_dict.hpp"
#include "tapegrad/nn/activation.hpp"
#include "tapegrad/nn/attention.hpp"
#include "tapegrad/nn/container.hpp"
#include "tapegrad/nn/dropout.hpp"
#include "tapegrad/nn/embedding.hpp"
#include "tapegrad/nn/hashed_ngram_embedding.hpp"
#include "tapegrad/nn/init.hpp"
#include "tapegrad/nn/layer_norm.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/nn/lora.hpp"
#include "tapegrad/nn/lora_adapter_file.hpp"
#include "tapegrad/nn/loss.hpp"
#include "tapegrad/nn/module.hpp"
#include "tapegrad/nn/ngram_hash.hpp"
#include "tapegrad/nn/positional_encoding.hpp"
#include "tapegrad/nn/rms_norm.hpp"
#include "tapegrad/nn/transformer.hpp"
