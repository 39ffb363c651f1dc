#include "tapegrad/autograd/autocast.hpp"

#include "tapegrad/autograd/blas.hpp"

namespace tapegrad {

namespace {
thread_local bool autocast_enabled = false;  // per thread, as torch's autocast state
}  // namespace

bool is_autocast_enabled() { return autocast_enabled; }
void set_autocast_enabled(bool enabled) { autocast_enabled = enabled; }

bool has_native_bfloat16() { return blas::backend_info().native_bfloat16; }

}  // namespace tapegrad
