#include "tapegrad/autograd/strided_view.hpp"

#include <xtensor/xbuilder.hpp>

#include "tapegrad/autograd/strided_copy.hpp"
#include "tapegrad/autograd/tape.hpp"

namespace tapegrad {

template <typename T>
Tensor<T> take_view(const Tensor<T>& x, const char* op, const StridedView& v) {
  Tensor<T> out(gather_strided(v.shape, x.data().data() + v.offset, v.strides));
  if (should_record(x)) {
    // A window over every input element (a permutation) needs no zero fill of the gradient.
    const bool covers_all = numel(v.shape) == x.numel() && v.offset == 0;
    record(out, op, {x}, [v, in_shape = x.shape(), covers_all](const xt::xarray<T>& g, GradInputs<T>& in) {
      xt::xarray<T> dx = covers_all ? xt::xarray<T>::from_shape(in_shape) : xt::xarray<T>(xt::zeros<T>(in_shape));
      strided_copy(v.shape, g.data(), contiguous_strides(v.shape), dx.data() + v.offset, v.strides);
      in.accumulate(0, std::move(dx));
    });
  }
  return out;
}

template Tensor<float> take_view<float>(const Tensor<float>&, const char*, const StridedView&);
template Tensor<double> take_view<double>(const Tensor<double>&, const char*, const StridedView&);

}  // namespace tapegrad
