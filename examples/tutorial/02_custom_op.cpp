// examples/tutorial/02_custom_op.cpp
#include <iostream>
#include <tapegrad/tapegrad.hpp>
#include <xtensor/xmath.hpp>

using namespace tapegrad;

// softplus(x) = log(1 + exp(x)), an op of our own. The forward and the backward stand together: the
// closure given to record() is the backward, and it captures only what it reads (x's value, shared
// without a copy through saved()), never a Tensor.
template <typename T>
Tensor<T> softplus(const Tensor<T>& x) {
  // log(1 + exp(x)) = max(x, 0) + log(1 + exp(-|x|)): no overflow for large x.
  Tensor<T> out(xt::xarray<T>(xt::maximum(x.data(), T(0)) + xt::log1p(xt::exp(-xt::abs(x.data())))));
  if (should_record(x))
    record(out, "softplus", {x}, [x_val = x.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      // d softplus / dx = sigmoid(x); the chain rule multiplies by g, the gradient of the output.
      if (in.needs(0)) in.accumulate(0, xt::xarray<T>(g / (T(1) + xt::exp(-*x_val))));
    });
  return out;
}

// The same op with a mistake in its backward: the factor g is forgotten.
template <typename T>
Tensor<T> softplus_wrong(const Tensor<T>& x) {
  Tensor<T> out(xt::xarray<T>(xt::maximum(x.data(), T(0)) + xt::log1p(xt::exp(-xt::abs(x.data())))));
  if (should_record(x))
    record(out, "softplus_wrong", {x}, [x_val = x.saved()](const xt::xarray<T>&, GradInputs<T>& in) {
      if (in.needs(0)) in.accumulate(0, xt::xarray<T>(T(1) / (T(1) + xt::exp(-*x_val))));
    });
  return out;
}

int main() {
  Generator gen(0);
  auto x = Tensor<double>::uniform({3, 4}, -5.0, 5.0, gen, /*requires_grad=*/true);

  // The op composes with the others, and backward() runs through it.
  auto loss = mean(softplus(x));
  loss.backward();
  std::cout << "mean(softplus(x)) = " << loss.item() << ", made by " << loss.grad_fn_name() << "\n";

  // gradcheck compares the backward with central finite differences, element by element, in double.
  auto ok = gradcheck([](const std::vector<Tensor<double>>& in) { return softplus(in[0]); }, {x});
  std::cout << "gradcheck(softplus): " << (ok ? "passed" : ok.message) << "\n";

  auto wrong = gradcheck([](const std::vector<Tensor<double>>& in) { return softplus_wrong(in[0]); }, {x});
  std::cout << "gradcheck(softplus_wrong): " << (wrong ? "passed" : wrong.message) << "\n";

  return ok && !wrong ? 0 : 1;
}
