#include "tapegrad/nn/positional_encoding.hpp"

#include <fmt/format.h>

#include <cmath>

#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/rotary.hpp"
#include "tapegrad/autograd/shape_ops.hpp"

namespace tapegrad::nn {

namespace {
// The sequence length of x, after checking that x is [L, B, D] / [B, L, D] with offset + L <= max_len.
std::size_t sequence_length(const char* module, const Shape& shape, std::size_t d_model, std::size_t max_len,
                            bool batch_first, std::size_t offset) {
  if (shape.size() != 3 || shape[2] != d_model) {
    throw ShapeError(fmt::format("{}: expected input {} with D = {}, got {}", module,
                                 batch_first ? "[B, L, D]" : "[L, B, D]", d_model, format_shape(shape)));
  }
  const std::size_t len = batch_first ? shape[1] : shape[0];
  if (offset + len > max_len) {
    throw ShapeError(offset == 0 ? fmt::format("{}: sequence length {} exceeds max_len {} (input {})", module, len,
                                               max_len, format_shape(shape))
                                 : fmt::format("{}: positions {}..{} exceed max_len {} (input {} at offset {})", module,
                                               offset, offset + len - 1, max_len, format_shape(shape), offset));
  }
  return len;
}
}  // namespace

template <typename T>
SinusoidalPositionalEncoding<T>::SinusoidalPositionalEncoding(std::size_t d, std::size_t max_len, bool batch_first)
    : d_model(d), max_len(max_len), batch_first(batch_first) {
  xt::xarray<T> table = xt::xarray<T>::from_shape({max_len, d});
  T* p = table.data();
  for (std::size_t pos = 0; pos < max_len; ++pos) {
    for (std::size_t i = 0; 2 * i < d; ++i) {
      const double angle = static_cast<double>(pos) / std::pow(10000.0, static_cast<double>(2 * i) / d);
      p[pos * d + 2 * i] = static_cast<T>(std::sin(angle));
      if (2 * i + 1 < d) p[pos * d + 2 * i + 1] = static_cast<T>(std::cos(angle));
    }
  }
  pe = this->register_buffer("pe", Tensor<T>(std::move(table)), /*persistent=*/false);
}

template <typename T>
Tensor<T> SinusoidalPositionalEncoding<T>::forward(const Tensor<T>& x, std::size_t offset) const {
  const std::size_t len =
      sequence_length("SinusoidalPositionalEncoding", x.shape(), d_model, max_len, batch_first, offset);
  // The L rows are contiguous, so the slice is a plain copy; as a constant it takes no gradient.
  const Shape shape = batch_first ? Shape{1, len, d_model} : Shape{len, 1, d_model};
  xt::xarray<T> rows = xt::xarray<T>::from_shape(shape);
  const T* first = pe.data().data() + offset * d_model;
  std::copy(first, first + len * d_model, rows.data());
  return x + Tensor<T>(std::move(rows));
}

template <typename T>
std::string SinusoidalPositionalEncoding<T>::extra_repr() const {
  return fmt::format("d_model={}, max_len={}, batch_first={}", d_model, max_len, batch_first ? "True" : "False");
}

template <typename T>
LearnedPositionalEmbedding<T>::LearnedPositionalEmbedding(std::size_t max_len, std::size_t d, Generator& gen,
                                                          bool batch_first)
    : max_len(max_len), d_model(d), batch_first(batch_first) {
  weight = this->register_parameter("weight", Tensor<T>::normal({max_len, d}, T(0), T(1), gen));
}

template <typename T>
Tensor<T> LearnedPositionalEmbedding<T>::forward(const Tensor<T>& x, std::size_t offset) const {
  const std::size_t len =
      sequence_length("LearnedPositionalEmbedding", x.shape(), d_model, max_len, batch_first, offset);
  const auto rows = narrow(weight, 0, static_cast<std::int64_t>(offset), static_cast<std::int64_t>(len));
  return x + unsqueeze(rows, batch_first ? 0 : 1);
}

template <typename T>
std::string LearnedPositionalEmbedding<T>::extra_repr() const {
  return fmt::format("max_len={}, d_model={}, batch_first={}", max_len, d_model, batch_first ? "True" : "False");
}

template <typename T>
RotaryEmbedding<T>::RotaryEmbedding(std::size_t head_dim, double base, std::size_t max_len)
    : head_dim(head_dim), base(base), max_len(max_len) {
  auto [c, s] = rotary_tables<T>(head_dim, max_len, base);
  cos = this->register_buffer("cos", Tensor<T>(std::move(c)), /*persistent=*/false);
  sin = this->register_buffer("sin", Tensor<T>(std::move(s)), /*persistent=*/false);
}

template <typename T>
Tensor<T> RotaryEmbedding<T>::forward(const Tensor<T>& x, std::size_t offset) const {
  return rotary_embedding(x, cos, sin, offset);
}

template <typename T>
std::string RotaryEmbedding<T>::extra_repr() const {
  return fmt::format("{}, base={}, max_len={}", head_dim, python_float(base), max_len);
}

template class SinusoidalPositionalEncoding<float>;
template class SinusoidalPositionalEncoding<double>;
template class LearnedPositionalEmbedding<float>;
template class LearnedPositionalEmbedding<double>;
template class RotaryEmbedding<float>;
template class RotaryEmbedding<double>;

}  // namespace tapegrad::nn
