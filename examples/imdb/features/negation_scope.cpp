#include "examples/imdb/features/negation_scope.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "tapegrad/autograd/shape.hpp"
#include "tapegrad/nn/ngram_hash.hpp"

namespace imdb::features {

using tapegrad::BoolArray;
using tapegrad::format_shape;
using tapegrad::shape_of;

namespace {
void sort_distinct(std::vector<std::int64_t>& ids, const char* which) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (!ids.empty() && ids.front() < 0) {
    throw std::invalid_argument(fmt::format("NegationScope: {} id {} is negative", which, ids.front()));
  }
}
bool holds(const std::vector<std::int64_t>& sorted, std::int64_t id) {
  return std::binary_search(sorted.begin(), sorted.end(), id);
}
}  // namespace

NegationScope::NegationScope(std::vector<std::int64_t> negators, std::vector<std::int64_t> scope_ends)
    : negators_(std::move(negators)), scope_ends_(std::move(scope_ends)) {
  sort_distinct(negators_, "negator");
  sort_distinct(scope_ends_, "scope end");
  for (const auto id : negators_) {
    if (holds(scope_ends_, id)) {
      throw std::invalid_argument(fmt::format("NegationScope: id {} is both a negator and a scope end", id));
    }
  }
}

xt::xarray<std::int64_t> NegationScope::mark(const xt::xarray<std::int64_t>& ids, const BoolArray& padding_mask) const {
  if (ids.dimension() != 2 || shape_of(ids) != shape_of(padding_mask)) {
    throw std::invalid_argument(fmt::format("NegationScope: ids {} and padding_mask {} must both be [batch, length]",
                                            format_shape(shape_of(ids)), format_shape(shape_of(padding_mask))));
  }
  xt::xarray<std::int64_t> out = ids;
  if (empty()) return out;
  const std::size_t batch = ids.shape(0), length = ids.shape(1);
  const bool* pad = padding_mask.data();
  std::int64_t* o = out.data();
  for (std::size_t b = 0; b < batch; ++b) {
    bool in_scope = false;
    for (std::size_t t = 0; t < length; ++t) {
      const std::size_t at = b * length + t;
      const std::int64_t id = o[at];
      if (pad[at]) {
        in_scope = false;
      } else if (id < 0) {
        throw std::invalid_argument(fmt::format("NegationScope: token {} of row {} has the negative id {}", t, b, id));
      } else if (holds(negators_, id)) {
        in_scope = true;
      } else if (holds(scope_ends_, id)) {
        in_scope = false;
      } else if (in_scope) {
        o[at] = ~id;
      }
    }
  }
  return out;
}

xt::xarray<std::int64_t> negated_word_buckets(const xt::xarray<std::int64_t>& marked, const BoolArray& padding_mask,
                                              std::size_t num_buckets) {
  if (marked.dimension() != 2 || shape_of(marked) != shape_of(padding_mask)) {
    throw std::invalid_argument(
        fmt::format("negated_word_buckets: marked {} and padding_mask {} must both be [batch, length]",
                    format_shape(shape_of(marked)), format_shape(shape_of(padding_mask))));
  }
  // The plain ids of the marked tokens, every other position hidden as padding.
  xt::xarray<std::int64_t> plain = xt::zeros<std::int64_t>(marked.shape());
  BoolArray hidden = BoolArray::from_shape(marked.shape());
  for (std::size_t i = 0; i < marked.size(); ++i) {
    const bool negated = !padding_mask.data()[i] && marked.data()[i] < 0;
    hidden.data()[i] = !negated;
    if (negated) plain.data()[i] = ~marked.data()[i];
  }
  return tapegrad::nn::document_ngram_buckets(plain, hidden, num_buckets, 1);
}

}  // namespace imdb::features
