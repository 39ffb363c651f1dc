/// @file
/// The pieces DistributedDataParallel and ShardedGradients share to reduce gradients in buckets while
/// backward runs (the bucketing part of torch's Reducer): a hook per parameter, the MPI requests of the
/// buckets in flight, and no_sync().
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "tapegrad/autograd/tensor.hpp"
#include "tapegrad/distributed/communicator.hpp"

namespace tapegrad::distributed {

/// While a NoSync lives, backward passes only accumulate gradients locally (torch's no_sync()): it
/// clears the reducer's sync_enabled_ and restores it when it goes. Reducer declares it a friend.
template <typename Reducer>
class NoSync {
 public:
  explicit NoSync(Reducer& reducer) : reducer_(reducer), previous_(reducer.sync_enabled_) {
    reducer.sync_enabled_ = false;
  }
  ~NoSync() { reducer_.sync_enabled_ = previous_; }
  NoSync(const NoSync&) = delete;
  NoSync& operator=(const NoSync&) = delete;

 private:
  Reducer& reducer_;
  bool previous_;
};

/// Hooks on_ready(i) to run when backward has accumulated slots[i].param's gradient, for every slot.
template <typename Slots, typename OnReady>
std::vector<RemovableHandle> hook_gradients(Slots& slots, OnReady on_ready) {
  std::vector<RemovableHandle> hooks;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    hooks.push_back(slots[i].param.register_post_accumulate_grad_hook([on_ready, i](auto&) { on_ready(i); }));
  }
  return hooks;
}

/// Tests the requests of buckets[first, last). Open MPI advances a non-blocking collective only inside
/// MPI calls: testing from the hooks lets the reductions move forward while backward computes.
template <typename Buckets>
void drive_progress(Buckets& buckets, std::size_t first, std::size_t last) {
  for (std::size_t b = first; b < last; ++b) {
    if (buckets[b].request == MPI_REQUEST_NULL) continue;
    int done = 0;
    check_mpi(MPI_Test(&buckets[b].request, &done, MPI_STATUS_IGNORE), "MPI_Test");
  }
}

/// What a reducer does before its buffers go: removes its hooks, then waits for the reductions still
/// in flight, which read or write the buffers and gradients. Never throws (it runs in destructors).
template <typename Buckets>
void stop_reducing(std::vector<RemovableHandle>& hooks, Buckets& buckets) noexcept {
  for (auto& h : hooks) h.remove();
  for (auto& b : buckets)
    if (b.request != MPI_REQUEST_NULL) MPI_Wait(&b.request, MPI_STATUS_IGNORE);
}

}  // namespace tapegrad::distributed
