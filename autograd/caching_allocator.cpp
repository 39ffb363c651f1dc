#include "tapegrad/autograd/caching_allocator.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tapegrad {

namespace {

constexpr std::size_t kMinCached = std::size_t{256} << 10;  // below: plain malloc
// Above: never cached, so that the size classes' arithmetic cannot overflow (it looped forever on a
// request of 2^63 bytes or more); the system refuses such a request, and operator new throws.
constexpr std::size_t kMaxCached = std::size_t{1} << 60;
constexpr std::size_t kPage = 4096;
constexpr std::size_t kDefaultLimit = std::size_t{4} << 30;
// The free lists also hold at most twice the most bytes ever handed out at once (but at least this):
// a training loop frees at most what it had live, so it keeps every block, while a program whose sizes
// drift from step to step (a masked language model's varying masked rows, validation batches of
// growing lengths) no longer piles up classes it will not ask for again up to the 4 GiB limit.
constexpr std::size_t kLiveFloor = std::size_t{256} << 20;

// The cache's blocks come from malloc, page-aligned. Not mmap/munmap: a block returned to the system and
// asked for again costs its page faults anew, and a training run whose batches vary in length misses
// often enough for that to take a tenth of its time; malloc reuses what the cache gives back.
void* system_allocate(std::size_t size) { return std::aligned_alloc(kPage, size); }
void system_free(void* p, std::size_t) { std::free(p); }

// Size class of n >= kMinCached: n rounded up to a multiple of a quarter of its power of two.
std::size_t class_size(std::size_t n) {
  std::size_t p = kMinCached;
  while (p * 2 <= n) p *= 2;
  const std::size_t step = p / 4;
  return (n + step - 1) / step * step;
}

// The allocator of the cache's own containers: malloc and free, never operator new / delete, which
// would re-enter the cache (and its lock) from inside it.
template <typename T>
struct MallocAllocator {
  using value_type = T;
  MallocAllocator() = default;
  template <typename U>
  MallocAllocator(const MallocAllocator<U>&) {}
  T* allocate(std::size_t n) {
    if (void* p = std::malloc(n * sizeof(T))) return static_cast<T*>(p);
    throw std::bad_alloc();
  }
  void deallocate(T* p, std::size_t) { std::free(p); }
  template <typename U>
  bool operator==(const MallocAllocator<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const MallocAllocator<U>&) const {
    return false;
  }
};

// Blocks to give back to the system, with their sizes.
using Blocks = std::vector<std::pair<void*, std::size_t>, MallocAllocator<std::pair<void*, std::size_t>>>;

template <typename K, typename V>
using Map = std::unordered_map<K, V, std::hash<K>, std::equal_to<K>, MallocAllocator<std::pair<const K, V>>>;

// The cache's state. Built in static storage on first use and never destroyed: operator delete runs
// until the very end of the process (after every static destructor), so the state must outlive them.
class Cache {
 public:
  Cache() {
    const char* env = std::getenv("TAPEGRAD_CACHING_ALLOCATOR");
    enabled_ = !(env && std::strcmp(env, "0") == 0);
  }

  bool enabled() const { return enabled_; }

  void* allocate(std::size_t n) {
    const std::size_t size = class_size(n);
    Blocks evicted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      last_asked_[size] = ++tick_;
      // A block of its own class or of one up to twice its size, so that a training loop whose batches
      // change length (bucketing) reuses the blocks of its longest batches for shorter ones rather than
      // caching a set of blocks per length; of those, the one freed last, the likeliest still to be in
      // the processor's caches (the smallest class instead made the classifier's training steps about 2% slower).
      FreeList* best = nullptr;
      std::size_t best_size = 0;
      for (std::size_t c = size; c <= 2 * size; c = class_size(c + 1)) {
        auto it = free_.find(c);
        if (it == free_.end() || it->second.empty()) continue;
        if (!best || it->second.back().second > best->back().second) {
          best = &it->second;
          best_size = c;
        }
      }
      if (best) {
        void* p = best->back().first;
        best->pop_back();
        last_asked_[best_size] = tick_;
        cached_bytes_ -= best_size;
        live_bytes_ += best_size;
        live_peak_ = std::max(live_peak_, live_bytes_);
        ++hits_;
        return p;
      }
      // A miss. The footprint, blocks handed out plus cached, may grow up to the most bytes ever live
      // (or kLiveFloor) and no further: cached blocks of other classes, those asked for longest ago
      // first, go back to the system to make room. Otherwise a program whose phases free and ask for
      // different sizes in turn (a checkpointed training step: attention blocks, then feed-forward
      // blocks) keeps the blocks of every size beside its live peak.
      const std::size_t bound = std::max({kLiveFloor, live_peak_, live_bytes_ + size});
      if (live_bytes_ + cached_bytes_ + size > bound) evict_least_recent(bound - live_bytes_ - size, size, evicted);
    }
    for (const auto& [q, bytes] : evicted) system_free(q, bytes);
    void* p = system_allocate(size);
    if (!p) {
      release(0);  // memory is short: give the cached blocks back and try once more
      p = system_allocate(size);
      if (!p) return nullptr;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    live_.emplace(p, size);
    live_bytes_ += size;
    live_peak_ = std::max(live_peak_, live_bytes_);
    ++misses_;
    return p;
  }

