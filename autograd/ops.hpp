// Every differentiable op of tapegrad, for users who want them all.
#pragma once

#include "autograd/dropout.hpp"
#include "autograd/elementwise.hpp"
#include "autograd/embedding.hpp"
#include "autograd/fused_attention.hpp"
#include "autograd/layer_norm.hpp"
#include "autograd/loss.hpp"
#include "autograd/masking.hpp"
#include "autograd/matmul.hpp"
#include "autograd/reduce.hpp"
#include "autograd/shape_ops.hpp"
#include "autograd/softmax.hpp"
#include "autograd/tape.hpp"
#include "autograd/tensor.hpp"
