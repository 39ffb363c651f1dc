/// @file
/// Every differentiable op of tapegrad, for users who want them all.
#pragma once

#include "tapegrad/autograd/attention.hpp"
#include "tapegrad/autograd/dropout.hpp"
#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/embedding.hpp"
#include "tapegrad/autograd/indexing.hpp"
#include "tapegrad/autograd/layer_norm.hpp"
#include "tapegrad/autograd/loss.hpp"
#include "tapegrad/autograd/masking.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/autograd/normalize.hpp"
#include "tapegrad/autograd/reduce.hpp"
#include "tapegrad/autograd/rotary.hpp"
#include "tapegrad/autograd/shape_ops.hpp"
#include "tapegrad/autograd/softmax.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/autograd/tensor.hpp"
