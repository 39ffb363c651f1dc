// examples/tutorial/03_custom_module.cpp
#include <iostream>
#include <memory>
#include <tapegrad/tapegrad.hpp>
#include <xtensor/xio.hpp>

using namespace tapegrad;

// A module of our own, as one subclasses torch.nn.Module: register the parameters and submodules
// (their names become the state_dict's names), write forward(), and name the class for printing.
// Naming the class itself in its base, nn::Module<float, Residual>, makes it callable: block(x) runs
// block.forward(x), as torch's __call__ does.
class Residual : public nn::Module<float, Residual> {
 public:
  Residual(std::size_t features, Generator& gen) {
    fc = register_module("fc", std::make_shared<nn::Linear<float>>(features, features, gen));
    norm = register_module("norm", std::make_shared<nn::LayerNorm<float>>(Shape{features}));
    gate = register_parameter("gate", Tensor<float>::zeros({features}));
  }

  // x + gate * relu(fc(norm(x))): starts as the identity, since gate starts at zero.
  Tensor<float> forward(const Tensor<float>& x) const { return x + gate * (*fc)((*norm)(x)).relu(); }

  std::string name() const override { return "Residual"; }

  std::shared_ptr<nn::Linear<float>> fc;
  std::shared_ptr<nn::LayerNorm<float>> norm;
  Tensor<float> gate;
};

int main() {
  Generator gen(0);
  Residual block(8, gen);
  std::cout << block.to_string() << "\n";  // as print(block) in torch
  for (const auto& [name, p] : block.named_parameters()) std::cout << name << " " << format_shape(p.shape()) << "\n";
  std::cout << block.num_parameters() << " parameters\n";

  auto x = Tensor<float>::normal({4, 8}, 0.0f, 1.0f, gen);
  auto y = block(x);
  y.sum().backward();

  // The block starts as the identity; the gate learns first (fc's gradient flows through the gate).
  const bool identity = y.data() == x.data();
  std::cout << "identity at start: " << std::boolalpha << identity << "\n";
  std::cout << "d y.sum() / d gate = " << block.gate.grad() << "\n";
  const bool gate_learns = xt::any(xt::not_equal(block.gate.grad(), 0.0f));
  return identity && gate_learns && block.num_parameters() == 8 * 8 + 8 + 8 + 8 + 8 ? 0 : 1;
}
