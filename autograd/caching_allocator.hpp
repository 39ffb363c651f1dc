/// @file
/// The caching allocator behind every large buffer (tensor storage above all): freed blocks of
/// 256 KiB and more are kept in size classes and handed out again, instead of going back to the
/// system and being page-faulted in (zero-filled by the kernel) on the next training step.
///
/// It works by replacing the global operator new / delete (a program linking tapegrad gets it; the
/// C++ standard allows a program one replacement): every xt::xarray, std::vector and tensor buffer
/// is served by it without a custom allocator type in tapegrad's public types. Requests below
/// 256 KiB go to malloc unchanged. Large blocks come from malloc, page-aligned; a freed one
/// goes onto its size class's free list (classes are 4 per power of two, so at most 25% of a block's
/// address space is unused and never touched) under one lock. A request takes the cached block freed
/// last among those of its own class and of the classes up to twice its size, so that a loop whose
/// tensors change size from step to step (batches of other lengths) reuses its largest blocks rather
/// than keeping a set of blocks for every size. The free lists hold at most
/// cache_limit() bytes (default 4 GiB) and at most twice the most bytes ever live at once (at least
/// 256 MiB): a training loop frees no more than it had live and keeps every block, while blocks of
/// sizes that drift away are dropped, the classes asked for longest ago first. Beyond that, freed
/// blocks go back to malloc (free); empty_cache() returns them on demand, and they are returned at
/// exit. A request no cached block serves first returns cached blocks of other classes (those asked for
/// longest ago first) as far as needed to keep the blocks handed out plus cached within the most bytes
/// ever live at once (at least 256 MiB), so that malloc can serve the request from what they free: the
/// cache itself adds little to a program's peak footprint beyond the size classes' rounding.
///
/// Switches: the environment variable TAPEGRAD_CACHING_ALLOCATOR=0 (read once, at the first large
/// allocation) turns the cache off at run time: every request then goes straight to malloc / free,
/// which is what Valgrind or heap profilers want to see. The CMake option
/// -DTAPEGRAD_CACHING_ALLOCATOR=OFF (implied by -DTAPEGRAD_SANITIZE=ON) leaves operator new / delete
/// alone altogether, so AddressSanitizer's own operators (and its mismatch checks) stay in place.
#pragma once

#include <cstddef>

namespace tapegrad {

/// Counters of the caching allocator (all zero when it is off).
struct CacheStats {
  std::size_t cached_bytes = 0;  ///< held in the free lists now
  std::size_t live_bytes = 0;    ///< in large blocks handed out and not yet freed (class sizes)
  /// The most live_bytes since the start or the last empty_cache() (torch.cuda.max_memory_allocated).
  std::size_t peak_live_bytes = 0;
  std::size_t hits = 0;    ///< large requests served from a free list
  std::size_t misses = 0;  ///< large requests that asked the system
};

/// Whether the cache is on (TAPEGRAD_CACHING_ALLOCATOR is not "0").
bool caching_allocator_enabled();
/// Returns every cached free block to the system (torch.cuda.empty_cache's counterpart), and starts
/// the live peak that bounds the free lists afresh from the bytes live now.
void empty_cache();
/// The most bytes the free lists keep; setting it lower releases what is over it at once.
///@{
std::size_t cache_limit();
void set_cache_limit(std::size_t bytes);
///@}
/// The counters now.
CacheStats cache_stats();

}  // namespace tapegrad
