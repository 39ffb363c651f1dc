/// @file
/// How train_imdb's process allocates: freed tensor memory is kept for reuse instead of being given
/// back to the system and faulted in again on the next step.
#pragma once

namespace tapegrad::train {

/// With glibc's defaults every tensor above the mmap threshold (the [B, heads, L, L] attention tensors
/// are hundreds of MB) is a fresh mmap whose pages the kernel zero-fills on first touch, and munmap
/// returns them at once; that cost a third of the CPU time of a training step (measured: 0.83 s ->
/// 0.58 s of CPU per default step). Serving them from the heap and never trimming it reuses the pages.
/// Peak memory is unchanged; the process just keeps it. Does nothing without glibc.
void keep_freed_memory();

}  // namespace tapegrad::train
