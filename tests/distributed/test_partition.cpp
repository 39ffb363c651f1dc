// partition_parameters: the owners ZeroRedundancyOptimizer gives the parameters (no MPI call).
#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "tapegrad/distributed/partition.hpp"

using tapegrad::distributed::partition_parameters;

TEST_CASE("partition_parameters: contiguous runs balanced by element count", "[distributed][zero]") {
  // 12 parameters of 10 elements: 4 per rank on 3 ranks, in order.
  const std::vector<std::size_t> equal(12, 10);
  CHECK(partition_parameters(equal, 3) == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});
  // A parameter goes where its midpoint lies: 60 | 40: the 60's midpoint (30) is in rank 0's half.
  CHECK(partition_parameters({60, 40}, 2) == std::vector<int>{0, 1});
  CHECK(partition_parameters({40, 20, 40}, 2) == std::vector<int>{0, 1, 1});  // 20's midpoint is at 50: rank 1
  // One rank owns everything.
  CHECK(partition_parameters({5, 0, 7}, 1) == std::vector<int>{0, 0, 0});
}

TEST_CASE("partition_parameters: ranks may own nothing, owners never decrease", "[distributed][zero]") {
  const auto owners = partition_parameters({1000, 1, 1}, 4);
  CHECK(owners == std::vector<int>{1, 3, 3});  // the large one's midpoint is at 500 of 1002
  const std::vector<std::size_t> mixed = {7, 300, 2, 2, 90, 0, 64, 64, 1, 500, 3};
  for (int ranks = 1; ranks <= 6; ++ranks) {
    const auto o = partition_parameters(mixed, ranks);
    REQUIRE(o.size() == mixed.size());
    CHECK(std::is_sorted(o.begin(), o.end()));
    CHECK(o.front() >= 0);
    CHECK(o.back() < ranks);
  }
}

TEST_CASE("partition_parameters: frozen parameters weigh nothing, bad world sizes throw", "[distributed][zero]") {
  CHECK(partition_parameters({0, 0}, 3) == std::vector<int>{0, 0});
  CHECK(partition_parameters({0, 50, 0, 50, 0}, 2) == std::vector<int>{0, 0, 1, 1, 1});
  CHECK_THROWS_AS(partition_parameters({1, 2}, 0), std::invalid_argument);
}
