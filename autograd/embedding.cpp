#include "tapegrad/autograd/embedding.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

#include "tapegrad/autograd/elementwise_kernels.hpp"
#include "tapegrad/autograd/instantiate.hpp"
#include "tapegrad/autograd/parallel.hpp"
#include "tapegrad/autograd/shape.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad {

namespace {
// Checks weight [num_embeddings, dim] and every id for `op`, and returns padding_idx normalized to
// [0, num_embeddings), or -1 for none (a negative padding_idx counts from the end, as in torch).
template <typename T>
std::int64_t check_lookup(const char* op, const Tensor<T>& weight, const xt::xarray<std::int64_t>& ids,
                          std::optional<std::int64_t> padding_idx) {
  const Shape& ws = weight.shape();
  if (ws.size() != 2) {
    throw ShapeError(fmt::format("{}: weight must be [num_embeddings, embedding_dim], got {}", op, format_shape(ws)));
  }
  const std::size_t vocab = ws[0];
  const auto v = static_cast<std::int64_t>(vocab);
  std::int64_t pad = -1;
  if (padding_idx) {
    if (*padding_idx < -v || *padding_idx >= v) {
      throw ShapeError(fmt::format("{}: padding_idx {} is out of range for {} embeddings (expected {} to {})", op,
                                   *padding_idx, vocab, -v, v - 1));
    }
    pad = *padding_idx < 0 ? *padding_idx + v : *padding_idx;
  }
  const Shape id_shape(ids.shape().begin(), ids.shape().end());
  const std::int64_t* pi = ids.data();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (pi[i] < 0 || pi[i] >= v) {
      throw ShapeError(fmt::format("{}: id {} at position {} is out of range for {} embeddings (expected 0 to {})", op,
                                   pi[i], format_position(i, id_shape), vocab, v - 1));
    }
  }
  return pad;
}

}  // namespace

template <typename T>
Tensor<T> embedding(const Tensor<T>& weight, const xt::xarray<std::int64_t>& ids,
                    std::optional<std::int64_t> padding_idx) {
  const std::int64_t pad = check_lookup("embedding", weight, ids, padding_idx);
  const std::size_t vocab = weight.shape()[0], dim = weight.shape()[1];
  const Shape id_shape(ids.shape().begin(), ids.shape().end());
  const std::size_t count = ids.size();
  const std::int64_t* pi = ids.data();
  Shape out_shape = id_shape;
  out_shape.push_back(dim);
  xt::xarray<T> out = xt::xarray<T>::from_shape(out_shape);
  const T* pw = weight.data().data();
  T* po = out.data();
  detail::parallel_for(count, std::max<std::size_t>(1, detail::kElementwiseGrain / std::max<std::size_t>(dim, 1)),
                       [&](std::size_t begin, std::size_t end) {
                         for (std::size_t i = begin; i < end; ++i) std::copy_n(pw + pi[i] * dim, dim, po + i * dim);
                       });

  Tensor<T> result(std::move(out));
  if (should_record(weight)) {
    auto saved_ids = std::make_shared<const xt::xarray<std::int64_t>>(ids);
    record(result, "embedding", {weight}, [saved_ids, pad, vocab, dim](const xt::xarray<T>& g, GradInputs<T>& in) {
      // Scatter-add: a row used several times gets the sum of its gradients, added in the order of the
      // ids. The threads split the table's rows (each zeroes its rows and takes the ids that fall in
      // them), so every row is summed in that order whatever the thread count.
      xt::xarray<T> dw = xt::xarray<T>::from_shape({vocab, dim});
      const std::int64_t* ids = saved_ids->data();
      const std::size_t count = saved_ids->size();
      const T* pg = g.data();
      T* pd = dw.data();
      detail::parallel_for(vocab, std::max<std::size_t>(1, detail::kElementwiseGrain / std::max<std::size_t>(dim, 1)),
                           [&](std::size_t r0, std::size_t r1) {
                             std::fill(pd + r0 * dim, pd + r1 * dim, T(0));
                             for (std::size_t i = 0; i < count; ++i) {
                               const auto id = static_cast<std::size_t>(ids[i]);
                               if (ids[i] == pad || id < r0 || id >= r1) continue;
                               T* __restrict row = pd + id * dim;
                               const T* __restrict gr = pg + i * dim;
                               for (std::size_t j = 0; j < dim; ++j) row[j] += gr[j];
                             }
                           });
      in.accumulate(0, std::move(dw));
    });
  }
  return result;
}

