/// @file
/// Which rank owns each parameter when optimizer state and gradients are sharded
/// (ZeroRedundancyOptimizer): contiguous runs of the parameter list, balanced by element count.
#pragma once

#include <cstddef>
#include <vector>

namespace tapegrad::distributed {

/// The owner of each of `numels.size()` parameters on `world_size` ranks. The parameters, in order,
/// are laid end to end (numels[i] elements each) and parameter i goes to the rank whose equal share
/// of the total holds its midpoint: owner(i) = floor(world_size * (before_i + numels[i] / 2) / total).
/// So each rank owns one contiguous run (possibly empty), the owners never decrease, and every
/// rank's count is within half a parameter of total / world_size at each boundary, as balanced as
/// whole parameters allow when none is large. The result depends on numels and world_size alone:
/// every rank computes the same. A zero count (a frozen parameter) weighs nothing. Throws
/// std::invalid_argument unless world_size >= 1.
std::vector<int> partition_parameters(const std::vector<std::size_t>& numels, int world_size);

}  // namespace tapegrad::distributed
