/// @file
/// parallel_for: a loop split over tapegrad's worker threads (tapegrad::set_num_threads sets how many;
/// by default OMP_NUM_THREADS, else the hardware's). Each thread takes one fixed contiguous block of
/// [0, n), so results never depend on scheduling; bodies write disjoint outputs and must not throw.
/// Idle workers sleep on a condition variable rather than spin, so they never take a core from
/// BLAS's threads or from the caller's serial work (on a loaded machine, spinning pools cost more
/// than they save); but a thread that starts waiting polls for 50 microseconds first, which catches
/// the next of back-to-back parallel regions without the tens of microseconds of a wake-up.
#pragma once

#include <cstddef>
#include <functional>

namespace tapegrad::detail {

/// How many threads parallel_for may use (caller included), and setting it (at least 1).
int parallel_threads();
void set_parallel_threads(int threads);

/// Runs task(t) for t in [0, threads) at once, t = 0 on the calling thread. Serial when called from
/// inside a task, or while another thread is running one.
void run_on_threads(std::size_t threads, const std::function<void(std::size_t)>& task);

/// body(begin, end) over blocks of at least min_per_thread iterations (serial when n is smaller).
template <typename F>
void parallel_for(std::size_t n, std::size_t min_per_thread, F&& body) {
  const std::size_t most = n / (min_per_thread > 0 ? min_per_thread : 1);
  const std::size_t available = static_cast<std::size_t>(parallel_threads());
  const std::size_t threads = most < available ? most : available;
  if (threads > 1) {
    run_on_threads(threads, [&](std::size_t t) { body(n * t / threads, n * (t + 1) / threads); });
  } else if (n > 0) {
    body(std::size_t{0}, n);
  }
}

}  // namespace tapegrad::detail