const char* mode_name(EmbeddingBagMode mode) {
  return mode == EmbeddingBagMode::Sum ? "sum" : mode == EmbeddingBagMode::Mean ? "mean" : "max";
}

namespace {

// The bags of an embedding_bag call: bag b is ids [begin(b), end(b)) in flat order, either k
// consecutive ids each (the fixed-length form) or the ranges torch's offsets give.
struct Bags {
  std::shared_ptr<const std::vector<std::size_t>> starts;  // count + 1 bounds; null for fixed-length bags
  std::size_t k = 0, count = 0;
  std::size_t begin(std::size_t b) const { return starts ? (*starts)[b] : b * k; }
  std::size_t end(std::size_t b) const { return starts ? (*starts)[b + 1] : (b + 1) * k; }
};

// The forward of embedding_bag over every bag: out [bags.count, dim] (zeros on entry) = each bag's
// members' rows, summed (times their weights ps, when given), averaged or maxed; arg (mode Max) gets,
// per bag and column, the row that gave the maximum.
template <typename T>
void bags_forward(const T* pw, const std::int64_t* pi, const T* ps, const Bags& bags, std::size_t dim,
                  EmbeddingBagMode mode, std::int64_t pad, T* po, std::int64_t* arg) {
  for (std::size_t b = 0; b < bags.count; ++b) {
    T* __restrict row_out = po + b * dim;
    std::size_t members = 0;
    for (std::size_t at = bags.begin(b); at < bags.end(b); ++at) {
      if (pi[at] == pad) continue;
      const T* __restrict row = pw + pi[at] * dim;
      if (mode == EmbeddingBagMode::Max) {
        // torch 1.13's rule: the first member sets every column, a later one replaces a column only
        // when strictly greater; so a tie keeps the earlier member's row, and NaN only when first.
        std::int64_t* __restrict ar = arg + b * dim;
        for (std::size_t j = 0; j < dim; ++j) {
          if (members == 0 || row[j] > row_out[j]) {
            row_out[j] = row[j];
            ar[j] = pi[at];
          }
        }
      } else if (ps) {
        for (std::size_t j = 0; j < dim; ++j) row_out[j] += ps[at] * row[j];
      } else {
        for (std::size_t j = 0; j < dim; ++j) row_out[j] += row[j];
      }
      ++members;
    }
    // The mean over the members that are not padding, torch's division of the sum; no member: zeros.
    if (mode == EmbeddingBagMode::Mean && members > 1) {
      const auto n = static_cast<T>(members);
      for (std::size_t j = 0; j < dim; ++j) row_out[j] /= n;
    }
  }
}

// The gradient of the member weights: each member's is the dot product of its bag's gradient g with its
// row of the table pw; padding gets none (pd zeros on entry).
template <typename T>
void bags_weight_backward(const T* pg, const T* pw, const std::int64_t* ids, const Bags& bags, std::size_t dim,
                          std::int64_t pad, T* pd) {
  for (std::size_t b = 0; b < bags.count; ++b) {
    const T* __restrict gr = pg + b * dim;
    for (std::size_t at = bags.begin(b); at < bags.end(b); ++at) {
      if (ids[at] == pad) continue;
      const T* __restrict row = pw + ids[at] * dim;
      T dot = T(0);
      for (std::size_t j = 0; j < dim; ++j) dot += gr[j] * row[j];
      pd[at] = dot;
    }
  }
}

// The table's gradient pd (zeros on entry). Max: each output element's gradient goes to the row it came
// from (arg). Otherwise every member of a bag receives the bag's gradient times its weight ps (1 /
// members for a mean); members equal to padding_idx none.
template <typename T>
void bags_table_backward(const T* pg, const std::int64_t* ids, const T* ps, const std::int64_t* arg, const Bags& bags,
                         std::size_t dim, EmbeddingBagMode mode, std::int64_t pad, T* pd) {
  if (mode == EmbeddingBagMode::Max) {
    for (std::size_t b = 0; b < bags.count; ++b)
      for (std::size_t j = 0; j < dim; ++j)
        if (arg[b * dim + j] >= 0) pd[arg[b * dim + j] * dim + j] += pg[b * dim + j];
    return;
  }
  for (std::size_t b = 0; b < bags.count; ++b) {
    const T* __restrict gr = pg + b * dim;
    T div = T(1);
    if (mode == EmbeddingBagMode::Mean) {
      std::size_t members = 0;
      for (std::size_t at = bags.begin(b); at < bags.end(b); ++at) members += ids[at] != pad;
      div = static_cast<T>(std::max<std::size_t>(members, 1));
    }
    for (std::size_t at = bags.begin(b); at < bags.end(b); ++at) {
      if (ids[at] == pad) continue;
      T* __restrict row = pd + ids[at] * dim;
      if (ps) {
        for (std::size_t j = 0; j < dim; ++j) row[j] += ps[at] * gr[j];
      } else if (mode == EmbeddingBagMode::Mean) {
        for (std::size_t j = 0; j < dim; ++j) row[j] += gr[j] / div;
      } else {
        for (std::size_t j = 0; j < dim; ++j) row[j] += gr[j];
      }
    }
  }
}

// Every form of embedding_bag: out_shape is [..., dim] with bags.count rows. Member weights `scale`
// (ids' shape; Sum only) or, when undefined, weights of 1. Forward and backward are loops over the
// bags' members; mode Max keeps, per bag and column, the row that gave the maximum (-1 for an empty
// bag).
template <typename T>
Tensor<T> bag_impl(const char* op, const Tensor<T>& weight, const xt::xarray<std::int64_t>& ids, Bags bags,
                   Shape out_shape, EmbeddingBagMode mode, std::int64_t pad, const Tensor<T>& scale) {
  if (scale.defined() && scale.shape() != Shape(ids.shape().begin(), ids.shape().end())) {
    throw ShapeError(fmt::format("{}: per_sample_weights {} must have the shape of ids {}", op,
                                 format_shape(scale.shape()), format_shape(shape_of(ids))));
  }
  if (scale.defined() && mode != EmbeddingBagMode::Sum) {
    throw std::invalid_argument(fmt::format(
        "{}: per_sample_weights are only supported with mode Sum, as in torch, got mode {}", op, mode_name(mode)));
  }
  const std::size_t vocab = weight.shape()[0], dim = weight.shape()[1];
  xt::xarray<T> out = xt::zeros<T>(out_shape);
  // Max: the row each output element came from, -1 where the bag has no member (its output stays 0).
  std::shared_ptr<std::vector<std::int64_t>> arg;
  if (mode == EmbeddingBagMode::Max) arg = std::make_shared<std::vector<std::int64_t>>(bags.count * dim, -1);
  bags_forward(weight.data().data(), ids.data(), scale.defined() ? scale.data().data() : nullptr, bags, dim, mode, pad,
               out.data(), arg ? arg->data() : nullptr);

  Tensor<T> result(std::move(out));
  if (!should_record(weight, scale)) return result;
  auto saved_ids = std::make_shared<const xt::xarray<std::int64_t>>(ids);
  // The table's values only when the member weights want a gradient: d out[b] / d scale[at] = its row.
  auto saved_table = scale.defined() && scale.requires_grad() ? weight.saved() : nullptr;
  auto saved_scale = scale.defined() ? scale.saved() : nullptr;
  record(result, op, {weight, scale},
         [saved_ids, saved_scale = std::move(saved_scale), saved_table = std::move(saved_table), arg = std::move(arg),
          bags = std::move(bags), mode, pad, vocab, dim](const xt::xarray<T>& g, GradInputs<T>& in) {
           if (in.needs(1)) {
             xt::xarray<T> ds = xt::zeros<T>(saved_ids->shape());
             bags_weight_backward(g.data(), saved_table->data(), saved_ids->data(), bags, dim, pad, ds.data());
             in.accumulate(1, std::move(ds));
           }
           if (!in.needs(0)) return;
           xt::xarray<T> dw = xt::zeros<T>({vocab, dim});
           bags_table_backward(g.data(), saved_ids->data(), saved_scale ? saved_scale->data() : nullptr,
                               arg ? arg->data() : nullptr, bags, dim, mode, pad, dw.data());
           in.accumulate(0, std::move(dw));
         });
  return result;
}

// The fixed-length form: bag of each row of ids' last axis.
template <typename T>
Tensor<T> fixed_bags(const char* op, const Tensor<T>& weight, const xt::xarray<std::int64_t>& ids,
                     EmbeddingBagMode mode, std::optional<std::int64_t> padding_idx, const Tensor<T>& scale) {
  if (ids.dimension() == 0) throw ShapeError(fmt::format("{}: ids must have at least one dimension (the bag)", op));
  const std::int64_t pad = check_lookup(op, weight, ids, padding_idx);
  Shape out_shape(ids.shape().begin(), ids.shape().end() - 1);
  Bags bags;
  bags.k = ids.shape().back();
  bags.count = numel(out_shape);
  out_shape.push_back(weight.shape()[1]);
  return bag_impl<T>(op, weight, ids, std::move(bags), std::move(out_shape), mode, pad, scale);
}

}  // namespace