  // True when p was a cached-class block (now cached or freed); false when it is not ours.
  bool deallocate(void* p) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto it = live_.find(p);
    if (it == live_.end()) return false;
    const std::size_t size = it->second;
    live_bytes_ -= size;
    const std::size_t cap = std::min(limit_, std::max(kLiveFloor, 2 * live_peak_));
    Blocks evicted;
    if (!closed_ && cached_bytes_ + size > cap && size <= cap) evict_least_recent(cap - size, size, evicted);
    const bool keep = !closed_ && cached_bytes_ + size <= cap;
    if (keep) {
      free_[size].emplace_back(p, ++frees_);
      cached_bytes_ += size;
    } else {
      live_.erase(it);
    }
    lock.unlock();
    for (const auto& [q, bytes] : evicted) system_free(q, bytes);
    if (!keep) system_free(p, size);
    return true;
  }

  // Moves cached blocks into out, the classes asked for longest ago first (never class `spare`),
  // until at most keep bytes stay cached. Called with the lock held; out is freed outside it.
  void evict_least_recent(std::size_t keep, std::size_t spare, Blocks& out) {
    std::vector<std::pair<std::uint64_t, std::size_t>, MallocAllocator<std::pair<std::uint64_t, std::size_t>>> order;
    for (const auto& [size, list] : free_)
      if (!list.empty() && size != spare) order.emplace_back(last_asked_[size], size);
    std::sort(order.begin(), order.end());
    for (const auto& [asked, size] : order) {
      auto& list = free_[size];
      while (cached_bytes_ > keep && !list.empty()) {
        out.emplace_back(list.back().first, size);
        live_.erase(list.back().first);
        list.pop_back();
        cached_bytes_ -= size;
      }
      if (cached_bytes_ <= keep) break;
    }
  }

  // Frees cached blocks until at most keep bytes stay cached.
  void release(std::size_t keep) {
    Blocks out;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& [size, list] : free_) {
        while (cached_bytes_ > keep && !list.empty()) {
          out.emplace_back(list.back().first, size);
          live_.erase(list.back().first);
          list.pop_back();
          cached_bytes_ -= size;
        }
      }
    }
    for (const auto& [p, bytes] : out) system_free(p, bytes);
  }

  // Frees every cached block and starts the live peak afresh from what is live now.
  void empty() {
    release(0);
    std::lock_guard<std::mutex> lock(mutex_);
    live_peak_ = live_bytes_;
  }

  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    release(0);
  }

  std::size_t limit() {
    std::lock_guard<std::mutex> lock(mutex_);
    return limit_;
  }
  void set_limit(std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      limit_ = bytes;
    }
    release(bytes);
  }
  CacheStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return CacheStats{cached_bytes_, live_bytes_, live_peak_, hits_, misses_};
  }

 private:
  bool enabled_ = true;
  std::mutex mutex_;
  // Every block from the system, handed out or cached, with its class size.
  Map<void*, std::size_t> live_;
  using FreeList = std::vector<std::pair<void*, std::uint64_t>, MallocAllocator<std::pair<void*, std::uint64_t>>>;
  Map<std::size_t, FreeList> free_;  // per class, its cached blocks with the frees_ count when freed
  std::uint64_t frees_ = 0;
  Map<std::size_t, std::uint64_t> last_asked_;  // per class, the tick_ of its latest request
  std::uint64_t tick_ = 0;                      // large requests so far
  std::size_t live_peak_ = 0;                   // the most live_bytes_ ever
  std::size_t cached_bytes_ = 0, live_bytes_ = 0, hits_ = 0, misses_ = 0, limit_ = kDefaultLimit;
  bool closed_ = false;
};

