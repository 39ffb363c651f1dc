// The caching allocator (autograd/caching_allocator.hpp): large blocks are reused from their size
// class, small ones never cached, the limit and empty_cache give memory back.
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <vector>

#include "tapegrad/autograd/caching_allocator.hpp"
#include "tapegrad/autograd/tensor.hpp"

using namespace tapegrad;

TEST_CASE("caching allocator: a freed large block serves the next request of its class", "[allocator]") {
  if (!caching_allocator_enabled()) {
    CHECK(cache_stats().hits == 0);  // off (TAPEGRAD_CACHING_ALLOCATOR=0): nothing is counted
    return;
  }
  empty_cache();
  const CacheStats before = cache_stats();
  CHECK(before.cached_bytes == 0);
  const std::size_t n = (std::size_t{3} << 20) / sizeof(float);  // 3 MiB
  const float* first = nullptr;
  {
    std::vector<float> a(n, 1.0f);
    first = a.data();
    CHECK(reinterpret_cast<std::uintptr_t>(first) % 4096 == 0);
    CHECK(cache_stats().live_bytes >= before.live_bytes + n * sizeof(float));
  }
  CHECK(cache_stats().cached_bytes >= n * sizeof(float));
  {
    // A slightly smaller request of the same class gets the same block back, written as asked.
    std::vector<float> b(n - 1000, 2.0f);
    CHECK(b.data() == first);
    CHECK(b[n - 1001] == 2.0f);
    CHECK(cache_stats().hits == before.hits + 1);
  }
  {
    auto t = Tensor<float>::zeros({1024, 1024});  // tensor storage goes through it too
    CHECK(t.data()(1023, 1023) == 0.0f);
  }
  CHECK(cache_stats().cached_bytes > 0);
  empty_cache();
  CHECK(cache_stats().cached_bytes == 0);
}

