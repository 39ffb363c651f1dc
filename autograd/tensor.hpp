/// @file
/// Tensor: a shared handle to a row-major xt::xarray value plus the autograd state that lets
/// loss.backward() fill grad() of every tensor that requires it (see autograd/tape.hpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#include <xtensor/xarray.hpp>

#include "tapegrad/autograd/generator.hpp"
#include "tapegrad/autograd/shape.hpp"
#include "tapegrad/autograd/tensor_index.hpp"

namespace tapegrad {

template <typename T>
struct Node;
template <typename T>
struct ValuesIndices;

namespace detail {
/// Keeps a scalar argument out of template deduction, so `x * 2.0` works for Tensor<float>.
template <typename T>
struct identity {
  using type = T;
};
template <typename T>
using scalar_t = typename identity<T>::type;
/// True for the integer types that may stand for one dim (`sum(x, 1)`), but not for bool, so that a
/// keepdim flag is never read as a dim.
template <typename I>
constexpr bool is_dim_v = std::is_integral_v<I> && !std::is_same_v<I, bool>;
/// False, but only once the template is instantiated: for a static_assert that fires on use.
template <typename... A>
constexpr bool always_false_v = false;
/// Whether v converts to U without undefined behaviour or an infinity from a finite value.
template <typename U, typename T>
bool fits_in(T v) {
  if constexpr (std::is_integral_v<U>) {
    return static_cast<long double>(v) >= static_cast<long double>(std::numeric_limits<U>::min()) &&
           static_cast<long double>(v) < static_cast<long double>(std::numeric_limits<U>::max()) + 1.0L;
  } else {
    return !std::isfinite(v) || static_cast<long double>(std::abs(v)) <= std::numeric_limits<U>::max();
  }
}
/// Throws std::range_error: item<U>() of `value`, which a U of `bits` bits (integer or not) cannot hold.
[[noreturn]] void throw_item_range(double value, std::size_t bits, bool integer);
}  // namespace detail

/// Integer indices, torch's int64 tensors: class targets, token ids, the positions of gather and
/// index_select.
using IndexArray = xt::xarray<std::int64_t>;

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
  /// Run by backward when this leaf's gradient is complete for the pass, in registration order;
  /// the ids let a RemovableHandle take one out.
  std::vector<std::pair<std::uint64_t, std::function<void()>>> post_accumulate_grad_hooks;
};

/// Unregisters a hook when remove() is called (torch.utils.hooks.RemovableHandle); removing twice,
/// or after the tensor is gone, does nothing. Dropping the handle keeps the hook.
class RemovableHandle {
 public:
  RemovableHandle() = default;
  explicit RemovableHandle(std::function<void()> remove) : remove_(std::move(remove)) {}
  void remove() {
    if (remove_) std::exchange(remove_, nullptr)();
  }

