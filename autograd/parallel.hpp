// parallel_for: a loop split over the OpenMP threads (tapegrad::set_num_threads sets how many). Each
// thread takes one fixed contiguous block of [0, n), so results never depend on scheduling; bodies
// write disjoint outputs and must not throw.
#pragma once

#include <algorithm>
#include <cstddef>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace tapegrad::detail {

// body(begin, end) over blocks of at least min_per_thread iterations (serial when n is smaller, or
// when already inside a parallel region).
template <typename F>
void parallel_for(std::size_t n, std::size_t min_per_thread, F&& body) {
#ifdef _OPENMP
  const std::size_t available = omp_in_parallel() ? 1 : static_cast<std::size_t>(omp_get_max_threads());
  const std::size_t threads = std::min(available, n / std::max<std::size_t>(min_per_thread, 1));
  if (threads > 1) {
#pragma omp parallel num_threads(static_cast <int>(threads))
    {
      const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
      const std::size_t nt = static_cast<std::size_t>(omp_get_num_threads());
      body(n * t / nt, n * (t + 1) / nt);
    }
    return;
  }
#endif
  if (n > 0) body(std::size_t{0}, n);
}

// How many threads parallel_for may use.
inline int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

}  // namespace tapegrad::detail