namespace {
// Lets a buffer escape, so that the compiler cannot elide its allocation (clang removes a new/delete
// pair whose memory nobody reads, which C++14 allows even for a replaced operator new).
void escape(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

constexpr std::size_t MiB = std::size_t{1} << 20;

// A block of `bytes` from operator new[], escaped; nothing is written, so no page is touched.
std::unique_ptr<char[]> block(std::size_t bytes) {
  std::unique_ptr<char[]> b(new char[bytes]);
  escape(b.get());
  return b;
}
}  // namespace

TEST_CASE("caching allocator: small blocks are not cached, and the limit bounds the free lists", "[allocator]") {
  if (!caching_allocator_enabled()) return;
  empty_cache();
  const CacheStats before = cache_stats();
  {
    std::vector<char> small(1000);
    escape(small.data());
  }
  CHECK(cache_stats().cached_bytes == 0);
  CHECK(cache_stats().misses == before.misses);
  const std::size_t old_limit = cache_limit();
  set_cache_limit(std::size_t{1} << 20);  // 1 MiB: a freed 2 MiB block goes back to the system
  {
    std::vector<char> big(std::size_t{2} << 20);
    escape(big.data());
  }
  CHECK(cache_stats().cached_bytes == 0);
  {
    std::vector<char> fits(std::size_t{512} << 10);
    escape(fits.data());
  }
  CHECK(cache_stats().cached_bytes == (std::size_t{512} << 10));
  set_cache_limit(old_limit);
  empty_cache();
  // Aligned and array forms go through it too.
  auto arr = std::make_unique<double[]>(std::size_t{1} << 16);
  arr[0] = 1.0;
  struct alignas(64) Wide {
    float v[16];
  };
  std::vector<Wide> wide(std::size_t{1} << 13);
  CHECK(reinterpret_cast<std::uintptr_t>(wide.data()) % 64 == 0);
}

TEST_CASE("caching allocator: classes asked for longest ago make room, the cache stays near the live peak",
          "[allocator]") {
  if (!caching_allocator_enabled()) return;
  empty_cache();
  // Blocks of 64, 80, 96 and 112 MiB (four classes), each alone and then freed: the most ever live is
  // 112 MiB, so the free lists hold at most max(256 MiB, 2 x 112 MiB) = 256 MiB. The fourth block
  // does not fit beside the first three (240 MiB): the two asked for longest ago (64, 80) go back to the
  // system, and 96 + 112 MiB stay cached.
  for (std::size_t mib : {64, 80, 96, 112}) block(mib * MiB);  // freed at once
  CHECK(cache_stats().cached_bytes == (96 + 112) * MiB);
  const std::size_t hits = cache_stats().hits;
  block(96 * MiB);
  CHECK(cache_stats().hits == hits + 1);
  empty_cache();
}

TEST_CASE("caching allocator: a miss returns other classes' blocks, so the footprint stays within the live peak",
          "[allocator]") {
  if (!caching_allocator_enabled()) return;
  empty_cache();
  const std::size_t live = cache_stats().live_bytes;
  // Sizes that are their own size classes. 224 MiB live at most: blocks handed out plus cached may
  // reach max(256 MiB, the live peak) = 256 MiB.
  { const auto big = block(224 * MiB); }
  CHECK(cache_stats().cached_bytes == 224 * MiB);
  {
    // 96 MiB: the 224 MiB block is more than twice its size, so it is a miss, and 224 + 96 MiB would
    // pass 256 MiB: the cached block goes back to the system first.
    const auto smaller = block(96 * MiB);
    CHECK(cache_stats().cached_bytes == 0);
    CHECK(cache_stats().live_bytes == live + 96 * MiB);
    // 48 MiB more: 144 MiB stays within 256 MiB, nothing to return.
    const auto small = block(48 * MiB);
    CHECK(cache_stats().live_bytes == live + 144 * MiB);
  }
  CHECK(cache_stats().cached_bytes == 144 * MiB);
  empty_cache();
}

TEST_CASE("caching allocator: a request takes the last freed block of its class or of one up to twice its size",
          "[allocator]") {
  if (!caching_allocator_enabled()) return;
  empty_cache();
  auto three = block(3 * MiB);
  auto four = block(4 * MiB);
  const char* const three_at = three.get();
  const char* const four_at = four.get();
  three.reset();  // freed first
  four.reset();   // freed last
  const CacheStats before = cache_stats();
  CHECK(before.cached_bytes == 7 * MiB);
  {
    // 1 MiB: neither cached block is within twice its size, so it is a fresh block.
    const auto one = block(MiB);
    CHECK(one.get() != three_at);
    CHECK(one.get() != four_at);
    CHECK(cache_stats().misses == before.misses + 1);
    // 2 MiB: both are; the one freed last comes first, then the other.
    const auto first = block(2 * MiB);
    const auto second = block(2 * MiB);
    CHECK(first.get() == four_at);
    CHECK(second.get() == three_at);
    CHECK(cache_stats().hits == before.hits + 2);
    CHECK(cache_stats().live_bytes >= before.live_bytes + 8 * MiB);  // the blocks count as their own size
  }
  // Freed, each block goes back to its own class.
  CHECK(cache_stats().cached_bytes == 8 * MiB);
  auto again = block(4 * MiB);
  CHECK(again.get() == four_at);
  again.reset();
  empty_cache();
}

TEST_CASE("caching allocator: a request no system can serve throws std::bad_alloc rather than hanging", "[allocator]") {
  // Without the cache (the sanitizer build) the allocation functions are the toolchain's own.
  if (!caching_allocator_enabled()) return;
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  for (const std::size_t n : {max, max / 2 + 1, std::size_t{1} << 61}) {
    INFO("bytes " << n);
    void* p = nullptr;
    CHECK_THROWS_AS(p = ::operator new(n), std::bad_alloc);
    CHECK_THROWS_AS(p = ::operator new (n, std::align_val_t{8192}), std::bad_alloc);
    CHECK(::operator new(n, std::nothrow) == nullptr);
    escape(p);
  }
}
