// The method forms of Tensor (x.sum(), x.matmul(w), ...): each calls the free function of the same
// name. They live here rather than in tensor.cpp so that tensor.hpp needs none of the op headers.
#include <fmt/format.h>

#include <limits>

#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/indexing.hpp"
#include "tapegrad/autograd/masking.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/autograd/reduce.hpp"
#include "tapegrad/autograd/shape_ops.hpp"
#include "tapegrad/autograd/softmax.hpp"
#include "tapegrad/autograd/tensor.hpp"

namespace tapegrad {

template <typename T>
Tensor<T> Tensor<T>::sum() const {
  return tapegrad::sum(*this);
}
template <typename T>
Tensor<T> Tensor<T>::sum(const std::vector<std::int64_t>& dims, bool keepdim) const {
  return tapegrad::sum(*this, dims, keepdim);
}
template <typename T>
Tensor<T> Tensor<T>::mean() const {
  return tapegrad::mean(*this);
}
template <typename T>
Tensor<T> Tensor<T>::mean(const std::vector<std::int64_t>& dims, bool keepdim) const {
  return tapegrad::mean(*this, dims, keepdim);
}
template <typename T>
Tensor<T> Tensor<T>::var(const std::vector<std::int64_t>& dims, std::int64_t correction, bool keepdim) const {
  return tapegrad::var(*this, dims, correction, keepdim);
}
template <typename T>
Tensor<T> Tensor<T>::max() const {
  return tapegrad::max(*this);
}
template <typename T>
ValuesIndices<T> Tensor<T>::max(std::int64_t dim, bool keepdim) const {
  return tapegrad::max(*this, dim, keepdim);
}
template <typename T>
Tensor<T> Tensor<T>::min() const {
  return tapegrad::min(*this);
}
template <typename T>
ValuesIndices<T> Tensor<T>::min(std::int64_t dim, bool keepdim) const {
  return tapegrad::min(*this, dim, keepdim);
}
template <typename T>
IndexArray Tensor<T>::argmax() const {
  return tapegrad::argmax(*this);
}
template <typename T>
IndexArray Tensor<T>::argmax(std::int64_t dim, bool keepdim) const {
  return tapegrad::argmax(*this, dim, keepdim);
}
template <typename T>
IndexArray Tensor<T>::argmin() const {
  return tapegrad::argmin(*this);
}
template <typename T>
IndexArray Tensor<T>::argmin(std::int64_t dim, bool keepdim) const {
  return tapegrad::argmin(*this, dim, keepdim);
}
template <typename T>
Tensor<T> Tensor<T>::logsumexp(const std::vector<std::int64_t>& dims, bool keepdim) const {
  return tapegrad::logsumexp(*this, dims, keepdim);
}
template <typename T>
Tensor<T> Tensor<T>::std(const std::vector<std::int64_t>& dims, std::int64_t correction, bool keepdim) const {
  return tapegrad::std(*this, dims, correction, keepdim);
}
template <typename T>
Tensor<T> Tensor<T>::norm(double p, const std::vector<std::int64_t>& dims, bool keepdim) const {
  return tapegrad::norm(*this, p, dims, keepdim);
}
template <typename T>
Tensor<T> Tensor<T>::cumsum(std::int64_t dim) const {
  return tapegrad::cumsum(*this, dim);
}
template <typename T>
ValuesIndices<T> Tensor<T>::topk(std::int64_t k, std::int64_t dim, bool largest, bool sorted) const {
  return tapegrad::topk(*this, k, dim, largest, sorted);
}
template <typename T>
ValuesIndices<T> Tensor<T>::sort(std::int64_t dim, bool descending) const {
  return tapegrad::sort(*this, dim, descending);
}
template <typename T>
Tensor<T> Tensor<T>::repeat(const std::vector<std::int64_t>& repeats) const {
  return tapegrad::repeat(*this, repeats);
}
template <typename T>
Tensor<T> Tensor<T>::matmul(const Tensor& other) const {
  return tapegrad::matmul(*this, other);
}
template <typename T>
Tensor<T> Tensor<T>::t() const {
  if (dim() > 2)
    throw ShapeError(fmt::format("t: expects a tensor with at most 2 dims, got {}-D {}; use transpose(dim0, dim1)",
                                 dim(), format_shape(shape())));
  return dim() < 2 ? *this : tapegrad::transpose(*this, 0, 1);
}
template <typename T>
Tensor<T> Tensor<T>::transpose(std::int64_t dim0, std::int64_t dim1) const {
  return tapegrad::transpose(*this, dim0, dim1);
}
template <typename T>
Tensor<T> Tensor<T>::permute(const std::vector<std::int64_t>& dims) const {
  return tapegrad::permute(*this, dims);
}
template <typename T>
Tensor<T> Tensor<T>::reshape(const std::vector<std::int64_t>& shape) const {
  return tapegrad::reshape(*this, shape);
}
template <typename T>
Tensor<T> Tensor<T>::flatten(std::int64_t start_dim, std::int64_t end_dim) const {
  return tapegrad::flatten(*this, start_dim, end_dim);
}
template <typename T>
Tensor<T> Tensor<T>::squeeze() const {
  return tapegrad::squeeze(*this);
}
template <typename T>
Tensor<T> Tensor<T>::squeeze(std::int64_t dim) const {
  return tapegrad::squeeze(*this, dim);
}
template <typename T>
Tensor<T> Tensor<T>::unsqueeze(std::int64_t dim) const {
  return tapegrad::unsqueeze(*this, dim);
}
template <typename T>
Tensor<T> Tensor<T>::expand(const std::vector<std::int64_t>& sizes) const {
  // torch's -1 keeps the size of the dim it is aligned with (from the right); a new leading dim has
  // no size to keep.
  const std::size_t rank = dim();
  if (sizes.size() < rank) {
    throw ShapeError(fmt::format("expand: {} sizes for a tensor of {} dims (shape {}); give at least one per dim",
                                 sizes.size(), rank, format_shape(shape())));
  }
  const std::size_t lead = sizes.size() - rank;
  Shape target(sizes.size());
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == -1 && d >= lead) {
      target[d] = shape()[d - lead];
    } else if (sizes[d] < 0) {
      throw ShapeError(
          fmt::format("expand: size {} at position {} is invalid for shape {} (only -1, on an existing dim, "
                      "keeps a size)",
                      sizes[d], d, format_shape(shape())));
    } else {
      target[d] = static_cast<std::size_t>(sizes[d]);
    }
  }
  return tapegrad::expand(*this, target);
}
template <typename T>
Tensor<T> Tensor<T>::clone() const {
  return tapegrad::clone(*this);
}
template <typename T>
Tensor<T> Tensor<T>::operator[](std::int64_t index) const {
  return tapegrad::select(*this, 0, index);
}
template <typename T>
Tensor<T> Tensor<T>::select(std::int64_t dim, std::int64_t index) const {
  return tapegrad::select(*this, dim, index);
}
template <typename T>
Tensor<T> Tensor<T>::narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const {
  return tapegrad::narrow(*this, dim, start, length);
}
template <typename T>
Tensor<T> Tensor<T>::slice(std::int64_t dim, std::optional<std::int64_t> start, std::optional<std::int64_t> end,
                           std::int64_t step) const {
  return tapegrad::slice(*this, dim, start.value_or(0), end.value_or(std::numeric_limits<std::int64_t>::max()), step);
}
template <typename T>
Tensor<T> Tensor<T>::index(const std::vector<indexing::TensorIndex>& indices) const {
  return tapegrad::index(*this, indices);
}
template <typename T>
Tensor<T> Tensor<T>::softmax(std::int64_t dim) const {
  return tapegrad::softmax(*this, dim);
}
template <typename T>
Tensor<T> Tensor<T>::log_softmax(std::int64_t dim) const {
  return tapegrad::log_softmax(*this, dim);
}
template <typename T>
Tensor<T> Tensor<T>::exp() const {
  return tapegrad::exp(*this);
}
template <typename T>
Tensor<T> Tensor<T>::log() const {
  return tapegrad::log(*this);
}
template <typename T>
Tensor<T> Tensor<T>::sqrt() const {
  return tapegrad::sqrt(*this);
}
template <typename T>
Tensor<T> Tensor<T>::tanh() const {
  return tapegrad::tanh(*this);
}
template <typename T>
Tensor<T> Tensor<T>::sigmoid() const {
  return tapegrad::sigmoid(*this);
}
template <typename T>
Tensor<T> Tensor<T>::relu() const {
  return tapegrad::relu(*this);
}
template <typename T>
Tensor<T> Tensor<T>::neg() const {
  return tapegrad::neg(*this);
}
template <typename T>
Tensor<T> Tensor<T>::pow(T exponent) const {
  return tapegrad::pow(*this, exponent);
}
template <typename T>
Tensor<T> Tensor<T>::pow(const Tensor& exponent) const {
  return tapegrad::pow(*this, exponent);
}
template <typename T>
Tensor<T> Tensor<T>::abs() const {
  return tapegrad::abs(*this);
}
template <typename T>
Tensor<T> Tensor<T>::log1p() const {
  return tapegrad::log1p(*this);
}
template <typename T>
Tensor<T> Tensor<T>::sin() const {
  return tapegrad::sin(*this);
}
template <typename T>
Tensor<T> Tensor<T>::cos() const {
  return tapegrad::cos(*this);
}
template <typename T>
Tensor<T> Tensor<T>::clamp(std::optional<T> min, std::optional<T> max) const {
  return tapegrad::clamp(*this, min, max);
}
template <typename T>
Tensor<T> Tensor<T>::minimum(const Tensor& other) const {
  return tapegrad::minimum(*this, other);
}
template <typename T>
Tensor<T> Tensor<T>::maximum(const Tensor& other) const {
  return tapegrad::maximum(*this, other);
}
template <typename T>
Tensor<T> Tensor<T>::gather(std::int64_t dim, const IndexArray& index) const {
  return tapegrad::gather(*this, dim, index);
}
template <typename T>
Tensor<T> Tensor<T>::index_select(std::int64_t dim, const IndexArray& index) const {
  return tapegrad::index_select(*this, dim, index);
}
template <typename T>
Tensor<T> Tensor<T>::masked_fill(const xt::xarray<bool>& mask, T value) const {
  return tapegrad::masked_fill(*this, mask, value);
}
template <typename T>
Tensor<T> Tensor<T>::tril(std::int64_t diagonal) const {
  return tapegrad::tril(*this, diagonal);
}
template <typename T>
Tensor<T> Tensor<T>::triu(std::int64_t diagonal) const {
  return tapegrad::triu(*this, diagonal);
}