template <typename T>
Tensor<T> embedding_bag_sum(const Tensor<T>& weight, const xt::xarray<std::int64_t>& ids,
                            std::optional<std::int64_t> padding_idx, const Tensor<T>& per_sample_weights) {
  return fixed_bags<T>("embedding_bag_sum", weight, ids, EmbeddingBagMode::Sum, padding_idx, per_sample_weights);
}

template <typename T>
Tensor<T> embedding_bag(const Tensor<T>& weight, const xt::xarray<std::int64_t>& ids, EmbeddingBagMode mode,
                        std::optional<std::int64_t> padding_idx, const Tensor<T>& per_sample_weights) {
  return fixed_bags<T>("embedding_bag", weight, ids, mode, padding_idx, per_sample_weights);
}

template <typename T>
Tensor<T> embedding_bag(const Tensor<T>& weight, const xt::xarray<std::int64_t>& input,
                        const xt::xarray<std::int64_t>& offsets, EmbeddingBagMode mode,
                        std::optional<std::int64_t> padding_idx, bool include_last_offset,
                        const Tensor<T>& per_sample_weights) {
  const char* op = "embedding_bag";
  if (input.dimension() != 1) {
    throw ShapeError(
        fmt::format("{}: with offsets, input must be 1-D (a 2-D input holds one bag per row and takes no "
                    "offsets), got {}",
                    op, format_shape(shape_of(input))));
  }
  if (offsets.dimension() != 1)
    throw ShapeError(fmt::format("{}: offsets must be 1-D, got {}", op, format_shape(shape_of(offsets))));
  const std::int64_t pad = check_lookup(op, weight, input, padding_idx);
  const std::size_t n = input.size(), given = offsets.size();
  if (include_last_offset && given == 0)
    throw ShapeError(fmt::format("{}: include_last_offset needs at least one offset (the end), got none", op));
  const std::int64_t* po = offsets.data();
  if (given > 0 && po[0] != 0) {
    throw ShapeError(
        fmt::format("{}: offsets[0] must be 0 (the first bag starts at the first id, as in torch), got {}", op, po[0]));
  }
  for (std::size_t b = 1; b < given; ++b) {
    if (po[b] < po[b - 1]) {
      throw ShapeError(fmt::format("{}: offsets must not decrease, got offsets[{}] = {} after offsets[{}] = {}", op, b,
                                   po[b], b - 1, po[b - 1]));
    }
  }
  if (given > 0 && po[given - 1] > static_cast<std::int64_t>(n)) {
    throw ShapeError(fmt::format("{}: offsets[{}] = {} is beyond the input's {} ids", op, given - 1, po[given - 1], n));
  }
  // torch's forward ignores ids past the last offset but its backward then writes out of bounds
  // (torch 1.13); the documented CSR form ends at the input's length, which is required here.
  if (include_last_offset && po[given - 1] != static_cast<std::int64_t>(n)) {
    throw ShapeError(
        fmt::format("{}: with include_last_offset the last offset is the end of the last bag and must be "
                    "the input's length {}, got {}",
                    op, n, po[given - 1]));
  }
  Bags bags;
  bags.count = include_last_offset ? given - 1 : given;
  auto starts = std::make_shared<std::vector<std::size_t>>(bags.count + 1);
  for (std::size_t b = 0; b < bags.count; ++b) (*starts)[b] = static_cast<std::size_t>(po[b]);
  (*starts)[bags.count] = n;
  bags.starts = std::move(starts);
  Shape out_shape{bags.count, weight.shape()[1]};
  return bag_impl<T>(op, weight, input, std::move(bags), std::move(out_shape), mode, pad, per_sample_weights);
}

TAPEGRAD_INSTANTIATE(embedding);
TAPEGRAD_INSTANTIATE(embedding_bag_sum);
#define TAPEGRAD_OVERLOADS(T)                                                                                         \
  template Tensor<T> embedding_bag<T>(const Tensor<T>&, const xt::xarray<std::int64_t>&, EmbeddingBagMode,            \
                                      std::optional<std::int64_t>, const Tensor<T>&);                                 \
  template Tensor<T> embedding_bag<T>(const Tensor<T>&, const xt::xarray<std::int64_t>&,                              \
                                      const xt::xarray<std::int64_t>&, EmbeddingBagMode, std::optional<std::int64_t>, \
                                      bool, const Tensor<T>&);
TAPEGRAD_OVERLOADS(float)
TAPEGRAD_OVERLOADS(double)
#undef TAPEGRAD_OVERLOADS

}  // namespace tapegrad
