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

using namespace tapegrad;
using namespace tapegrad::models;

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

// Bytes of the weights, of the gradients and of AdamW's state after one step of model on loss.
template <typename Model, typename Loss>
void check_bytes_after_a_step(Model& model, const Loss& loss, std::size_t expected_parameters) {
  const auto params = model.parameters();
  optim::AdamW<float> opt(params, {});
  loss().backward();
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
    GPTOptions o;
    o.vocab_size = 50;
    o.max_len = 16;
    o.d_model = 8;
    o.nhead = 2;
    o.num_layers = 3;
    o.dim_feedforward = 24;
    Generator gen(1);
    GPT<float> model(o, gen);
    check_bytes_after_a_step(
        model, [&] { return model.forward(kIds).pow(2).mean(); }, gpt_parameters(50, 16, 8, 3, 24));
  }
  SECTION("Llama") {
    LlamaOptions o;
    o.vocab_size = 50;
    o.max_len = 16;
    o.d_model = 8;
    o.nhead = 2;
    o.num_layers = 3;
    o.hidden = 20;
    Generator gen(1);
    Llama<float> model(o, gen);
    check_bytes_after_a_step(
        model, [&] { return model.forward(kIds).pow(2).mean(); }, llama_parameters(50, 8, 3, 20));
  }
  SECTION("encoder classifier") {
    TransformerClassifierOptions o;
    o.vocab_size = 50;
    o.max_len = 16;
    o.d_model = 8;
    o.nhead = 2;
    o.num_layers = 3;
    o.dim_feedforward = 24;
    Generator gen(1);
    TransformerClassifier<float> model(o, gen);
    const BoolArray pad = xt::zeros<bool>({2, 6});
    check_bytes_after_a_step(
        model, [&] { return model.forward(kIds, pad).pow(2).mean(); }, classifier_parameters(50, 8, 3, 24, 2));
  }
}
