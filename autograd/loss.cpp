#include "tapegrad/autograd/loss.hpp"

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <vector>

#include "tapegrad/autograd/tape.hpp"

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

}  // namespace

template <typename T>
Tensor<T> cross_entropy(const Tensor<T>& input, const IndexArray& target, const CrossEntropyOptions& options) {
  const double eps = options.label_smoothing;
  if (!(eps >= 0.0 && eps <= 1.0)) {
    throw ShapeError(fmt::format("cross_entropy: label_smoothing must lie in [0, 1], got {}", eps));
  }
  auto t = std::make_shared<Targets>(check_targets("cross_entropy", input.shape(), target, options.ignore_index));
  const std::size_t rows = t->rows, classes = t->classes;
  // One pass per row: the log-softmax shift, the loss, and the probabilities the backward reads.
  // The probabilities are kept for the backward only when it will run; otherwise one row of scratch.
  const bool recording = should_record(input);
  auto probs = std::make_shared<xt::xarray<T>>(xt::xarray<T>::from_shape(recording ? input.shape() : Shape{classes}));
  std::vector<double> losses(rows, 0.0);
  const T* x = input.data().data();
  for (std::size_t i = 0; i < rows; ++i) {
    const T* xr = x + i * classes;
    T* pr = probs->data() + (recording ? i * classes : 0);
    if (t->ignored(i)) {
      std::fill(pr, pr + classes, T(0));
      continue;
    }
    T mx = xr[0];
    for (std::size_t c = 1; c < classes; ++c) mx = std::max(mx, xr[c]);
    T sum = 0;
    for (std::size_t c = 0; c < classes; ++c) {
      pr[c] = std::exp(xr[c] - mx);
      sum += pr[c];
    }
    // -log p_c = (max - x_c) + log(sum), in this order: folding max into log(sum) first would round
    // the small losses of confident predictions on logits far from 0 to the precision of max.
    const double lse = std::log(static_cast<double>(sum));
    const T inv = T(1) / sum;
    for (std::size_t c = 0; c < classes; ++c) pr[c] *= inv;
    const auto neg_log_p = [&](std::size_t c) { return (static_cast<double>(mx) - static_cast<double>(xr[c])) + lse; };
    double loss = neg_log_p(static_cast<std::size_t>(t->index[i]));
    if (eps > 0) {  // skipped at 0 so that a -inf logit elsewhere does not turn 0 * inf into NaN
      double smooth = 0;
      for (std::size_t c = 0; c < classes; ++c) smooth += neg_log_p(c);
      loss = (1 - eps) * loss + eps * smooth / static_cast<double>(classes);
    }
    losses[i] = loss;
  }
  Tensor<T> out(reduce_losses<T>(losses, *t, options.reduction));
  if (recording)
    record(out, "cross_entropy", {input},
           [probs, t, reduction = options.reduction, eps](const xt::xarray<T>& g, GradInputs<T>& in) {
             // d loss_i / d x_ic = p_ic - ((1 - eps) [c == t_i] + eps / C): softmax minus the smoothed one-hot.
             const std::size_t classes = t->classes;
             const T off = static_cast<T>(eps / static_cast<double>(classes));
             const T on = static_cast<T>(1 - eps) + off;
             xt::xarray<T> dx = xt::xarray<T>::from_shape(probs->shape());
             for (std::size_t i = 0; i < t->rows; ++i) {
               T* dr = dx.data() + i * classes;
               if (t->ignored(i)) {
                 std::fill(dr, dr + classes, T(0));
                 continue;
               }
               const T scale = row_scale(g, i, *t, reduction);
               const T* pr = probs->data() + i * classes;
               for (std::size_t c = 0; c < classes; ++c) dr[c] = scale * (pr[c] - off);
               dr[t->index[i]] -= scale * (on - off);
             }
             in.accumulate(0, std::move(dx));
           });
  return out;
}

template <typename T>
Tensor<T> nll_loss(const Tensor<T>& input, const IndexArray& target, Reduction reduction, std::int64_t ignore_index) {
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

template Tensor<float> cross_entropy<float>(const Tensor<float>&, const IndexArray&, const CrossEntropyOptions&);
template Tensor<double> cross_entropy<double>(const Tensor<double>&, const IndexArray&, const CrossEntropyOptions&);
template Tensor<float> nll_loss<float>(const Tensor<float>&, const IndexArray&, Reduction, std::int64_t);
template Tensor<double> nll_loss<double>(const Tensor<double>&, const IndexArray&, Reduction, std::int64_t);

}  // namespace tapegrad
