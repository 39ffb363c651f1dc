#include "tapegrad/autograd/broadcast.hpp"

#include <fmt/format.h>

namespace tapegrad {

std::vector<std::size_t> broadcast_strides(const Shape& shape, std::size_t rank) {
  std::vector<std::size_t> strides(rank, 0);
  const auto own = contiguous_strides(shape);
  const std::size_t lead = rank - shape.size();
  for (std::size_t i = 0; i < shape.size(); ++i) strides[lead + i] = shape[i] == 1 ? 0 : own[i];
  return strides;
}

template <typename T>
xt::xarray<T> unbroadcast(xt::xarray<T> g, const Shape& shape) {
  const Shape gs = shape_of(g);
  if (gs == shape) return g;
  bool reducible = shape.size() <= gs.size();
  if (reducible) {
    try {
      reducible = broadcast_shapes("unbroadcast", gs, shape) == gs;
    } catch (const ShapeError&) {  // report it below, as a gradient that cannot be reduced
      reducible = false;
    }
  }
  if (!reducible) {
    throw ShapeError(fmt::format("unbroadcast: a gradient of shape {} cannot be reduced to shape {}", format_shape(gs),
                                 format_shape(shape)));
  }
  xt::xarray<T> out = xt::zeros<T>(shape);
  const T* pg = g.data();
  T* po = out.data();
  const auto g_strides = contiguous_strides(gs);
  for_each_broadcast_run(
      gs, g_strides, broadcast_strides(shape, gs.size()),
      [&](std::size_t, std::size_t ig, std::size_t io, std::size_t n, std::size_t, std::size_t dout) {
        if (dout == 0) {
          T acc = 0;
          for (std::size_t i = 0; i < n; ++i) acc += pg[ig + i];
          po[io] += acc;
        } else {
          for (std::size_t i = 0; i < n; ++i) po[io + i] += pg[ig + i];
        }
      });
  return out;
}

template xt::xarray<float> unbroadcast<float>(xt::xarray<float>, const Shape&);
template xt::xarray<double> unbroadcast<double>(xt::xarray<double>, const Shape&);

}  // namespace tapegrad
