/// @file
/// The whole public API of tapegrad in one include: the autograd engine and its ops, gradcheck,
/// io (state dicts, safetensors), nn, optim, train, models and datasets.
#pragma once

#include "tapegrad/autograd/autograd.hpp"
#include "tapegrad/datasets/datasets.hpp"
#include "tapegrad/io/io.hpp"
#include "tapegrad/models/models.hpp"
#include "tapegrad/nn/nn.hpp"
#include "tapegrad/optim/optim.hpp"
#include "tapegrad/train/train.hpp"
