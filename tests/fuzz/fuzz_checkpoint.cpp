// libFuzzer target: train::load_checkpoint of a small model and its Adam state from arbitrary bytes.
// Contract: a valid checkpoint loads, anything else throws std::runtime_error and leaves the model
// and the optimizer untouched; nothing else escapes.
#include <cstdint>
#include <stdexcept>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/optim/adam.hpp"
#include "tapegrad/train/checkpoint.hpp"
#include "tests/fuzz/fuzz_input.hpp"

using namespace tapegrad;

namespace {

struct Setup {
  Generator gen{7};
  nn::Linear<float> model{3, 2, gen};
  optim::Adam<float> optimizer{model.parameters()};
  Setup() {  // one step, so that the optimizer has state to save and load
    auto x = Tensor<float>::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
    sum(model.forward(x)).backward();
    optimizer.step();
  }
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::write_seeds_if_asked([](const std::filesystem::path& dir) {
    Setup s;
    train::save_checkpoint((dir / "linear_adam.safetensors").string(), s.model, s.optimizer, 1, {{"note", "seed"}});
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Setup setup;
  const std::string& path = fuzz::input_path(data, size);
  const auto before = setup.model.weight.data();
  try {
    train::load_checkpoint(path, setup.model, setup.optimizer);
  } catch (const std::runtime_error&) {
    if (setup.model.weight.data() != before) __builtin_trap();  // a refused file changed the model
  }
  return 0;
}
