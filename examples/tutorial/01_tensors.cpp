// examples/tutorial/01_tensors.cpp
#include <iostream>
#include <tapegrad/tapegrad.hpp>
#include <xtensor/xio.hpp>

using namespace tapegrad;

int main() {
  // Leaves that require grad, like torch.tensor([...], requires_grad=True).
  auto x = Tensor<double>::from_vector({1.0, 2.0, 3.0}, {3}, /*requires_grad=*/true);
  auto w = Tensor<double>::from_vector({0.5, -1.0, 2.0}, {3}, /*requires_grad=*/true);

  // y = sum(w * x^2), written as in torch. Each op computes its value now and records its backward.
  auto y = (w * x.pow(2)).sum();
  std::cout << y << "\n";  // printed as torch prints it

  // backward() walks the tape from y and fills .grad() of every leaf that requires grad.
  y.backward();
  std::cout << "dy/dx = " << x.grad() << "   (2 w x)\n";
  std::cout << "dy/dw = " << w.grad() << "   (x^2)\n";

  // Shapes, reductions over a dim and matrix products, as the torch.Tensor methods of the same names.
  auto m = Tensor<double>::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  std::cout << m.sum({1}, /*keepdim=*/true) << "\n";
  std::cout << "m.t().matmul(m) has shape " << format_shape(m.t().matmul(m).shape()) << "\n";

  // Under NoGradGuard nothing is recorded (torch.no_grad()).
  {
    NoGradGuard no_grad;
    auto z = x * 3.0;
    std::cout << "under NoGradGuard, z requires grad: " << std::boolalpha << z.requires_grad() << "\n";
  }

  const bool right = y.item() == 14.5 && x.grad() == xt::xarray<double>{1.0, -4.0, 12.0} &&
                     w.grad() == xt::xarray<double>{1.0, 4.0, 9.0};
  return right ? 0 : 1;
}