 private:
  std::function<void()> remove_;
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
  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) noexcept = default;
  /// Assignment rebinds the handle, as Python's `=` does. Only a named tensor can be assigned to:
  /// `x[0] = y` would rebind a temporary copy and leave x as it was, so it does not compile (write a
  /// part of x with index_put_).
  Tensor& operator=(const Tensor&) & = default;
  Tensor& operator=(Tensor&&) & noexcept = default;
  ~Tensor() = default;

  /// Factories.
  static Tensor zeros(const Shape& shape, bool requires_grad = false);
  static Tensor ones(const Shape& shape, bool requires_grad = false);
  static Tensor full(const Shape& shape, T value, bool requires_grad = false);
  /// [start, end) in steps of step, like torch.arange; arange(end) starts at 0.
  static Tensor arange(T start, T end, T step = T(1));
  static Tensor arange(T end) { return arange(T(0), end); }
  /// values in row-major order; throws ShapeError if their count does not match the shape.
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape, bool requires_grad = false);
  static Tensor scalar(T value, bool requires_grad = false);
  static Tensor uniform(const Shape& shape, T low, T high, Generator& gen, bool requires_grad = false);
  static Tensor normal(const Shape& shape, T mean, T stddev, Generator& gen, bool requires_grad = false);

  bool defined() const { return impl_ != nullptr; }

  /// Values. mutable_data() is the raw storage, for optimizers and initialization: writing it changes
  /// the tensor for every handle and every detach() of it, without autograd noticing, and also a value
  /// an op has saved for a backward not yet run, whose gradient would then be wrong. The in-place ops
  /// below (fill_, copy_, index_put_, +=, ...) are the checked way to write values.
  const xt::xarray<T>& data() const;
  xt::xarray<T>& mutable_data();
  /// Shares the value with backward closures without copying it.
  std::shared_ptr<const xt::xarray<T>> saved() const;

  const Shape& shape() const;
  std::size_t dim() const { return shape().size(); }
  std::size_t size(std::int64_t dim) const;
  std::size_t numel() const;
  T item() const;  ///< the value of a one-element tensor; throws otherwise
  /// item() as a U, as LibTorch's x.item<float>(): an integer U takes the value rounded toward zero,
  /// bool is value != 0; a value U cannot hold (NaN or out of range for an integer, a finite value
  /// beyond a narrower float's range) throws std::range_error naming it.
  template <typename U>
  U item() const {
    static_assert(std::is_arithmetic_v<U>, "item<U>(): U must be a number type");
    const T v = item();
    if constexpr (std::is_same_v<U, bool>) {
      return v != T(0);
    } else {
      if (!detail::fits_in<U>(v))
        detail::throw_item_range(static_cast<double>(v), 8 * sizeof(U), std::is_integral_v<U>);
      return static_cast<U>(v);
    }
  }
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

  /// Calls hook(tensor) in every backward pass that reaches this leaf, once its gradient has received
  /// the pass's last contribution, so grad() is complete (torch's register_post_accumulate_grad_hook).
  /// Hooks of different leaves run in the order their gradients complete, which is what lets
  /// data-parallel training start reducing the last layers' gradients while backward still runs.
  /// Throws std::logic_error for a non-leaf or a tensor that does not require grad.
  RemovableHandle register_post_accumulate_grad_hook(std::function<void(Tensor&)> hook);

  /// A new leaf that shares this value and has no history.
  Tensor detach() const;

  /// Reverse-mode pass from this tensor. The first form needs a one-element tensor (gradient 1).
  /// Saved values are freed afterwards unless retain_graph; a second pass over a freed graph throws.
  void backward(bool retain_graph = false) const;
  void backward(const xt::xarray<T>& gradient, bool retain_graph = false) const;

  /// @name Method forms of the common ops, as in torch (`x.sum({1}, true)`, `x.matmul(w).relu()`)
  /// Each is exactly the free function of the same name (autograd/reduce.hpp, shape_ops.hpp,
  /// elementwise.hpp, matmul.hpp, softmax.hpp, indexing.hpp, masking.hpp) applied to *this, so it
  /// records the same node.
  /// A single integer dim is accepted wherever a list of dims is (`x.sum(1)`, `x.mean(-1, true)`).
  ///@{
  Tensor sum() const;
  Tensor sum(const std::vector<std::int64_t>& dims, bool keepdim = false) const;
  template <typename I, std::enable_if_t<detail::is_dim_v<I>, int> = 0>
  Tensor sum(I dim, bool keepdim = false) const {
    return sum(std::vector<std::int64_t>{static_cast<std::int64_t>(dim)}, keepdim);
  }
  Tensor mean() const;
  Tensor mean(const std::vector<std::int64_t>& dims, bool keepdim = false) const;
  template <typename I, std::enable_if_t<detail::is_dim_v<I>, int> = 0>
  Tensor mean(I dim, bool keepdim = false) const {
    return mean(std::vector<std::int64_t>{static_cast<std::int64_t>(dim)}, keepdim);
  }
  /// torch.var with `correction` (1 = unbiased).
  Tensor var(const std::vector<std::int64_t>& dims, std::int64_t correction = 1, bool keepdim = false) const;
  template <typename I, std::enable_if_t<detail::is_dim_v<I>, int> = 0>
  Tensor var(I dim, std::int64_t correction = 1, bool keepdim = false) const {
    return var(std::vector<std::int64_t>{static_cast<std::int64_t>(dim)}, correction, keepdim);
  }
  /// torch.max(x) over every element, and torch.max(x, dim): values and indices, `x.max(1).values`
  /// or `auto [values, indices] = x.max(1);`.
  Tensor max() const;
  ValuesIndices<T> max(std::int64_t dim, bool keepdim = false) const;
  /// torch.min(x) over every element, and torch.min(x, dim) with values and indices.
  Tensor min() const;
  ValuesIndices<T> min(std::int64_t dim, bool keepdim = false) const;
  /// torch's x.argmax(dim, keepdim) and x.argmax() (the flat position over every element), int64 as in
  /// torch; likewise argmin.
  ///@{
  IndexArray argmax() const;
  IndexArray argmax(std::int64_t dim, bool keepdim = false) const;
  IndexArray argmin() const;
  IndexArray argmin(std::int64_t dim, bool keepdim = false) const;
  ///@}
  /// torch.logsumexp over the listed dims, or one int dim.
  Tensor logsumexp(const std::vector<std::int64_t>& dims, bool keepdim = false) const;
  template <typename I, std::enable_if_t<detail::is_dim_v<I>, int> = 0>
  Tensor logsumexp(I dim, bool keepdim = false) const {
    return logsumexp(std::vector<std::int64_t>{static_cast<std::int64_t>(dim)}, keepdim);
  }

  /// torch.std with `correction`, over the listed dims or one int dim.
  Tensor std(const std::vector<std::int64_t>& dims, std::int64_t correction = 1, bool keepdim = false) const;
  template <typename I, std::enable_if_t<detail::is_dim_v<I>, int> = 0>
  Tensor std(I dim, std::int64_t correction = 1, bool keepdim = false) const {
    return std(std::vector<std::int64_t>{static_cast<std::int64_t>(dim)}, correction, keepdim);
  }
  /// torch's x.norm(p, dim, keepdim): the vector p-norm over the listed dims (all when empty), or one
  /// int dim.
  Tensor norm(double p = 2, const std::vector<std::int64_t>& dims = {}, bool keepdim = false) const;
  template <typename I, std::enable_if_t<detail::is_dim_v<I>, int> = 0>
  Tensor norm(double p, I dim, bool keepdim = false) const {
    return norm(p, std::vector<std::int64_t>{static_cast<std::int64_t>(dim)}, keepdim);
  }
  Tensor cumsum(std::int64_t dim) const;
  /// torch's x.topk(k) and x.sort(): values and int64 indices (autograd/indexing.hpp).
  ValuesIndices<T> topk(std::int64_t k, std::int64_t dim = -1, bool largest = true, bool sorted = true) const;
  ValuesIndices<T> sort(std::int64_t dim = -1, bool descending = false) const;

  Tensor matmul(const Tensor& other) const;
  /// torch's t(): a 2-D tensor transposed; a 0-D or 1-D tensor as it is (the same handle); more
  /// dims throw ShapeError.
  Tensor t() const;
  Tensor transpose(std::int64_t dim0, std::int64_t dim1) const;
  Tensor permute(const std::vector<std::int64_t>& dims) const;
  /// One size may be -1 (inferred). Also as a list of integers: `x.reshape(2, -1)`.
  Tensor reshape(const std::vector<std::int64_t>& shape) const;
  template <typename... I, std::enable_if_t<(sizeof...(I) > 0) && (detail::is_dim_v<I> && ...), int> = 0>
  Tensor reshape(I... sizes) const {
    return reshape(std::vector<std::int64_t>{static_cast<std::int64_t>(sizes)...});
  }
  /// Not provided: torch's view() shares its input's storage, and a tensor here owns its storage
  /// whole, so a view could only be a copy that writes do not reach. reshape() is that copy; a call of
  /// view() stops the build with a message that says so.
  template <typename D = void>
  Tensor view(std::initializer_list<std::int64_t>) const {
    static_assert(detail::always_false_v<D>,
                  "tapegrad has no Tensor::view: a tensor owns its storage, so a view could not alias it; "
                  "reshape() copies (write into a part of a tensor with index_put_)");
    return *this;
  }
  template <typename... A>
  Tensor view(A&&...) const {
    static_assert(detail::always_false_v<A...>,
                  "tapegrad has no Tensor::view: a tensor owns its storage, so a view could not alias it; "
                  "reshape() copies (write into a part of a tensor with index_put_)");
    return *this;
  }
  Tensor flatten(std::int64_t start_dim = 0, std::int64_t end_dim = -1) const;
  /// x tiled along each dim (torch's x.repeat), also as a list of integers: `x.repeat(2, 1)`.
  Tensor repeat(const std::vector<std::int64_t>& repeats) const;
  template <typename... I, std::enable_if_t<(sizeof...(I) > 0) && (detail::is_dim_v<I> && ...), int> = 0>
  Tensor repeat(I... repeats) const {
    return repeat(std::vector<std::int64_t>{static_cast<std::int64_t>(repeats)...});
  }

  Tensor squeeze() const;
  Tensor squeeze(std::int64_t dim) const;
  Tensor unsqueeze(std::int64_t dim) const;
  /// torch's x.expand(sizes): a copy broadcast to sizes, where -1 keeps the size of that dim; also
  /// `x.expand(2, -1)`. The gradient is summed back over the broadcast dims.
  Tensor expand(const std::vector<std::int64_t>& sizes) const;
  template <typename... I, std::enable_if_t<(sizeof...(I) > 0) && (detail::is_dim_v<I> && ...), int> = 0>
  Tensor expand(I... sizes) const {
    return expand(std::vector<std::int64_t>{static_cast<std::int64_t>(sizes)...});
  }
  /// A copy on the tape (torch's clone): the gradient passes through to this tensor.
  Tensor clone() const;

  /// Parts of a tensor, by torch's names. Each returns a copy (torch returns a view): writing into it
  /// leaves this tensor as it was, so write parts with index_put_.
  /// x[i] is x.select(0, i) (Python's x[i]); select removes dim, narrow and slice keep it
  /// (slice(dim, start, end, step) is LibTorch's x.slice, Python's x[start:end:step] along dim, with
  /// missing bounds meaning the ends); index takes LibTorch's list (autograd/tensor_index.hpp):
  /// `x.index({0, Slice(1, None), None})` for Python's x[0, 1:, None].
  ///@{
  Tensor operator[](std::int64_t index) const;
  Tensor select(std::int64_t dim, std::int64_t index) const;
  Tensor narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const;
  Tensor slice(std::int64_t dim = 0, std::optional<std::int64_t> start = std::nullopt,
               std::optional<std::int64_t> end = std::nullopt, std::int64_t step = 1) const;
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  ///@}

  Tensor softmax(std::int64_t dim) const;
  Tensor log_softmax(std::int64_t dim) const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor neg() const;
  Tensor pow(T exponent) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor abs() const;
  Tensor log1p() const;
  Tensor sin() const;
  Tensor cos() const;
  /// torch's x.clamp(min, max): either bound may be std::nullopt, not both.
  Tensor clamp(std::optional<T> min, std::optional<T> max = std::nullopt) const;
  Tensor minimum(const Tensor& other) const;
  Tensor maximum(const Tensor& other) const;
  Tensor gather(std::int64_t dim, const IndexArray& index) const;
  Tensor index_select(std::int64_t dim, const IndexArray& index) const;
  /// This tensor with value where mask (broadcast to its shape) is true (autograd/masking.hpp).
  Tensor masked_fill(const xt::xarray<bool>& mask, T value) const;
  Tensor tril(std::int64_t diagonal = 0) const;
  Tensor triu(std::int64_t diagonal = 0) const;
  ///@}

  /// @name In-place ops, as torch's (`x += y`, `x.fill_(0)`, `x.index_put_({0}, row)`)
  /// Each changes this tensor's values for every handle of it and returns *this. The result keeps this
  /// tensor's shape: an operand that would broadcast it larger throws ShapeError.
  ///
  /// Autograd follows torch. While grad mode is on, a leaf that requires grad (a parameter) refuses
  /// them with std::logic_error: change it under NoGradGuard, as an optimizer step does. When this
  /// tensor or the operand requires grad (and grad mode is on) the op is recorded: the tensor becomes
  /// its output (grad_fn AddBackward for +=, ...) and the gradient flows through its former history and
  /// to the operand. fill_ and copy_ pass a zero gradient to the former history, index_put_ and
  /// masked_fill_ pass it where they did not write.
  ///
  /// The new values go into the storage, which every detach() of the tensor shares too, unless a
  /// backward not yet run holds the old values (an op saved them): then the tensor gets new storage,
  /// so that gradient stays right, and a detach() taken before keeps the old values.
  ///
  /// They are for named tensors only: `x[0] += 1` or `x.select(0, 1).fill_(0)` would change a copy
  /// (select returns one), so they do not compile; write parts with index_put_.
  ///@{
  Tensor& operator+=(const Tensor& other) &;
  Tensor& operator-=(const Tensor& other) &;
  Tensor& operator*=(const Tensor& other) &;
  Tensor& operator/=(const Tensor& other) &;
  Tensor& operator+=(T value) &;
  Tensor& operator-=(T value) &;
  Tensor& operator*=(T value) &;
  Tensor& operator/=(T value) &;
  /// Every element set to value (torch's fill_), or to 0.
  Tensor& fill_(T value) &;
  Tensor& zero_() &;
  /// src's values, broadcast to this tensor's shape (torch's copy_); the gradient goes to src.
  Tensor& copy_(const Tensor& src) &;
  /// value where mask (broadcast to this tensor's shape) is true.
  Tensor& masked_fill_(const xt::xarray<bool>& mask, T value) &;
  /// LibTorch's x.index_put_({...}, values): the part x.index({...}) reads set to values, broadcast to
  /// its shape (autograd/indexing.hpp), as Python's `x[0, 1:3] = values`.
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values) &;
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, T value) &;
  ///@}

  /// For op implementations (autograd/tape.hpp).
  const std::shared_ptr<AutogradMeta<T>>& meta() const;
  bool same_as(const Tensor& other) const { return impl_ == other.impl_; }

 private:
  struct Impl {
    std::shared_ptr<xt::xarray<T>> value;
    std::shared_ptr<AutogradMeta<T>> meta;
    /// Shared by the Impls whose value is one storage (a tensor and its detach()es), null while there
    /// is one: the value's use count beyond its own counts the saved() copies backward closures hold.
    std::shared_ptr<const bool> sharers;
  };
  const Impl& impl() const;
  /// Whether a backward closure holds this tensor's storage (saved() copies beyond its handles).
  bool storage_saved() const;
  /// The in-place ops' common part (tensor_in_place.cpp): refuses a leaf that requires grad under grad
  /// mode; then, when nothing is `recorded` and no backward holds the storage, lets `write` change it
  /// directly (if it is not nullptr), else makes `result()` (the out-of-place op, recorded when it
  /// should be) this tensor's values, and its history when it was recorded.
  template <typename Result, typename Write>
  Tensor& in_place(const char* op, bool recorded, Result&& result, Write&& write);
  std::shared_ptr<Impl> impl_;
};

