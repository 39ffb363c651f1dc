// examples/tutorial/09_indexing_and_schedules.cpp
#include <cmath>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <tapegrad/tapegrad.hpp>

using namespace tapegrad;
using namespace tapegrad::indexing;  // Slice, None, Ellipsis, as torch::indexing

int main() {
  // Reading parts, as torch's x[1], x[:, 0], x[:, 1:3], x[::2] and x[1:, -1]. Each is a copy.
  auto x = arange(12).reshape(3, 4);
  std::cout << "x = " << x << "\nx.shape() = " << x.shape() << "\n";
  std::cout << "x[1] = " << x[1] << "\n";
  std::cout << "x.select(1, 0) = " << x.select(1, 0) << "\n";
  std::cout << "x.narrow(1, 1, 2) = " << x.narrow(1, 1, 2) << "\n";
  std::cout << "x.slice(0, 0, 3, 2) = " << x.slice(0, 0, 3, 2) << "\n";
  std::cout << "x.index({Slice(1, None), -1}) = " << x.index({Slice(1, None), -1}) << "\n";
  std::cout << "x.index({None, Ellipsis, 0}).shape() = " << x.index({None, Ellipsis, 0}).shape() << "\n";

  // Joining and broadcasting: torch.cat, torch.stack and expand (-1 keeps a size).
  const auto row = Tensor<float>::from_vector({100, 200, 300, 400}, {1, 4});
  std::cout << "cat({x, row}) = " << cat({x, row}) << "\n";
  std::cout << "stack({x[0], x[2]}, 1) = " << stack({x[0], x[2]}, 1) << "\n";
  std::cout << "row.expand(2, -1) = " << row.expand(2, -1) << "\n";

  // A causal mask, as attention applies one: position i sees the positions j <= i.
  xt::xarray<bool> future = xt::xarray<bool>::from_shape({3, 3});
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j) future(i, j) = j > i;
  std::cout << "masked softmax = " << zeros({3, 3}).masked_fill(future, -INFINITY).softmax(1) << "\n";

  // Writing values: index_put_ is Python's grid[0, 1:] = 7 and grid[1] = [1, 2, 3]; +=, fill_ and
  // copy_ work on the whole tensor. x[1] is a copy, so writing it leaves x as it was.
  auto grid = zeros({2, 3});
  grid.index_put_({0, Slice(1, None)}, 7.0f);
  grid.index_put_({1}, Tensor<float>::from_vector({1, 2, 3}, {3}));
  grid += 1.0f;
  std::cout << "grid = " << grid << "\n";
  auto copy = x[1];
  copy.fill_(0.0f);
  std::cout << "x[1] after writing a copy of it: " << x[1] << "\n";

  // A parameter (a leaf that requires grad) refuses in-place ops while gradients are recorded, as in
  // torch; under NoGradGuard they are plain writes, which is how an optimizer updates it.
  Generator gen(0);
  nn::Linear<float> model(1, 1, gen);
  try {
    model.bias += 1.0f;
  } catch (const std::logic_error& e) {
    std::cout << "refused: " << e.what() << "\n";
  }
  {
    NoGradGuard no_grad;
    model.bias.zero_();
  }

  // A learning-rate schedule is a function of the step: set the rate before each step. Here linear
  // warmup for 20 steps, then half a cosine down to 0 at step 200, fitting y = 2x - 1.
  const auto inputs = arange(-1, 1, 0.125).reshape(-1, 1);
  const auto targets = inputs * 2.0f - 1.0f;
  optim::SGD<float> opt(model.parameters(), optim::SGDOptions{/*lr=*/0.2});
  const optim::CosineDecay schedule(/*base_lr=*/0.2, /*total_steps=*/200, /*warmup_steps=*/20);
  for (int step = 1; step <= 200; ++step) {
    opt.set_lr(schedule(step));
    opt.zero_grad();
    mse_loss(model(inputs), targets).backward();
    opt.step();
    if (step % 50 == 0 || step == 10) std::cout << "step " << step << ": lr " << opt.lr() << "\n";
  }
  const float w = model.weight.item(), b = model.bias.item();
  std::printf("learned y = %.2f x %+.2f\n", w, b);
  const bool right = std::abs(w - 2.0f) < 0.01f && std::abs(b + 1.0f) < 0.01f &&
                     x[1].to_vector() == std::vector<float>{4, 5, 6, 7} &&
                     grid.to_vector() == std::vector<float>{1, 8, 8, 2, 3, 4};
  return right ? 0 : 1;
}
