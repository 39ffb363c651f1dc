#include "tapegrad/autograd/embedding.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "tapegrad/autograd/elementwise_kernels.hpp"
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

namespace {

// embedding_bag_sum with member weights `scale` (the shape of ids) or, when null, weights of 1.
template <typename T>
Tensor<T> weighted_bag_sum(const Tensor<T>& weight, const xt::xarray<std::int64_t>& ids,
                           std::optional<std::int64_t> padding_idx, std::shared_ptr<const xt::xarray<T>> scale) {
  if (ids.dimension() == 0) throw ShapeError("embedding_bag_sum: ids must have at least one dimension (the bag)");
  const std::int64_t pad = check_lookup("embedding_bag_sum", weight, ids, padding_idx);
  if (scale && Shape(scale->shape().begin(), scale->shape().end()) != Shape(ids.shape().begin(), ids.shape().end())) {
    throw ShapeError(fmt::format("embedding_bag_sum: per_sample_weights {} must have the shape of ids {}",
                                 format_shape(shape_of(*scale)), format_shape(shape_of(ids))));
  }
  const std::size_t vocab = weight.shape()[0], dim = weight.shape()[1];
  const std::size_t bag = ids.shape().back(), bags = bag == 0 ? 0 : ids.size() / bag;
  Shape out_shape(ids.shape().begin(), ids.shape().end() - 1);
  out_shape.push_back(dim);
  xt::xarray<T> out = xt::zeros<T>(out_shape);
  const T* pw = weight.data().data();
  const std::int64_t* pi = ids.data();
  const T* ps = scale ? scale->data() : nullptr;
  T* po = out.data();
  for (std::size_t b = 0; b < bags; ++b) {
    T* row_out = po + b * dim;
    for (std::size_t k = 0; k < bag; ++k) {
      const std::size_t at = b * bag + k;
      if (pi[at] == pad) continue;
      const T* row = pw + pi[at] * dim;
      if (ps) {
        for (std::size_t j = 0; j < dim; ++j) row_out[j] += ps[at] * row[j];
      } else {
        for (std::size_t j = 0; j < dim; ++j) row_out[j] += row[j];
      }
    }
  }

  Tensor<T> result(std::move(out));
  if (should_record(weight)) {
    auto saved_ids = std::make_shared<const xt::xarray<std::int64_t>>(ids);
    record(result, "embedding_bag_sum", {weight},
           [saved_ids, saved_scale = std::move(scale), pad, vocab, dim, bag, bags](const xt::xarray<T>& g,
                                                                                   GradInputs<T>& in) {
             // Every member of a bag receives the bag's gradient times its weight; members equal to
             // padding_idx none.
             xt::xarray<T> dw = xt::zeros<T>({vocab, dim});
             const std::int64_t* ids = saved_ids->data();
             const T* ps = saved_scale ? saved_scale->data() : nullptr;
             const T* pg = g.data();
             T* pd = dw.data();
             for (std::size_t b = 0; b < bags; ++b) {
               const T* gr = pg + b * dim;
               for (std::size_t k = 0; k < bag; ++k) {
                 const std::size_t at = b * bag + k;
                 if (ids[at] == pad) continue;
                 T* row = pd + ids[at] * dim;
                 if (ps) {
                   for (std::size_t j = 0; j < dim; ++j) row[j] += ps[at] * gr[j];
                 } else {
                   for (std::size_t j = 0; j < dim; ++j) row[j] += gr[j];
                 }
               }
             }
             in.accumulate(0, std::move(dw));
           });
  }
  return result;
}

}  // namespace

template <typename T>
Tensor<T> embedding_bag_sum(const Tensor<T>& weight, const xt::xarray<std::int64_t>& ids,
                            std::optional<std::int64_t> padding_idx) {
  return weighted_bag_sum<T>(weight, ids, padding_idx, nullptr);
}

template <typename T>
Tensor<T> embedding_bag_sum(const Tensor<T>& weight, const xt::xarray<std::int64_t>& ids,
                            std::optional<std::int64_t> padding_idx, xt::xarray<T> per_sample_weights) {
  return weighted_bag_sum<T>(weight, ids, padding_idx,
                             std::make_shared<const xt::xarray<T>>(std::move(per_sample_weights)));
}

template Tensor<float> embedding<float>(const Tensor<float>&, const xt::xarray<std::int64_t>&,
                                        std::optional<std::int64_t>);
template Tensor<double> embedding<double>(const Tensor<double>&, const xt::xarray<std::int64_t>&,
                                          std::optional<std::int64_t>);
template Tensor<float> embedding_bag_sum<float>(const Tensor<float>&, const xt::xarray<std::int64_t>&,
                                                std::optional<std::int64_t>);
template Tensor<double> embedding_bag_sum<double>(const Tensor<double>&, const xt::xarray<std::int64_t>&,
                                                  std::optional<std::int64_t>);
template Tensor<float> embedding_bag_sum<float>(const Tensor<float>&, const xt::xarray<std::int64_t>&,
                                                std::optional<std::int64_t>, xt::xarray<float>);
template Tensor<double> embedding_bag_sum<double>(const Tensor<double>&, const xt::xarray<std::int64_t>&,
                                                  std::optional<std::int64_t>, xt::xarray<double>);

}  // namespace tapegrad
