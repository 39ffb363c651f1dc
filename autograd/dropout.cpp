#include "tapegrad/autograd/dropout.hpp"

#include <fmt/format.h>

#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/instantiate.hpp"
#include "tapegrad/autograd/parallel.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad {

namespace {
// out[i] = keep(i) ? in[i] * scale : 0, split over the threads (each element decides alone).
template <typename T>
void apply_mask(const detail::DropoutMask& mask, T scale, const T* in, T* out, std::size_t n) {
  detail::parallel_for(n, 1 << 15, [&](std::size_t begin, std::size_t end) {
    mask.apply(in + begin, out + begin, scale, begin, end - begin);
  });
}
}  // namespace

template <typename T>
Tensor<T> dropout(const Tensor<T>& x, double p, bool training, Generator& gen) {
  if (!(p >= 0.0 && p <= 1.0)) {
    throw ShapeError(fmt::format("dropout: probability p must lie in [0, 1], got {}", p));
  }
  if (!training || p == 0.0) return x;  // the same tensor, as torch returns its input
  if (p == 1.0) return mul(x, T(0));    // torch's x * 0: no draw, and inf or NaN stays NaN
  const detail::DropoutMask mask(gen.next_u64(), p);
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  xt::xarray<T> y = xt::xarray<T>::from_shape(x.shape());
  apply_mask(mask, scale, x.data().data(), y.data(), x.numel());
  Tensor<T> out(std::move(y));
  if (should_record(x))
    record(out, "dropout", {x}, [mask, scale](const xt::xarray<T>& g, GradInputs<T>& in) {
      xt::xarray<T> dx = in.take_grad_output(g);
      apply_mask(mask, scale, dx.data(), dx.data(), dx.size());
      in.accumulate(0, std::move(dx));
    });
  return out;
}

TAPEGRAD_INSTANTIATE(dropout);

}  // namespace tapegrad
