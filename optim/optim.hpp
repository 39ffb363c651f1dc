// Everything in torch.optim's place: the optimizers, learning-rate schedules and gradient clipping.
#pragma once

#include "optim/adam.hpp"
#include "optim/adamw.hpp"
#include "optim/clip_grad.hpp"
#include "optim/ema.hpp"
#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"
#include "optim/sgd.hpp"
