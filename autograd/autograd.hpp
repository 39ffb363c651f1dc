/// @file
/// The autograd layer: Tensor, the tape, every differentiable op, gradcheck and the helpers for
/// writing ops of your own.
#pragma once

#include "tapegrad/autograd/broadcast.hpp"
#include "tapegrad/autograd/checkpoint.hpp"
#include "tapegrad/autograd/elementwise_kernels.hpp"
#include "tapegrad/autograd/factories.hpp"
#include "tapegrad/autograd/gradcheck.hpp"
#include "tapegrad/autograd/jacobian.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/autograd/parallel.hpp"
