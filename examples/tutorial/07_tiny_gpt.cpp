// examples/tutorial/07_tiny_gpt.cpp
#include <iostream>
#include <string>
#include <tapegrad/tapegrad.hpp>
#include <vector>

using namespace tapegrad;

int main() {
  // Characters as tokens: id 0 is padding (GPT's default padding_idx), the others index `alphabet`.
  const std::string text = "the quick brown fox jumps over the lazy dog. ";
  const std::string alphabet = " .abcdefghijklmnopqrstuvwxyz";
  auto id_of = [&](char c) { return static_cast<std::int64_t>(alphabet.find(c) + 1); };

  // Training windows: 16 windows of 32 characters of the repeated text, each starting where the last
  // one did plus 3; the targets are the inputs shifted by one, as in every next-token model.
  const std::size_t batch = 16, length = 32;
  xt::xarray<std::int64_t> inputs = xt::xarray<std::int64_t>::from_shape({batch, length});
  IndexArray targets = IndexArray::from_shape({batch * length});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t t = 0; t < length; ++t) {
      inputs(b, t) = id_of(text[(3 * b + t) % text.size()]);
      targets(b * length + t) = id_of(text[(3 * b + t + 1) % text.size()]);
    }

  models::GPTOptions options;
  options.vocab_size = alphabet.size() + 1;
  options.max_len = 64;
  options.d_model = 32;
  options.nhead = 2;
  options.num_layers = 2;
  options.dim_feedforward = 64;
  options.dropout = 0.0;
  options.attention_dropout = 0.0;
  Generator gen(0);
  models::GPT<float> gpt(options, gen);

  optim::AdamWOptions adamw;
  adamw.lr = 3e-3;
  optim::AdamW<float> opt(gpt.parameters(), adamw);
  for (int step = 1; step <= 200; ++step) {
    opt.zero_grad();
    const Tensor<float> logits = gpt(inputs);  // [batch, length, vocab]
    auto loss = cross_entropy(reshape(logits, {-1, static_cast<std::int64_t>(options.vocab_size)}), targets);
    loss.backward();
    opt.step();
    if (step % 50 == 0) std::cout << "step " << step << ": loss " << loss.item() << "\n";
  }

  // Greedy decoding with the key/value cache: the model continues a prompt it has learned.
  gpt.eval();
  models::GenerateOptions decode;
  decode.sampling.temperature = 0;  // greedy
  decode.max_new_tokens = 24;
  std::vector<std::int64_t> prompt;
  for (char c : std::string("the quick")) prompt.push_back(id_of(c));
  std::string continuation;
  for (std::int64_t id : models::generate(gpt, prompt, decode))
    continuation += id > 0 ? alphabet[static_cast<std::size_t>(id - 1)] : '?';  // 0: padding
  std::cout << "the quick" << continuation << "\n";
  return continuation == " brown fox jumps over th" ? 0 : 1;
}
