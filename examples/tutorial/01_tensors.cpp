// examples/tutorial/01_tensors.cpp
#include <iostream>
#include <tapegrad/tapegrad.hpp>
#include <xtensor/xio.hpp>

using namespace tapegrad;

int main() {
  // Leaves that require grad, like torch.tensor([...], requires_grad=True).
  auto x = Tensor<double>::from_vector({1.0, 2.0, 3.0}, {3}, /*requires_grad=*/true);
  auto w = Tensor<double>::from_vector({0.5, -1.0, 2.0}, {3}, /*requires_grad=*/true);

  // y = sum(w * x^2). Each op computes its value now and records its backward on the tape.
  auto y = sum(w * pow(x, 2.0));
  std::cout << "y = " << y.item() << " (made by " << y.grad_fn_name() << ")\n";

  // backward() walks the tape from y and fills .grad() of every leaf that requires grad.
  y.backward();
  std::cout << "dy/dx = " << x.grad() << "   (2 w x)\n";
  std::cout << "dy/dw = " << w.grad() << "   (x^2)\n";

  // Under NoGradGuard nothing is recorded (torch.no_grad()).
  {
    NoGradGuard no_grad;
    auto z = mul(x, 3.0);
    std::cout << "under NoGradGuard, z requires grad: " << std::boolalpha << z.requires_grad() << "\n";
  }

  const bool right = y.item() == 14.5 && x.grad() == xt::xarray<double>{1.0, -4.0, 12.0} &&
                     w.grad() == xt::xarray<double>{1.0, 4.0, 9.0};
  return right ? 0 : 1;
}
