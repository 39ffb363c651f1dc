#include "tapegrad/autograd/loss.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "tapegrad/autograd/broadcast.hpp"
#include "tapegrad/autograd/elementwise_kernels.hpp"
#include "tapegrad/autograd/instantiate.hpp"
#include "tapegrad/autograd/parallel.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/autograd/vector_math.hpp"

namespace tapegrad {

namespace {

// The checked targets of a classification loss over `rows` samples of `classes` classes.
struct Targets {
  std::size_t rows = 0, classes = 0;
  bool batched = true;  // input [N, C] (false: input [C] with a 0-d target)
  std::int64_t ignore_index = -100;
  std::vector<std::int64_t> index;
  std::size_t counted = 0;  // targets that are not ignore_index
  bool ignored(std::size_t i) const { return index[i] == ignore_index; }
};

Targets check_targets(const char* op, const Shape& input, const IndexArray& target, std::int64_t ignore_index) {
  const Shape ts(target.shape().begin(), target.shape().end());
  Targets t;
  t.ignore_index = ignore_index;
  if (input.size() == 2) {
    t.rows = input[0];
    t.classes = input[1];
    if (ts != Shape{t.rows}) {
      throw ShapeError(fmt::format("{}: target of shape {} does not match input {} (expected target [{}])", op,
                                   format_shape(ts), format_shape(input), t.rows));
    }
  } else if (input.size() == 1) {
    t.rows = 1;
    t.classes = input[0];
    t.batched = false;
    if (!ts.empty()) {
      throw ShapeError(fmt::format("{}: an unbatched input {} needs a 0-d target, got target of shape {}", op,
                                   format_shape(input), format_shape(ts)));
    }
  } else {
    throw ShapeError(fmt::format("{}: input must be [N, C] or [C], got {}", op, format_shape(input)));
  }
  t.index.assign(target.data(), target.data() + t.rows);
  const auto classes = static_cast<std::int64_t>(t.classes);
  for (std::size_t i = 0; i < t.rows; ++i) {
    const std::int64_t k = t.index[i];
    if (k == ignore_index) continue;
    if (k < 0 || k >= classes) {
      throw ShapeError(
          fmt::format("{}: target {} at position {} is out of range for {} classes (expected 0 to {}, or "
                      "ignore_index {})",
                      op, k, i, t.classes, classes - 1, ignore_index));
    }
    ++t.counted;
  }
  return t;
}

// Reduces per-sample losses; Mean over zero counted targets is 0/0 = NaN, as in torch.
template <typename T>
xt::xarray<T> reduce_losses(const std::vector<double>& losses, const Targets& t, Reduction reduction) {
  if (reduction == Reduction::None) {
    xt::xarray<T> out = xt::xarray<T>::from_shape(t.batched ? Shape{t.rows} : Shape{});
    for (std::size_t i = 0; i < t.rows; ++i) out.data()[i] = static_cast<T>(losses[i]);
    return out;
  }
  double total = 0;
  for (double v : losses) total += v;
  if (reduction == Reduction::Mean) total /= static_cast<double>(t.counted);
  xt::xarray<T> out = xt::xarray<T>::from_shape(Shape{});
  out() = static_cast<T>(total);
  return out;
}

// The factor each sample's gradient is scaled by: the output gradient, divided by the count for Mean.
template <typename T>
T row_scale(const xt::xarray<T>& g, std::size_t i, const Targets& t, Reduction reduction) {
  if (reduction == Reduction::None) return g.data()[i];
  if (reduction == Reduction::Sum) return g.data()[0];
  return g.data()[0] / static_cast<T>(t.counted);
}

// The elementwise losses (mse, l1, binary cross-entropy): the losses themselves for None, else their
// sum or mean accumulated in double (the mean of no elements is 0/0 = NaN, as in torch).
template <typename T>
xt::xarray<T> reduce_elementwise(xt::xarray<T>&& losses, Reduction reduction) {
  if (reduction == Reduction::None) return std::move(losses);
  double total = 0;
  const T* p = losses.data();
  for (std::size_t i = 0; i < losses.size(); ++i) total += static_cast<double>(p[i]);
  if (reduction == Reduction::Mean) total /= static_cast<double>(losses.size());
  xt::xarray<T> out = xt::xarray<T>::from_shape(Shape{});
  out() = static_cast<T>(total);
  return out;
}

// The gradient reaching each element's loss: g itself for None, else g (Sum) or g / numel (Mean)
// spread over `shape`.
template <typename T>
xt::xarray<T> elementwise_upstream(const xt::xarray<T>& g, const Shape& shape, Reduction reduction) {
  if (reduction == Reduction::None) return g;
  xt::xarray<T> out = xt::xarray<T>::from_shape(shape);
  const T v = reduction == Reduction::Sum ? g() : g() / static_cast<T>(numel(shape));
  std::fill(out.begin(), out.end(), v);
  return out;
}

// A weight of a binary cross-entropy, expanded to the input's shape (null when undefined). Like torch,
// these losses are not differentiable in their weights, so one that requires grad is refused.
template <typename T>
std::shared_ptr<const xt::xarray<T>> expand_weight(const char* op, const char* what, const Tensor<T>& w,
                                                   const Shape& shape) {
  if (!w.defined()) return nullptr;
  if (w.requires_grad() && is_grad_enabled())
    throw ShapeError(
        fmt::format("{}: not differentiable with respect to {}, which requires grad (detach() it)", op, what));
  if (broadcast_shapes(op, w.shape(), shape) != shape)
    throw ShapeError(fmt::format("{}: {} of shape {} does not broadcast to the input's shape {}", op, what,
                                 format_shape(w.shape()), format_shape(shape)));
  if (w.shape() == shape) return w.saved();
  return std::make_shared<const xt::xarray<T>>(
      broadcast_apply(op, w.data(), xt::xarray<T>(xt::zeros<T>(shape)), [](T a, T) { return a; }));
}

// Throws for BatchMean (kl_div's only, as in torch) and for a value outside the enum.
void check_reduction(const char* op, Reduction reduction, bool batchmean_allowed = false) {
  const int v = static_cast<int>(reduction);
  const bool known = v >= static_cast<int>(Reduction::None) && v <= static_cast<int>(Reduction::BatchMean);
  if (!known || (reduction == Reduction::BatchMean && !batchmean_allowed)) {
    throw ShapeError(fmt::format(
        "{}: reduction {} is not one of {}", op, known ? std::string("'batchmean'") : fmt::format("({})", v),
        batchmean_allowed ? "None, Mean, Sum, BatchMean" : "None, Mean, Sum (BatchMean is kl_div's)"));
  }
}

// The elementwise regression losses (mse, l1, smooth_l1, huber): loss(d) of d = input - target, with
// broadcasting and reductions; grad(g, d) is the input's gradient element given the upstream g, and the
// target's is its negative.
template <typename T, typename Loss, typename Grad>
Tensor<T> difference_loss(const char* op, const Tensor<T>& input, const Tensor<T>& target, Reduction reduction,
                          Loss loss, Grad grad) {
  check_reduction(op, reduction);
  auto diff = std::make_shared<const xt::xarray<T>>(
      broadcast_apply(op, input.data(), target.data(), [](T a, T b) { return a - b; }));
  Tensor<T> out(reduce_elementwise(map(*diff, loss), reduction));
  if (should_record(input, target))
    record(out, op, {input, target},
           [diff, reduction, grad, sa = input.shape(), sb = target.shape()](const xt::xarray<T>& g, GradInputs<T>& in) {
             xt::xarray<T> d = zip(elementwise_upstream(g, shape_of(*diff), reduction), *diff, grad);
             if (in.needs(1)) in.accumulate(1, unbroadcast(map(d, [](T v) { return -v; }), sb));
             if (in.needs(0)) in.accumulate(0, unbroadcast(std::move(d), sa));
           });
  return out;
}

// The binary cross-entropies' checks (the reduction, a target of the input's shape), then their weight
// expanded to the input's shape (null when undefined).
template <typename T>
std::shared_ptr<const xt::xarray<T>> checked_binary_weight(const char* op, const Tensor<T>& input,
                                                           const Tensor<T>& target, Reduction reduction,
                                                           const Tensor<T>& weight) {
  check_reduction(op, reduction);
  if (input.shape() != target.shape())
    throw ShapeError(fmt::format("{}: target of shape {} does not match input {} (they must be equal)", op,
                                 format_shape(target.shape()), format_shape(input.shape())));
  return expand_weight(op, "weight", weight, input.shape());
}

}  // namespace

template <typename T>
Tensor<T> cross_entropy(const Tensor<T>& input, const IndexArray& target, const CrossEntropyOptions& options) {
  const double eps = options.label_smoothing;
  if (!(eps >= 0.0 && eps <= 1.0)) {
    throw ShapeError(fmt::format("cross_entropy: label_smoothing must lie in [0, 1], got {}", eps));
  }
  check_reduction("cross_entropy", options.reduction);
  auto t = std::make_shared<Targets>(check_targets("cross_entropy", input.shape(), target, options.ignore_index));
  const std::size_t rows = t->rows, classes = t->classes;
  // One pass per row: the log-softmax shift and the loss. The backward recomputes the probabilities
  // from the logits and two numbers per row (the max and 1 / sum) rather than reading a stored
  // [rows, classes] copy: for a language model's [tokens, vocabulary] logits (tens of millions of
  // entries) that saves an allocation of their size and two passes over it, and exp is cheap next to
  // the memory traffic.
  const bool recording = should_record(input);
  auto shift = std::make_shared<std::vector<T>>(recording ? rows : 0);    // max_c x_ic
  auto inv_sum = std::make_shared<std::vector<T>>(recording ? rows : 0);  // 1 / sum_c exp(x_ic - max)
  std::vector<double> losses(rows, 0.0);
  const T* x = input.data().data();
  // Rows are independent: split over the worker threads; each row's arithmetic is the same at any
  // thread count. The max, exp and sum go through vector_math's helpers, which vectorize (std::exp
  // and a plain float sum do not).
  detail::parallel_for(rows, std::max<std::size_t>(1, 16384 / std::max<std::size_t>(classes, 1)),
                       [&](std::size_t begin, std::size_t end) {
                         for (std::size_t i = begin; i < end; ++i) {
                           if (t->ignored(i)) continue;
                           const T* xr = x + i * classes;
                           const T mx = detail::row_max(xr, classes);
                           const T sum = detail::lane_sum<T>(
                               classes, [&](std::size_t c) { return detail::fast_exp(xr[c] - mx); });
                           if (recording) {
                             (*shift)[i] = mx;
                             (*inv_sum)[i] = T(1) / sum;
                           }
                           // -log p_c = (max - x_c) + log(sum), in this order: folding max into log(sum) first would
                           // round the small losses of confident predictions on logits far from 0 to the precision of
                           // max.
                           const double lse = std::log(static_cast<double>(sum));
                           const auto neg_log_p = [&](std::size_t c) {
                             return (static_cast<double>(mx) - static_cast<double>(xr[c])) + lse;
                           };
                           double loss = neg_log_p(static_cast<std::size_t>(t->index[i]));
                           if (eps > 0) {  // skipped at 0 so that a -inf logit elsewhere does not turn 0 * inf into NaN
                             double smooth = 0;
                             for (std::size_t c = 0; c < classes; ++c) smooth += neg_log_p(c);
                             loss = (1 - eps) * loss + eps * smooth / static_cast<double>(classes);
                           }
                           losses[i] = loss;
                         }
                       });
  Tensor<T> out(reduce_losses<T>(losses, *t, options.reduction));
  if (recording)
    record(out, "cross_entropy", {input},
           [logits = input.saved(), shift, inv_sum, t, reduction = options.reduction, eps](const xt::xarray<T>& g,
                                                                                           GradInputs<T>& in) {
             // d loss_i / d x_ic = p_ic - ((1 - eps) [c == t_i] + eps / C): softmax minus the smoothed one-hot.
             const std::size_t classes = t->classes;
             const T off = static_cast<T>(eps / static_cast<double>(classes));
             const T on = static_cast<T>(1 - eps) + off;
             xt::xarray<T> dx = xt::xarray<T>::from_shape(logits->shape());
             detail::parallel_for(t->rows, std::max<std::size_t>(1, 16384 / std::max<std::size_t>(classes, 1)),
                                  [&](std::size_t begin, std::size_t end) {
                                    for (std::size_t i = begin; i < end; ++i) {
                                      T* dr = dx.data() + i * classes;
                                      if (t->ignored(i)) {
                                        std::fill(dr, dr + classes, T(0));
                                        continue;
                                      }
                                      const T scale = row_scale(g, i, *t, reduction);
                                      const T* xr = logits->data() + i * classes;
                                      const T mx = (*shift)[i], inv = (*inv_sum)[i];
                                      for (std::size_t c = 0; c < classes; ++c)
                                        dr[c] = scale * (detail::fast_exp(xr[c] - mx) * inv - off);
                                      dr[t->index[i]] -= scale * (on - off);
                                    }
                                  });
             in.accumulate(0, std::move(dx));
           });
  return out;
}

template <typename T>
Tensor<T> nll_loss(const Tensor<T>& input, const IndexArray& target, Reduction reduction, std::int64_t ignore_index) {
  check_reduction("nll_loss", reduction);
  auto t = std::make_shared<Targets>(check_targets("nll_loss", input.shape(), target, ignore_index));
  std::vector<double> losses(t->rows, 0.0);
  const T* x = input.data().data();
  for (std::size_t i = 0; i < t->rows; ++i)
    if (!t->ignored(i)) losses[i] = -static_cast<double>(x[i * t->classes + t->index[i]]);
  Tensor<T> out(reduce_losses<T>(losses, *t, reduction));
  if (should_record(input))
    record(out, "nll_loss", {input}, [t, reduction, shape = input.shape()](const xt::xarray<T>& g, GradInputs<T>& in) {
      xt::xarray<T> dx = xt::zeros<T>(shape);
      for (std::size_t i = 0; i < t->rows; ++i)
        if (!t->ignored(i)) dx.data()[i * t->classes + t->index[i]] = -row_scale(g, i, *t, reduction);
      in.accumulate(0, std::move(dx));
    });
  return out;
}

template <typename T>
Tensor<T> mse_loss(const Tensor<T>& input, const Tensor<T>& target, Reduction reduction) {
  // d/d input (x - y)^2 = 2 (x - y), and the negative of it for the target.
  return difference_loss(
      "mse_loss", input, target, reduction, [](T d) { return d * d; }, [](T gv, T dv) { return T(2) * dv * gv; });
}

template <typename T>
Tensor<T> l1_loss(const Tensor<T>& input, const Tensor<T>& target, Reduction reduction) {
  return difference_loss(
      "l1_loss", input, target, reduction, [](T d) { return std::abs(d); },
      [](T gv, T dv) { return dv > 0   ? gv
                              : dv < 0 ? -gv
                                       : T(0); });
}

template <typename T>
Tensor<T> binary_cross_entropy(const Tensor<T>& input, const Tensor<T>& target,
                               const BinaryCrossEntropyOptions<T>& options) {
  const char* op = "binary_cross_entropy";
  const auto weight = checked_binary_weight(op, input, target, options.reduction, options.weight);
  const std::size_t n = input.numel();
  const T* x = input.data().data();
  const T* y = target.data().data();
  for (std::size_t i = 0; i < n; ++i) {
    if (!(x[i] >= T(0) && x[i] <= T(1)))
      throw ShapeError(
          fmt::format("{}: input {} at position {} is outside [0, 1] (it takes probabilities; use "
                      "binary_cross_entropy_with_logits for logits)",
                      op, x[i], i));
  }
  // Both logs clamped at -100, as torch: log(0) would make the loss infinite and 0 * log(0) NaN.
  // log(1 - x) rather than log1p(-x), to round as torch 1.13 does.
  const auto log_x = [](T v) { return std::max(std::log(v), T(-100)); };
  const auto log_1mx = [](T v) { return std::max(std::log(T(1) - v), T(-100)); };
  xt::xarray<T> losses = xt::xarray<T>::from_shape(input.shape());
  for (std::size_t i = 0; i < n; ++i) {
    const T l = (y[i] - T(1)) * log_1mx(x[i]) - y[i] * log_x(x[i]);
    losses.data()[i] = weight ? (*weight).data()[i] * l : l;
  }
  Tensor<T> out(reduce_elementwise(std::move(losses), options.reduction));
  if (should_record(input, target))
    record(out, op, {input, target},
           [x_val = input.saved(), y_val = target.saved(), weight, reduction = options.reduction, log_x, log_1mx](
               const xt::xarray<T>& g, GradInputs<T>& in) {
             const xt::xarray<T> up = elementwise_upstream(g, shape_of(*x_val), reduction);
             const std::size_t n = x_val->size();
             const T* x = x_val->data();
             const T* y = y_val->data();
             const auto w = [&](std::size_t i) { return weight ? (*weight).data()[i] : T(1); };
             if (in.needs(0)) {
               // torch's (x - y) / max(x (1 - x), eps): finite where the clamped logs are flat. eps is
               // 1e-12 rounded to float, as in torch 1.13 (in double too), so the gradients there agree.
               const T eps = static_cast<T>(1e-12f);
               xt::xarray<T> dx = xt::xarray<T>::from_shape(x_val->shape());
               for (std::size_t i = 0; i < n; ++i)
                 dx.data()[i] = up.data()[i] * w(i) * (x[i] - y[i]) / std::max((T(1) - x[i]) * x[i], eps);
               in.accumulate(0, std::move(dx));
             }
             if (in.needs(1)) {  // the loss is linear in the target
               xt::xarray<T> dy = xt::xarray<T>::from_shape(x_val->shape());
               for (std::size_t i = 0; i < n; ++i) dy.data()[i] = up.data()[i] * w(i) * (log_1mx(x[i]) - log_x(x[i]));
               in.accumulate(1, std::move(dy));
             }
           });
  return out;
}

template <typename T>
Tensor<T> binary_cross_entropy_with_logits(const Tensor<T>& input, const Tensor<T>& target,
                                           const BinaryCrossEntropyWithLogitsOptions<T>& options) {
  const char* op = "binary_cross_entropy_with_logits";
  const auto weight = checked_binary_weight(op, input, target, options.reduction, options.weight);
  const auto pos_weight = expand_weight(op, "pos_weight", options.pos_weight, input.shape());
  // softplus(-x) = log(1 + exp(-x)) as torch writes it: m + log(exp(-m) + exp(-x - m)) with
  // m = max(-x, 0), so no exponent is positive and nothing overflows.
  const auto softplus_neg = [](T v) {
    const T m = std::max(-v, T(0));
    return std::log(std::exp(-m) + std::exp(-v - m)) + m;
  };
  const std::size_t n = input.numel();
  const T* x = input.data().data();
  const T* y = target.data().data();
  xt::xarray<T> losses = xt::xarray<T>::from_shape(input.shape());
  for (std::size_t i = 0; i < n; ++i) {
    const T log_weight = pos_weight ? (pos_weight->data()[i] - T(1)) * y[i] + T(1) : T(1);
    const T l = (T(1) - y[i]) * x[i] + log_weight * softplus_neg(x[i]);
    losses.data()[i] = weight ? weight->data()[i] * l : l;
  }
  Tensor<T> out(reduce_elementwise(std::move(losses), options.reduction));
  if (should_record(input, target))
    record(out, op, {input, target},
           [x_val = input.saved(), y_val = target.saved(), weight, pos_weight, reduction = options.reduction,
            softplus_neg](const xt::xarray<T>& g, GradInputs<T>& in) {
             const xt::xarray<T> up = elementwise_upstream(g, shape_of(*x_val), reduction);
             const std::size_t n = x_val->size();
             const T* x = x_val->data();
             const T* y = y_val->data();
             const auto w = [&](std::size_t i) { return weight ? weight->data()[i] : T(1); };
             const auto pw = [&](std::size_t i) { return pos_weight ? pos_weight->data()[i] : T(1); };
             if (in.needs(0)) {
               // d/dx = (pw y + 1 - y) sigmoid(x) - pw y, with sigmoid written so exp never overflows.
               xt::xarray<T> dx = xt::xarray<T>::from_shape(x_val->shape());
               for (std::size_t i = 0; i < n; ++i) {
                 const T e = std::exp(-std::abs(x[i]));
                 const T s = x[i] >= 0 ? T(1) / (T(1) + e) : e / (T(1) + e);
                 const T py = pw(i) * y[i];
                 dx.data()[i] = up.data()[i] * w(i) * ((py + T(1) - y[i]) * s - py);
               }
               in.accumulate(0, std::move(dx));
             }
             if (in.needs(1)) {  // d/dy = -x + (pw - 1) softplus(-x)
               xt::xarray<T> dy = xt::xarray<T>::from_shape(x_val->shape());
               for (std::size_t i = 0; i < n; ++i)
                 dy.data()[i] = up.data()[i] * w(i) * ((pw(i) - T(1)) * softplus_neg(x[i]) - x[i]);
               in.accumulate(1, std::move(dy));
             }
           });
  return out;
}

template <typename T>
Tensor<T> smooth_l1_loss(const Tensor<T>& input, const Tensor<T>& target, Reduction reduction, double beta) {
  if (!(beta >= 0)) throw ShapeError(fmt::format("smooth_l1_loss: beta must be >= 0, got {}", beta));
  const T b = static_cast<T>(beta);
  // torch's forms: 0.5 z^2 / beta inside, z - 0.5 beta outside (z = |d|); at beta = 0 nothing is inside.
  return difference_loss(
      "smooth_l1_loss", input, target, reduction,
      [b](T d) {
        const T z = std::abs(d);
        return z < b ? T(0.5) * z * z / b : z - T(0.5) * b;
      },
      [b](T gv, T d) {
        return gv * (d < -b ? T(-1) : d > b ? T(1) : b == T(0) ? T(0) : d / b);
      });
}

template <typename T>
Tensor<T> huber_loss(const Tensor<T>& input, const Tensor<T>& target, Reduction reduction, double delta) {
  if (!(delta > 0)) throw ShapeError(fmt::format("huber_loss: delta must be > 0, got {}", delta));
  const T h = static_cast<T>(delta);
  return difference_loss(
      "huber_loss", input, target, reduction,
      [h](T d) {
        const T z = std::abs(d);
        return z < h ? T(0.5) * z * z : h * (z - T(0.5) * h);
      },
      [h](T gv, T d) {
        return gv * (d < -h ? -h : d > h ? h : d);
      });
}

template <typename T>
Tensor<T> kl_div(const Tensor<T>& input, const Tensor<T>& target, Reduction reduction, bool log_target) {
  const char* op = "kl_div";
  check_reduction(op, reduction, /*batchmean_allowed=*/true);
  // torch 1.13's composite: xlogy(t, t) - t x, or exp(t) (t - x) for a log target.
  xt::xarray<T> losses = broadcast_apply(op, input.data(), target.data(), [log_target](T x, T t) {
    if (log_target) return std::exp(t) * (t - x);
    return (t == T(0) ? T(0) : t * std::log(t)) - t * x;
  });
  const Shape shape = shape_of(losses);
  // batchmean: the sum over input's size of dim 0 (a 0-d input: the sum), as torch.
  const double batch = input.dim() == 0 ? 1.0 : static_cast<double>(input.shape()[0]);
  xt::xarray<T> reduced;
  if (reduction == Reduction::BatchMean) {
    reduced = reduce_elementwise(std::move(losses), Reduction::Sum);
    reduced() = static_cast<T>(static_cast<double>(reduced()) / batch);
  } else {
    reduced = reduce_elementwise(std::move(losses), reduction);
  }
  Tensor<T> out(std::move(reduced));
  if (should_record(input, target))
    record(out, op, {input, target},
           [x_val = input.saved(), t_val = target.saved(), reduction, log_target, batch, shape, sa = input.shape(),
            sb = target.shape()](const xt::xarray<T>& g, GradInputs<T>& in) {
             xt::xarray<T> up;
             if (reduction == Reduction::BatchMean) {
               up = xt::xarray<T>::from_shape(shape);
               std::fill(up.begin(), up.end(), static_cast<T>(g() / batch));
             } else {
               up = elementwise_upstream(g, shape, reduction);
             }
             if (in.needs(0)) {  // d/dx = -t, or -exp(t)
               xt::xarray<T> slope = broadcast_apply("kl_div", *x_val, *t_val,
                                                     [log_target](T, T t) { return log_target ? -std::exp(t) : -t; });
               in.accumulate(0, unbroadcast(zip(up, slope, [](T u, T s) { return u * s; }), sa));
             }
             if (in.needs(1)) {
               // d/dt = log(t) + 1 - x (xlogy's 0 / 0 = NaN at t = 0, as torch), or exp(t) (t - x + 1).
               xt::xarray<T> slope = broadcast_apply("kl_div", *x_val, *t_val, [log_target](T x, T t) {
                 if (log_target) return std::exp(t) * (t - x + 1);
                 return (t == T(0) ? std::numeric_limits<T>::quiet_NaN() : std::log(t) + 1) - x;
               });
               in.accumulate(1, unbroadcast(zip(up, slope, [](T u, T s) { return u * s; }), sb));
             }
           });
  return out;
}

TAPEGRAD_INSTANTIATE(cross_entropy);
TAPEGRAD_INSTANTIATE(nll_loss);
TAPEGRAD_INSTANTIATE(mse_loss);
TAPEGRAD_INSTANTIATE(l1_loss);
TAPEGRAD_INSTANTIATE(binary_cross_entropy);
TAPEGRAD_INSTANTIATE(binary_cross_entropy_with_logits);

TAPEGRAD_INSTANTIATE(smooth_l1_loss);
TAPEGRAD_INSTANTIATE(huber_loss);
TAPEGRAD_INSTANTIATE(kl_div);

}  // namespace tapegrad
