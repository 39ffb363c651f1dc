// examples/tutorial/04_train_mlp.cpp
#include <iostream>
#include <memory>
#include <tapegrad/tapegrad.hpp>

using namespace tapegrad;

// Points in [-1, 1]^2, labelled 1 inside the circle of radius 0.7 and 0 outside.
void make_points(std::size_t n, Generator& gen, Tensor<float>& points, IndexArray& labels) {
  points = Tensor<float>::uniform({n, 2}, -1.0f, 1.0f, gen);
  labels = IndexArray::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) {
    const float a = points.data()(i, 0), b = points.data()(i, 1);
    labels(i) = a * a + b * b < 0.49f ? 1 : 0;
  }
}

float accuracy(const Tensor<float>& logits, const IndexArray& labels) {
  const auto predicted = argmax(logits, 1);
  std::size_t right = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) right += predicted(i) == labels(i);
  return static_cast<float>(right) / static_cast<float>(labels.size());
}

int main() {
  Generator gen(0);
  Tensor<float> train_x, test_x;
  IndexArray train_y, test_y;
  make_points(512, gen, train_x, train_y);
  make_points(512, gen, test_x, test_y);

  // A multilayer perceptron, as torch.nn.Sequential(Linear(2, 32), ReLU(), Linear(32, 32), ReLU(), Linear(32, 2)).
  auto model = std::make_shared<nn::Sequential<float>>(
      std::make_shared<nn::Linear<float>>(2, 32, gen), std::make_shared<nn::ReLU<float>>(),
      std::make_shared<nn::Linear<float>>(32, 32, gen), std::make_shared<nn::ReLU<float>>(),
      std::make_shared<nn::Linear<float>>(32, 2, gen));

  optim::AdamOptions options;
  options.lr = 0.01;
  optim::Adam<float> adam(model->parameters(), options);
  nn::CrossEntropyLoss<float> criterion;  // or the function: cross_entropy(logits, targets)

  // The training loop, as in torch: zero the gradients, forward, loss, backward, step.
  for (int step = 1; step <= 300; ++step) {
    adam.zero_grad();
    auto loss = criterion((*model)(train_x), train_y);  // model(x): the module's forward
    loss.backward();
    adam.step();
    if (step % 100 == 0) std::cout << "step " << step << ": loss " << loss.item() << "\n";
  }

  // Evaluation records nothing.
  NoGradGuard no_grad;
  const float acc = accuracy((*model)(test_x), test_y);
  std::cout << "test accuracy " << acc << "\n";
  return acc > 0.95f ? 0 : 1;
}
