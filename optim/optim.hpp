/// @file
/// Everything in torch.optim's place: the optimizers, learning-rate schedules and gradient clipping.
#pragma once

#include "tapegrad/optim/adagrad.hpp"
#include "tapegrad/optim/adam.hpp"
#include "tapegrad/optim/adamw.hpp"
#include "tapegrad/optim/clip_grad.hpp"
#include "tapegrad/optim/ema.hpp"
#include "tapegrad/optim/optimizer.hpp"
#include "tapegrad/optim/rmsprop.hpp"
#include "tapegrad/optim/schedule.hpp"
#include "tapegrad/optim/sgd.hpp"
