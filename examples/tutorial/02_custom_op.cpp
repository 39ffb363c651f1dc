// examples/tutorial/02_custom_op.cpp
#include <algorithm>
#include <cmath>
#include <iostream>
#include <tapegrad/tapegrad.hpp>

using namespace tapegrad;

// my_softplus(x) = log(1 + exp(x)), an op of our own (tapegrad::softplus, written again). The forward
// and the backward stand together: the closure given to record() is the backward, and it captures only
// what it reads (x's value, shared without a copy through saved()), never a Tensor. map and zip loop
// over the elements of one array, or of two arrays of one shape, the way tapegrad's own elementwise
// ops do.
template <typename T>
T softplus_value(T v) {
  return std::max(v, T(0)) + std::log1p(std::exp(-std::abs(v)));  // no overflow for large v
}
template <typename T>
T sigmoid_value(T v) {
  return T(1) / (T(1) + std::exp(-v));
}

template <typename T>
Tensor<T> my_softplus(const Tensor<T>& x) {
  Tensor<T> out(map(x.data(), softplus_value<T>));
  if (should_record(x))
    record(out, "my_softplus", {x}, [x_val = x.saved()](const xt::xarray<T>& g, GradInputs<T>& in) {
      // d my_softplus / dx = sigmoid(x); the chain rule multiplies by g, the gradient of the output.
      if (in.needs(0)) in.accumulate(0, zip(g, *x_val, [](T gv, T xv) { return gv * sigmoid_value(xv); }));
    });
  return out;
}

// The same op with a mistake in its backward: the factor g is forgotten.
template <typename T>
Tensor<T> my_softplus_wrong(const Tensor<T>& x) {
  Tensor<T> out(map(x.data(), softplus_value<T>));
  if (should_record(x))
    record(out, "my_softplus_wrong", {x}, [x_val = x.saved()](const xt::xarray<T>&, GradInputs<T>& in) {
      if (in.needs(0)) in.accumulate(0, map(*x_val, sigmoid_value<T>));
    });
  return out;
}

int main() {
  Generator gen(0);
  auto x = Tensor<double>::uniform({3, 4}, -5.0, 5.0, gen, /*requires_grad=*/true);

  // The op composes with the others, and backward() runs through it.
  auto loss = my_softplus(x).mean();
  loss.backward();
  std::cout << "my_softplus(x).mean() = " << loss.item() << ", made by " << loss.grad_fn_name() << "\n";

  // gradcheck compares the backward with central finite differences, element by element, in double.
  auto ok = gradcheck([](const std::vector<Tensor<double>>& in) { return my_softplus(in[0]); }, {x});
  std::cout << "gradcheck(my_softplus): " << (ok ? "passed" : ok.message) << "\n";

  auto wrong = gradcheck([](const std::vector<Tensor<double>>& in) { return my_softplus_wrong(in[0]); }, {x});
  std::cout << "gradcheck(my_softplus_wrong): " << (wrong ? "passed" : wrong.message) << "\n";

  return ok && !wrong ? 0 : 1;
}
