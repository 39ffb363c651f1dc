// Every nn module of tapegrad (namespace tapegrad::nn), for users who want them all.
#pragma once

#include "nn/activation.hpp"
#include "nn/attention.hpp"
#include "nn/container.hpp"
#include "nn/dropout.hpp"
#include "nn/embedding.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linear.hpp"
#include "nn/module.hpp"
#include "nn/positional_encoding.hpp"
#include "nn/state_dict.hpp"
#include "nn/transformer.hpp"
