// docs/memory.md's bytes per parameter: the parameter counts it gives for GPT, Llama and the encoder
// classifier, times 16 bytes (fp32 weight, gradient and AdamW's two moments), are what a model holds
// after a training step, counted from its parameters, their gradients and the optimizer's state.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/models/classifier.hpp"
#include "tapegrad/models/gpt.hpp"
#include "tapegrad/models/llama.hpp"
#include "tapegrad/optim/adamw.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::models;
using tapegrad::testing::sized;

namespace {

// The formulas of docs/memory.md, in parameters.
std::size_t gpt_parameters(std::size_t V, std::size_t C, std::size_t d, std::size_t L, std::size_t F) {
  return V * d + C * d + L * (4 * d * d + 2 * d * F + F + 9 * d) + 2 * d + V;
}
std::size_t llama_parameters(std::size_t V, std::size_t d, std::size_t L, std::size_t H) {
  return V * d + L * (4 * d * d + 3 * d * H + 2 * d) + d;
}
std::size_t classifier_parameters(std::size_t V, std::size_t d, std::size_t L, std::size_t F, std::size_t classes) {
  return V * d + L * (4 * d * d + 2 * d * F + F + 9 * d) + d * classes + classes;
}

// Bytes of the weights, of the gradients and of AdamW's state after one step of a Model of options on
// the mean square of forward(model).
template <typename Model, typename Options, typename Forward>
void check_bytes_after_a_step(const Options& options, const Forward& forward, std::size_t expected_parameters) {
  Generator gen(1);
  Model model(options, gen);
  const auto params = model.parameters();
  optim::AdamW<float> opt(params, {});
  forward(model).pow(2).mean().backward();
  opt.step();
  std::size_t weights = 0, grads = 0, moments = 0;
  for (const auto& p : params) {
    weights += p.numel() * sizeof(float);
    REQUIRE(p.has_grad());
    grads += p.grad().size() * sizeof(float);
  }
  for (const auto& [name, buffer] : opt.state_dict()) {
    const bool per_parameter =
        name.rfind("state.", 0) == 0 && name.size() > 5 && name.substr(name.size() - 5) != ".step";
    if (per_parameter) moments += buffer.numel() * sizeof(float);
  }
  CHECK(weights == 4 * expected_parameters);
  CHECK(grads == 4 * expected_parameters);
  CHECK(moments == 8 * expected_parameters);  // exp_avg and exp_avg_sq
  CHECK(weights + grads + moments == 16 * expected_parameters);
}

const xt::xarray<std::int64_t> kIds = {{3, 5, 7, 2, 9, 4}, {4, 8, 1, 6, 2, 3}};

}  // namespace

TEST_CASE("memory model: weights, gradients and AdamW moments are 16 bytes per parameter of the documented counts",
          "[memory]") {
  SECTION("GPT") {
    auto o = sized<GPTOptions>(50, 16, 8, 2, 3);
    o.dim_feedforward = 24;
    check_bytes_after_a_step<GPT<float>>(
        o, [](const auto& model) { return model.forward(kIds); }, gpt_parameters(50, 16, 8, 3, 24));
  }
  SECTION("Llama") {
    auto o = sized<LlamaOptions>(50, 16, 8, 2, 3);
    o.hidden = 20;
    check_bytes_after_a_step<Llama<float>>(
        o, [](const auto& model) { return model.forward(kIds); }, llama_parameters(50, 8, 3, 20));
  }
  SECTION("encoder classifier") {
    auto o = sized<TransformerClassifierOptions>(50, 16, 8, 2, 3);
    o.dim_feedforward = 24;
    const BoolArray pad = xt::zeros<bool>({2, 6});
    check_bytes_after_a_step<TransformerClassifier<float>>(
        o, [&](const auto& model) { return model.forward(kIds, pad); }, classifier_parameters(50, 8, 3, 24, 2));
  }
}
