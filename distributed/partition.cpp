#include "tapegrad/distributed/partition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace tapegrad::distributed {

std::vector<int> partition_parameters(const std::vector<std::size_t>& numels, int world_size) {
  if (world_size < 1) {
    throw std::invalid_argument(fmt::format("partition_parameters: world_size {} must be at least 1", world_size));
  }
  unsigned long long total = 0;
  for (std::size_t n : numels) total += n;
  std::vector<int> owners(numels.size(), 0);
  if (total == 0) return owners;
  const auto ranks = static_cast<unsigned long long>(world_size);
  unsigned long long before = 0;
  for (std::size_t i = 0; i < numels.size(); ++i) {
    // In integers, so that every rank gets exactly the same answer: (2 before + n) N / (2 total).
    const unsigned __int128 midpoint2 = static_cast<unsigned __int128>(2 * before + numels[i]) * ranks;
    const auto owner = static_cast<unsigned long long>(midpoint2 / (2 * static_cast<unsigned __int128>(total)));
    owners[i] = static_cast<int>(std::min(owner, ranks - 1));
    before += numels[i];
  }
  return owners;
}

}  // namespace tapegrad::distributed
