// examples/tutorial/10_pretrained.cpp
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <tapegrad/tapegrad.hpp>
#include <vector>

using namespace tapegrad;

// A Hugging Face model folder: config.json and model.safetensors as transformers' save_pretrained writes
// them (a downloaded GPT-2 or Llama), here the tests' tiny random Llama unless another is given.
int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "tests/fixtures/pretrained/llama_f32";
  std::shared_ptr<models::CausalLM<float>> model = models::from_pretrained<float>(dir);
  auto& module = dynamic_cast<nn::Module<float>&>(*model);  // a models::Llama (or GPT): both
  std::cout << module.name() << ": " << module.num_parameters() << " parameters, " << model->vocab_size()
            << " tokens, context " << model->max_len() << "\n";

  // Token ids in, token ids out. A real model's own tokenizer makes them from text:
  // datasets::tokenizers::ByteLevelBPE::from_pretrained(dir) for GPT-2, SentencePiece::load(dir +
  // "/tokenizer.model") for Llama.
  models::GenerateOptions greedy;
  greedy.sampling.temperature = 0;
  greedy.max_new_tokens = 8;
  const std::vector<std::int64_t> prompt = {5, 6, 7};
  const auto print = [](const char* what, const std::vector<std::int64_t>& ids) {
    std::cout << what;
    for (std::int64_t id : ids) std::cout << " " << id;
    std::cout << "\n";
  };
  print("before:", models::generate(*model, prompt, greedy));

  // LoRA as PEFT does it: low-rank adapters beside the query, value and down projections, the base
  // frozen (no gradient, no optimizer state), so only the adapters' few parameters train.
  nn::LoraConfig lora;
  lora.r = 4;
  lora.lora_alpha = 8;
  lora.target_modules = {"q_proj", "v_proj", "down_proj"};
  Generator gen(0);
  nn::inject_lora(module, lora, gen);
  std::size_t trained = 0;
  for (const auto& p : nn::trainable_parameters(module)) trained += p.numel();
  std::cout << "LoRA: " << trained << " of " << module.num_parameters() << " parameters train\n";

  // A few steps on a sequence to learn: 5 6 7 8 repeated, each token predicting the next.
  xt::xarray<std::int64_t> inputs = xt::xarray<std::int64_t>::from_shape({1, 31});
  xt::xarray<std::int64_t> targets = xt::xarray<std::int64_t>::from_shape({31});
  for (std::size_t t = 0; t < 31; ++t) {
    inputs(0, t) = 5 + static_cast<std::int64_t>(t % 4);
    targets(t) = 5 + static_cast<std::int64_t>((t + 1) % 4);
  }
  optim::AdamWOptions adamw;
  adamw.lr = 0.05;
  adamw.weight_decay = 0;
  optim::AdamW<float> opt(nn::trainable_parameters(module), adamw);
  module.train();
  double first = 0, last = 0;
  for (int step = 1; step <= 100; ++step) {
    opt.zero_grad();
    const Tensor<float> logits = model->forward(inputs);  // [1, 31, vocab]
    auto loss = cross_entropy(reshape(logits, {-1, static_cast<std::int64_t>(model->vocab_size())}), targets);
    loss.backward();
    opt.step();
    (step == 1 ? first : last) = loss.item();
  }
  module.eval();
  std::cout << "loss: " << (first > 2 * last ? "more than halved" : "NOT halved") << "\n";

  // Merged (W + scaling B A) and unloaded: plain Linears again, a model of the base's shape that
  // save_pretrained writes as transformers reads it, and from_pretrained reads back.
  const xt::xarray<float> tuned = model->forward(inputs).data();
  nn::merge_and_unload_lora(module);
  models::save_pretrained(*model, "tuned");
  const auto reloaded = models::from_pretrained<float>("tuned");
  const double difference = xt::amax(xt::abs(reloaded->forward(inputs).data() - tuned))();
  std::cout << "reloaded: logits within 1e-4 of the tuned model's: " << (difference < 1e-4 ? "yes" : "NO") << "\n";
  const auto after = models::generate(*reloaded, prompt, greedy);
  print("after:", after);
  const std::vector<std::int64_t> expected = {8, 5, 6, 7, 8, 5, 6, 7};
  return first > 2 * last && difference < 1e-4 && after == expected ? 0 : 1;
}
