// examples/tutorial/05_save_load.cpp
#include <iostream>
#include <memory>
#include <tapegrad/tapegrad.hpp>

using namespace tapegrad;

std::shared_ptr<nn::Sequential<float>> make_model(Generator& gen) {
  return std::make_shared<nn::Sequential<float>>(std::make_shared<nn::Linear<float>>(4, 8, gen),
                                                 std::make_shared<nn::ReLU<float>>(),
                                                 std::make_shared<nn::Linear<float>>(8, 3, gen));
}

int main() {
  Generator gen(0);
  auto model = make_model(gen);
  optim::Adam<float> adam(model->parameters());
  const auto x = Tensor<float>::normal({5, 4}, 0.0f, 1.0f, gen);
  const IndexArray y = {0, 1, 2, 1, 0};
  for (int step = 0; step < 10; ++step) {
    adam.zero_grad();
    cross_entropy((*model)(x), y).backward();
    adam.step();
  }

  // 1. The model's state_dict in a safetensors file, under torch's names ("0.weight", "0.bias", ...):
  //    torch reads it with safetensors.torch.load_file and model.load_state_dict.
  const std::string weights = "tutorial_model.safetensors";  // in the current folder
  io::safetensors::save_state_dict(weights, model->state_dict());

  Generator other(1);
  auto restored = make_model(other);  // different initial weights
  auto state = restored->state_dict();
  io::safetensors::load_state_dict(weights, state);  // copies into the model's own parameters
  const bool same = (*restored)(x).data() == (*model)(x).data();
  std::cout << "the loaded model gives the same outputs: " << std::boolalpha << same << "\n";

  // 2. A training checkpoint: model, optimizer state and step, to resume exactly.
  const std::string checkpoint = "tutorial_checkpoint.safetensors";
  train::save_checkpoint(checkpoint, *model, adam, /*step=*/10);
  optim::Adam<float> restored_adam(restored->parameters());
  const auto step = train::load_checkpoint(checkpoint, *restored, restored_adam);
  std::cout << "resumed at step " << step << "\n";

  // 3. Loading into a model of other shapes changes nothing and says what does not fit.
  auto wider = std::make_shared<nn::Sequential<float>>(std::make_shared<nn::Linear<float>>(4, 16, other),
                                                       std::make_shared<nn::ReLU<float>>(),
                                                       std::make_shared<nn::Linear<float>>(16, 3, other));
  auto wider_state = wider->state_dict();
  bool refused = false;
  try {
    io::safetensors::load_state_dict(weights, wider_state);
  } catch (const std::runtime_error& e) {
    refused = true;
    std::cout << "refused: " << e.what() << "\n";
  }
  return same && step == 10 && refused ? 0 : 1;
}
