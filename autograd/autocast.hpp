/// @file
/// Mixed precision, as torch.autocast("cpu", dtype=torch.bfloat16): inside an autocast scope the
/// matrix products of float ops take bfloat16 inputs and accumulate and return float.
#pragma once

#include "tapegrad/autograd/scoped_flag.hpp"

namespace tapegrad {

/// Whether autocast is on in this thread (torch.is_autocast_cpu_enabled()).
///@{
bool is_autocast_enabled();
void set_autocast_enabled(bool enabled);
///@}

/// RAII: autocast to bfloat16 on (or, with enabled = false, off) in this thread while alive.
///
/// What it changes, following PyTorch's CPU autocast rules: the products of matmul, linear,
/// linear_activation and scaled_dot_product_attention on float tensors, forward and backward, round
/// their operands to bfloat16 and accumulate in float; their outputs stay float (torch returns
/// bfloat16 there, one more rounding). Everything else runs in float as outside the scope: softmax,
/// layer_norm and rms_norm, losses, reductions, and the optimizer, which updates the float parameters
/// (the master weights). linear saves its input for the backward as bfloat16, half the memory. An op
/// decides at its forward: its backward runs in the precision its forward ran in, inside the scope
/// or not. Double tensors are never cast. Where the CPU has no native bfloat16 (see
/// has_native_bfloat16) the products run on the float kernels on the rounded inputs: the same
/// numerics, the float kernels' speed.
///
/// @code{.cpp}
///   {
///     tapegrad::autocast guard;
///     auto loss = model.forward(x);  // products in bfloat16
///     loss.backward();               // their backward too
///   }
///   optimizer.step();                // float, as always
/// @endcode
class autocast : detail::ScopedFlag<is_autocast_enabled, set_autocast_enabled> {
 public:
  explicit autocast(bool enabled = true) : ScopedFlag(enabled) {}
};

/// Whether this CPU multiplies bfloat16 natively (AMX or AVX512-BF16) in the kernels tapegrad's
/// products run on, after any limit such as ONEDNN_MAX_CPU_ISA. Where false, autocast gives
/// bfloat16's numerics at float's speed, nothing faster.
bool has_native_bfloat16();

}  // namespace tapegrad
