#include "tapegrad/datasets/text/split.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "tapegrad/autograd/generator.hpp"

namespace tapegrad::datasets {

TrainValidSplit train_valid_split(const std::vector<std::int64_t>& labels, double valid_fraction, std::uint64_t seed) {
  if (!(valid_fraction >= 0.0 && valid_fraction < 1.0))
    throw std::invalid_argument(
        fmt::format("train_valid_split: valid_fraction must be in [0, 1), got {}", valid_fraction));
  std::map<std::int64_t, std::vector<std::size_t>> by_label;  // ordered: labels in ascending order
  for (std::size_t i = 0; i < labels.size(); ++i) by_label[labels[i]].push_back(i);
  Generator gen(seed);
  TrainValidSplit split;
  for (const auto& [label, members] : by_label) {
    const auto held = static_cast<std::size_t>(std::llround(valid_fraction * static_cast<double>(members.size())));
    const auto perm = gen.permutation(members.size());
    for (std::size_t k = 0; k < perm.size(); ++k) (k < held ? split.valid : split.train).push_back(members[perm[k]]);
  }
  std::sort(split.train.begin(), split.train.end());
  std::sort(split.valid.begin(), split.valid.end());
  return split;
}

}  // namespace tapegrad::datasets
