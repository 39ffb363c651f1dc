#include "tapegrad/train/allocator.hpp"

#include <cstdlib>  // defines __GLIBC__ on glibc systems

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tapegrad::train {

void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_MAX, 0);                 // no mmap-backed chunks: large blocks come from the heap too
  mallopt(M_TRIM_THRESHOLD, 0x7fffffff);  // and the heap's free top is not returned to the system
#endif
}

}  // namespace tapegrad::train
