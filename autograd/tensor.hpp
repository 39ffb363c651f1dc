/// @file
/// Tensor: a shared handle to a row-major xt::xarray value plus the autograd state that lets
/// loss.backward() fill grad() of every tensor that requires it (see autograd/tape.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/shape.hpp"

namespace tapegrad {

template <typename T>
struct Node;

namespace detail {
/// Keeps a scalar argument out of template deduction, so `x * 2.0` works for Tensor<float>.
template <typename T>
struct identity {
  using type = T;
};
template <typename T>
using scalar_t = typename identity<T>::type;
}  // namespace detail

/// What autograd knows about one tensor. Backward closures never hold it (they hold values only), and
/// a node holds its inputs' metas, not their values: an intermediate's data is freed as soon as
/// neither the user nor a backward closure needs it.
template <typename T>
struct AutogradMeta {
  Shape shape;
  bool requires_grad = false;
  bool retains_grad = false;
  bool has_grad = false;
  xt::xarray<T> grad;
  std::shared_ptr<Node<T>> grad_fn;  ///< null for leaves
};

/// A value plus its autograd state, shared by every copy of the handle (like a Python reference to a
/// torch.Tensor). T is float or double.
template <typename T>
class Tensor {
 public:
  using value_type = T;

  /// An undefined tensor (like torch's undefined Tensor): defined() is false, anything else throws.
  Tensor() = default;
  explicit Tensor(xt::xarray<T> value, bool requires_grad = false);

  /// Factories.
  static Tensor zeros(const Shape& shape, bool requires_grad = false);
  static Tensor ones(const Shape& shape, bool requires_grad = false);
  static Tensor full(const Shape& shape, T value, bool requires_grad = false);
  /// [start, end) in steps of step, like torch.arange.
  static Tensor arange(T start, T end, T step = T(1));
  /// values in row-major order; throws ShapeError if their count does not match the shape.
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape, bool requires_grad = false);
  static Tensor scalar(T value, bool requires_grad = false);
  static Tensor uniform(const Shape& shape, T low, T high, Generator& gen, bool requires_grad = false);
  static Tensor normal(const Shape& shape, T mean, T stddev, Generator& gen, bool requires_grad = false);

  bool defined() const { return impl_ != nullptr; }

  /// Values. mutable_data() changes them in place without autograd noticing: for optimizers and
  /// initialization, not for computing something you differentiate.
  const xt::xarray<T>& data() const;
  xt::xarray<T>& mutable_data();
  /// Shares the value with backward closures without copying it.
  std::shared_ptr<const xt::xarray<T>> saved() const;

  const Shape& shape() const;
  std::size_t dim() const { return shape().size(); }
  std::size_t size(std::int64_t dim) const;
  std::size_t numel() const;
  T item() const;  ///< the value of a one-element tensor; throws otherwise
  std::vector<T> to_vector() const;

  bool requires_grad() const;
  /// Only leaves can change it (like torch); returns *this for chaining.
  Tensor& requires_grad_(bool requires = true);
  bool is_leaf() const;
  /// The name of the op that produced this tensor, or "" for a leaf.
  std::string grad_fn_name() const;

  /// The accumulated gradient; has_grad() is false until a backward pass reaches this tensor.
  bool has_grad() const;
  const xt::xarray<T>& grad() const;
  xt::xarray<T>& mutable_grad();
  void set_grad(xt::xarray<T> grad);
  /// Drops the gradient (torch's zero_grad(set_to_none=True)).
  void zero_grad();
  /// Asks a non-leaf tensor to keep its gradient after backward().
  void retain_grad();
  bool retains_grad() const;

  /// A new leaf that shares this value and has no history.
  Tensor detach() const;

  /// Reverse-mode pass from this tensor. The first form needs a one-element tensor (gradient 1).
  /// Saved values are freed afterwards unless retain_graph; a second pass over a freed graph throws.
  void backward(bool retain_graph = false) const;
  void backward(const xt::xarray<T>& gradient, bool retain_graph = false) const;

  /// For op implementations (autograd/tape.hpp).
  const std::shared_ptr<AutogradMeta<T>>& meta() const;
  bool same_as(const Tensor& other) const { return impl_ == other.impl_; }

 private:
  struct Impl {
    std::shared_ptr<xt::xarray<T>> value;
    std::shared_ptr<AutogradMeta<T>> meta;
  };
  const Impl& impl() const;
  std::shared_ptr<Impl> impl_;
};

/// Short names for the two element types.
///@{
using TensorF = Tensor<float>;
using TensorD = Tensor<double>;
///@}

extern template class Tensor<float>;
extern template class Tensor<double>;

}  // namespace tapegrad