/// What topk and sort return, as torch's (values, indices) named tuple: `auto [v, i] = topk(x, 3);`.
template <typename T>
struct ValuesIndices {
  Tensor<T> values;    ///< differentiable: the gradient goes back to the positions in indices
  IndexArray indices;  ///< where each value sits along the dim, int64 as in torch
};

/// Prints the tensor as torch's repr does: `tensor([[1.0000, 2.0000]], dtype=float64,
/// grad_fn=<AddBackward>)`. Values use torch's formatter (4 decimals, or scientific notation or
/// whole numbers when torch would choose them, one width for all), more than 1000 elements are
/// summarised with the first and last 3 of each dim around `...`, lines wrap at 80 characters, and
/// the suffixes follow: `dtype=float64` for double (float32 is the default dtype and not shown, as in
/// torch), `grad_fn=<NameBackward>` for an op's output (the op's name in CamelCase) or
/// `requires_grad=True` for a leaf that requires grad. An empty tensor prints `tensor([])`, with
/// `size=(0, 3)` when it is not 1-D. An undefined tensor prints `tensor(undefined)`.
template <typename T>
std::ostream& operator<<(std::ostream& os, const Tensor<T>& tensor);

/// Short names for the two element types.
///@{
using TensorF = Tensor<float>;
using TensorD = Tensor<double>;
///@}

extern template class Tensor<float>;
extern template class Tensor<double>;

}  // namespace tapegrad
