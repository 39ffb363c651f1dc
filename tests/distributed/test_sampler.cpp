// The distributed sampler and shard(): disjoint, equal parts that together are the epoch's order.
// (No MPI call: these run in tapegrad_tests; the MPI parts run under mpirun in ddp_check.)
#include <catch2/catch.hpp>
#include <numeric>
#include <set>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/distributed/sampler.hpp"

using tapegrad::distributed::DistributedSampler;
using tapegrad::distributed::shard;

TEST_CASE("shard: strided equal parts, padding repeats the start, drop_last drops the tail", "[distributed]") {
  const std::vector<std::size_t> order{10, 11, 12, 13, 14, 15, 16};
  CHECK(shard(order, 3, 0) == std::vector<std::size_t>{10, 13, 16});
  CHECK(shard(order, 3, 1) == std::vector<std::size_t>{11, 14, 10});  // padded with the first element
  CHECK(shard(order, 3, 2) == std::vector<std::size_t>{12, 15, 11});
  CHECK(shard(order, 3, 0, /*drop_last=*/true) == std::vector<std::size_t>{10, 13});
  CHECK(shard(order, 3, 2, /*drop_last=*/true) == std::vector<std::size_t>{12, 15});
  CHECK(shard(order, 1, 0) == order);
  CHECK_THROWS_WITH(shard(order, 2, 2), Catch::Contains("rank 2 is not in [0, 2)"));
  CHECK_THROWS_WITH(shard(order, 2, -1), Catch::Contains("rank -1"));
}

TEST_CASE("DistributedSampler: the ranks' parts are disjoint, cover the epoch and change with it", "[distributed]") {
  const std::size_t n = 103, ranks = 4;
  std::vector<std::size_t> epoch0_rank0;
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    std::multiset<std::size_t> seen;
    for (int r = 0; r < int(ranks); ++r) {
      DistributedSampler s(n, int(ranks), r, /*shuffle=*/true, /*seed=*/5, /*drop_last=*/true);
      s.set_epoch(epoch);
      const auto mine = s.indices();
      CHECK(mine.size() == n / ranks);
      CHECK(s.num_samples() == n / ranks);
      seen.insert(mine.begin(), mine.end());
      if (epoch == 0 && r == 0) epoch0_rank0 = mine;
      if (epoch == 1 && r == 0) CHECK(mine != epoch0_rank0);
    }
    CHECK(seen.size() == n / ranks * ranks);
    CHECK(std::set<std::size_t>(seen.begin(), seen.end()).size() == seen.size());  // disjoint
  }
  // Padded: every example at least once, (4 - 103 % 4) = 1 twice.
  std::multiset<std::size_t> padded;
  for (int r = 0; r < int(ranks); ++r) {
    const auto mine = DistributedSampler(n, int(ranks), r, true, 5).indices();
    CHECK(mine.size() == 26);
    padded.insert(mine.begin(), mine.end());
  }
  CHECK(padded.size() == 104);
  CHECK(std::set<std::size_t>(padded.begin(), padded.end()).size() == n);
}

TEST_CASE("DistributedSampler: rank batches of B at step k hold the examples of one process's batch of N*B",
          "[distributed]") {
  const std::size_t n = 48, ranks = 3, batch = 4;
  const auto whole = DistributedSampler(n, 1, 0, true, 9).indices();  // one process: the epoch's order
  CHECK(whole == tapegrad::Generator(9).permutation(n));
  for (std::size_t step = 0; step < n / (ranks * batch); ++step) {
    std::set<std::size_t> global(whole.begin() + step * ranks * batch, whole.begin() + (step + 1) * ranks * batch);
    std::set<std::size_t> from_ranks;
    for (int r = 0; r < int(ranks); ++r) {
      const auto mine = DistributedSampler(n, int(ranks), r, true, 9).indices();
      from_ranks.insert(mine.begin() + step * batch, mine.begin() + (step + 1) * batch);
    }
    CHECK(from_ranks == global);
  }
}

TEST_CASE("DistributedSampler: without shuffle the order is 0..n-1, and bad arguments are named", "[distributed]") {
  CHECK(DistributedSampler(6, 2, 1, /*shuffle=*/false).indices() == std::vector<std::size_t>{1, 3, 5});
  CHECK_THROWS_WITH(DistributedSampler(0, 2, 0), Catch::Contains("empty"));
  CHECK_THROWS_WITH(DistributedSampler(3, 4, 0, true, 0, /*drop_last=*/true),
                    Catch::Contains("3 examples") && Catch::Contains("4 ranks"));
  CHECK_THROWS_WITH(DistributedSampler(3, 2, 5), Catch::Contains("rank 5"));
}