Cache& cache() {
  alignas(Cache) static unsigned char storage[sizeof(Cache)];
  static Cache* c = [] {
    Cache* made = new (storage) Cache;
    if (made->enabled()) std::atexit([] { cache().close(); });
    return made;
  }();
  return *c;
}

// 0: not decided yet, 1: on, 2: off. Read without the function-local static's guard on the hot path.
std::atomic<int> state{0};

bool on() {
#ifdef TAPEGRAD_NO_CACHING_ALLOCATOR
  return false;
#endif
  int s = state.load(std::memory_order_acquire);
  if (s == 0) {
    s = cache().enabled() ? 1 : 2;
    state.store(s, std::memory_order_release);
  }
  return s == 1;
}

#ifndef TAPEGRAD_NO_CACHING_ALLOCATOR
void* allocate(std::size_t n, std::size_t align) {
  if (n == 0) n = 1;
  if (n >= kMinCached && n <= kMaxCached && align <= kPage && on()) return cache().allocate(n);
  if (align <= alignof(std::max_align_t)) return std::malloc(n);
  if (n > std::numeric_limits<std::size_t>::max() - align) return nullptr;  // rounding up would wrap around
  return std::aligned_alloc(align, (n + align - 1) / align * align);
}

void deallocate(void* p) {
  if (!p) return;
  // Cached blocks are page-aligned: other pointers never need the lookup.
  if (reinterpret_cast<std::uintptr_t>(p) % kPage == 0 && state.load(std::memory_order_acquire) == 1 &&
      cache().deallocate(p))
    return;
  std::free(p);
}

void* allocate_or_throw(std::size_t n, std::size_t align) {
  for (;;) {
    if (void* p = allocate(n, align)) return p;
    std::new_handler handler = std::get_new_handler();
    if (!handler) throw std::bad_alloc();
    handler();
  }
}
#endif

}  // namespace

bool caching_allocator_enabled() { return on(); }
void empty_cache() {
  if (on()) cache().empty();
}
std::size_t cache_limit() { return on() ? cache().limit() : 0; }
void set_cache_limit(std::size_t bytes) {
  if (on()) cache().set_limit(bytes);
}
CacheStats cache_stats() { return on() ? cache().stats() : CacheStats{}; }

}  // namespace tapegrad

#ifndef TAPEGRAD_NO_CACHING_ALLOCATOR
// The replaceable global allocation functions ([new.delete]): every form routes to the two above.
void* operator new(std::size_t n) { return tapegrad::allocate_or_throw(n, alignof(std::max_align_t)); }
void* operator new[](std::size_t n) { return tapegrad::allocate_or_throw(n, alignof(std::max_align_t)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return tapegrad::allocate_or_throw(n, alignof(std::max_align_t));
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void* operator new(std::size_t n, std::align_val_t a) {
  return tapegrad::allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return tapegrad::allocate_or_throw(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return tapegrad::allocate_or_throw(n, static_cast<std::size_t>(a));
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t& t) noexcept {
  return operator new(n, a, t);
}
void operator delete(void* p) noexcept { tapegrad::deallocate(p); }
void operator delete[](void* p) noexcept { tapegrad::deallocate(p); }
void operator delete(void* p, std::size_t) noexcept { tapegrad::deallocate(p); }
void operator delete[](void* p, std::size_t) noexcept { tapegrad::deallocate(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { tapegrad::deallocate(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { tapegrad::deallocate(p); }
void operator delete(void* p, std::align_val_t) noexcept { tapegrad::deallocate(p); }
void operator delete[](void* p, std::align_val_t) noexcept { tapegrad::deallocate(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { tapegrad::deallocate(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { tapegrad::deallocate(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { tapegrad::deallocate(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { tapegrad::deallocate(p); }
#endif  // TAPEGRAD_NO_CACHING_ALLOCATOR
