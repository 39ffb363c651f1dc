#include "autograd/dropout.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "autograd/tape.hpp"

namespace tapegrad {

template <typename T>
Tensor<T> dropout(const Tensor<T>& x, double p, bool training, Generator& gen) {
  if (!(p >= 0.0 && p < 1.0)) {
    throw ShapeError(fmt::format("dropout: probability p must lie in [0, 1), got {}", p));
  }
  if (!training || p == 0.0) return x;  // the same tensor, as torch returns its input
  // One draw per element in row-major order, so a seeded generator reproduces the mask.
  const std::size_t n = x.numel();
  auto keep = std::make_shared<std::vector<std::uint8_t>>(n);
  for (std::size_t i = 0; i < n; ++i) (*keep)[i] = gen.uniform() >= p ? 1 : 0;
  const T scale = static_cast<T>(1.0 / (1.0 - p));
  xt::xarray<T> y = xt::xarray<T>::from_shape(x.shape());
  const T* px = x.data().data();
  T* py = y.data();
  for (std::size_t i = 0; i < n; ++i) py[i] = (*keep)[i] ? px[i] * scale : T(0);
  Tensor<T> out(std::move(y));
  if (should_record(x))
    record(out, "dropout", {x}, [keep, scale](const xt::xarray<T>& g, GradInputs<T>& in) {
      xt::xarray<T> dx = xt::xarray<T>::from_shape(g.shape());
      const T* pg = g.data();
      T* pd = dx.data();
      const std::size_t n = g.size();
      for (std::size_t i = 0; i < n; ++i) pd[i] = (*keep)[i] ? pg[i] * scale : T(0);
      in.accumulate(0, std::move(dx));
    });
  return out;
}

template Tensor<float> dropout<float>(const Tensor<float>&, double, bool, Generator&);
template Tensor<double> dropout<double>(const Tensor<double>&, double, bool, Generator&);

}  // namespace tapegrad