// tensor.cpp instantiates the class (and with it only the members it defines), so each method defined
// here is instantiated here, for float and double.
#define TAPEGRAD_TENSOR_METHODS(T)                                                                            \
  template Tensor<T> Tensor<T>::sum() const;                                                                  \
  template Tensor<T> Tensor<T>::sum(const std::vector<std::int64_t>&, bool) const;                            \
  template Tensor<T> Tensor<T>::mean() const;                                                                 \
  template Tensor<T> Tensor<T>::mean(const std::vector<std::int64_t>&, bool) const;                           \
  template Tensor<T> Tensor<T>::var(const std::vector<std::int64_t>&, std::int64_t, bool) const;              \
  template Tensor<T> Tensor<T>::max() const;                                                                  \
  template ValuesIndices<T> Tensor<T>::max(std::int64_t, bool) const;                                         \
  template Tensor<T> Tensor<T>::min() const;                                                                  \
  template ValuesIndices<T> Tensor<T>::min(std::int64_t, bool) const;                                         \
  template IndexArray Tensor<T>::argmax() const;                                                              \
  template IndexArray Tensor<T>::argmax(std::int64_t, bool) const;                                            \
  template IndexArray Tensor<T>::argmin() const;                                                              \
  template IndexArray Tensor<T>::argmin(std::int64_t, bool) const;                                            \
  template Tensor<T> Tensor<T>::logsumexp(const std::vector<std::int64_t>&, bool) const;                      \
  template Tensor<T> Tensor<T>::std(const std::vector<std::int64_t>&, std::int64_t, bool) const;              \
  template Tensor<T> Tensor<T>::norm(double, const std::vector<std::int64_t>&, bool) const;                   \
  template Tensor<T> Tensor<T>::cumsum(std::int64_t) const;                                                   \
  template ValuesIndices<T> Tensor<T>::topk(std::int64_t, std::int64_t, bool, bool) const;                    \
  template ValuesIndices<T> Tensor<T>::sort(std::int64_t, bool) const;                                        \
  template Tensor<T> Tensor<T>::repeat(const std::vector<std::int64_t>&) const;                               \
  template Tensor<T> Tensor<T>::matmul(const Tensor<T>&) const;                                               \
  template Tensor<T> Tensor<T>::t() const;                                                                    \
  template Tensor<T> Tensor<T>::transpose(std::int64_t, std::int64_t) const;                                  \
  template Tensor<T> Tensor<T>::permute(const std::vector<std::int64_t>&) const;                              \
  template Tensor<T> Tensor<T>::reshape(const std::vector<std::int64_t>&) const;                              \
  template Tensor<T> Tensor<T>::flatten(std::int64_t, std::int64_t) const;                                    \
  template Tensor<T> Tensor<T>::squeeze() const;                                                              \
  template Tensor<T> Tensor<T>::squeeze(std::int64_t) const;                                                  \
  template Tensor<T> Tensor<T>::unsqueeze(std::int64_t) const;                                                \
  template Tensor<T> Tensor<T>::expand(const std::vector<std::int64_t>&) const;                               \
  template Tensor<T> Tensor<T>::clone() const;                                                                \
  template Tensor<T> Tensor<T>::operator[](std::int64_t) const;                                               \
  template Tensor<T> Tensor<T>::select(std::int64_t, std::int64_t) const;                                     \
  template Tensor<T> Tensor<T>::narrow(std::int64_t, std::int64_t, std::int64_t) const;                       \
  template Tensor<T> Tensor<T>::slice(std::int64_t, std::optional<std::int64_t>, std::optional<std::int64_t>, \
                                      std::int64_t) const;                                                    \
  template Tensor<T> Tensor<T>::index(const std::vector<indexing::TensorIndex>&) const;                       \
  template Tensor<T> Tensor<T>::softmax(std::int64_t) const;                                                  \
  template Tensor<T> Tensor<T>::log_softmax(std::int64_t) const;                                              \
  template Tensor<T> Tensor<T>::exp() const;                                                                  \
  template Tensor<T> Tensor<T>::log() const;                                                                  \
  template Tensor<T> Tensor<T>::sqrt() const;                                                                 \
  template Tensor<T> Tensor<T>::tanh() const;                                                                 \
  template Tensor<T> Tensor<T>::sigmoid() const;                                                              \
  template Tensor<T> Tensor<T>::relu() const;                                                                 \
  template Tensor<T> Tensor<T>::neg() const;                                                                  \
  template Tensor<T> Tensor<T>::pow(T) const;                                                                 \
  template Tensor<T> Tensor<T>::pow(const Tensor<T>&) const;                                                  \
  template Tensor<T> Tensor<T>::abs() const;                                                                  \
  template Tensor<T> Tensor<T>::log1p() const;                                                                \
  template Tensor<T> Tensor<T>::sin() const;                                                                  \
  template Tensor<T> Tensor<T>::cos() const;                                                                  \
  template Tensor<T> Tensor<T>::clamp(std::optional<T>, std::optional<T>) const;                              \
  template Tensor<T> Tensor<T>::minimum(const Tensor<T>&) const;                                              \
  template Tensor<T> Tensor<T>::maximum(const Tensor<T>&) const;                                              \
  template Tensor<T> Tensor<T>::gather(std::int64_t, const IndexArray&) const;                                \
  template Tensor<T> Tensor<T>::index_select(std::int64_t, const IndexArray&) const;                          \
  template Tensor<T> Tensor<T>::masked_fill(const xt::xarray<bool>&, T) const;                                \
  template Tensor<T> Tensor<T>::tril(std::int64_t) const;                                                     \
  template Tensor<T> Tensor<T>::triu(std::int64_t) const;
TAPEGRAD_TENSOR_METHODS(float)
TAPEGRAD_TENSOR_METHODS(double)
#undef TAPEGRAD_TENSOR_METHODS

}  // namespace tapegrad
