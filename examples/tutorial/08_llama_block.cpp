// examples/tutorial/08_llama_block.cpp
#include <iostream>
#include <memory>
#include <string>
#include <tapegrad/tapegrad.hpp>
#include <vector>

using namespace tapegrad;

// One decoder block as LLaMA builds it, from the library's pieces: RMSNorm before each half, rotary
// position embeddings on the queries and keys (no position table added to the tokens), causal
// attention through the fused op, and a SwiGLU feed-forward, w2(silu(w1(h)) * w3(h)).
class LlamaBlock : public nn::Module<float, LlamaBlock> {
 public:
  LlamaBlock(std::size_t d_model, std::size_t heads, std::size_t hidden, Generator& gen)
      : heads_(heads), head_dim_(d_model / heads) {
    attention_norm = register_module("attention_norm", std::make_shared<nn::RMSNorm<float>>(d_model));
    wq = register_module("wq", std::make_shared<nn::Linear<float>>(d_model, d_model, gen, /*bias=*/false));
    wk = register_module("wk", std::make_shared<nn::Linear<float>>(d_model, d_model, gen, false));
    wv = register_module("wv", std::make_shared<nn::Linear<float>>(d_model, d_model, gen, false));
    wo = register_module("wo", std::make_shared<nn::Linear<float>>(d_model, d_model, gen, false));
    rope = register_module("rope", std::make_shared<nn::RotaryEmbedding<float>>(head_dim_));
    ffn_norm = register_module("ffn_norm", std::make_shared<nn::RMSNorm<float>>(d_model));
    w1 = register_module("w1", std::make_shared<nn::Linear<float>>(d_model, hidden, gen, false));
    w3 = register_module("w3", std::make_shared<nn::Linear<float>>(d_model, hidden, gen, false));
    w2 = register_module("w2", std::make_shared<nn::Linear<float>>(hidden, d_model, gen, false));
  }

  // x [batch, length, d_model] -> the same shape.
  Tensor<float> forward(const Tensor<float>& x) const {
    const auto batch = static_cast<std::int64_t>(x.shape()[0]), length = static_cast<std::int64_t>(x.shape()[1]);
    // [batch, length, d_model] -> [batch, heads, length, head_dim], the layout attention and RoPE take.
    auto split_heads = [&](const Tensor<float>& t) {
      return permute(
          reshape(t, {batch, length, static_cast<std::int64_t>(heads_), static_cast<std::int64_t>(head_dim_)}),
          {0, 2, 1, 3});
    };
    const Tensor<float> h = (*attention_norm)(x);
    const Tensor<float> q = (*rope)(split_heads((*wq)(h))), k = (*rope)(split_heads((*wk)(h)));
    const auto [attended, weights] =
        scaled_dot_product_attention(q, k, split_heads((*wv)(h)), {}, 0.0, /*is_causal=*/true);
    const Tensor<float> merged = reshape(permute(attended, {0, 2, 1, 3}), {batch, length, -1});
    const Tensor<float> y = x + (*wo)(merged);
    const Tensor<float> g = (*ffn_norm)(y);
    return y + (*w2)(silu((*w1)(g)) * (*w3)(g));
  }

  std::string name() const override { return "LlamaBlock"; }

  std::shared_ptr<nn::RMSNorm<float>> attention_norm, ffn_norm;
  std::shared_ptr<nn::Linear<float>> wq, wk, wv, wo, w1, w2, w3;
  std::shared_ptr<nn::RotaryEmbedding<float>> rope;

 private:
  std::size_t heads_, head_dim_;
};

// Token embedding, the blocks, a final RMSNorm and the output projection: logits [batch, length, vocab].
class TinyLlama : public nn::Module<float, TinyLlama> {
 public:
  TinyLlama(std::size_t vocab, std::size_t d_model, std::size_t heads, std::size_t hidden, std::size_t layers,
            Generator& gen) {
    embedding = register_module("embedding", std::make_shared<nn::Embedding<float>>(vocab, d_model, gen));
    blocks = register_module("blocks", std::make_shared<nn::ModuleList<float>>());
    for (std::size_t i = 0; i < layers; ++i)
      blocks->push_back(std::make_shared<LlamaBlock>(d_model, heads, hidden, gen));
    norm = register_module("norm", std::make_shared<nn::RMSNorm<float>>(d_model));
    output = register_module("output", std::make_shared<nn::Linear<float>>(d_model, vocab, gen, false));
  }

  Tensor<float> forward(const xt::xarray<std::int64_t>& ids) const {
    Tensor<float> x = (*embedding)(ids);
    for (std::size_t i = 0; i < blocks->size(); ++i) x = (*blocks->at<LlamaBlock>(i))(x);
    return (*output)((*norm)(x));
  }

  std::string name() const override { return "TinyLlama"; }

  std::shared_ptr<nn::Embedding<float>> embedding;
  std::shared_ptr<nn::ModuleList<float>> blocks;
  std::shared_ptr<nn::RMSNorm<float>> norm;
  std::shared_ptr<nn::Linear<float>> output;
};

int main() {
  // Characters as tokens, as in chapter 7; every window is a training example of next-character loss.
  const std::string text = "a stitch in time saves nine. ";
  const std::string alphabet = " .abcdefghijklmnopqrstuvwxyz";
  auto id_of = [&](char c) { return static_cast<std::int64_t>(alphabet.find(c)); };
  const std::size_t batch = 16, length = 24;
  xt::xarray<std::int64_t> inputs = xt::xarray<std::int64_t>::from_shape({batch, length});
  IndexArray targets = IndexArray::from_shape({batch * length});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t t = 0; t < length; ++t) {
      inputs(b, t) = id_of(text[(2 * b + t) % text.size()]);
      targets(b * length + t) = id_of(text[(2 * b + t + 1) % text.size()]);
    }

  Generator gen(0);
  TinyLlama model(alphabet.size(), /*d_model=*/32, /*heads=*/2, /*hidden=*/64, /*layers=*/2, gen);
  std::cout << model.num_parameters() << " parameters\n";
  optim::AdamWOptions adamw;
  adamw.lr = 3e-3;
  optim::AdamW<float> opt(model.parameters(), adamw);
  for (int step = 1; step <= 200; ++step) {
    opt.zero_grad();
    auto loss = cross_entropy(reshape(model(inputs), {-1, static_cast<std::int64_t>(alphabet.size())}), targets);
    loss.backward();
    opt.step();
    if (step % 50 == 0) std::cout << "step " << step << ": loss " << loss.item() << "\n";
  }

  // Greedy decoding the plain way: run the whole sequence again for each new character and take the
  // most likely next one (chapter 7's models::generate keeps a key/value cache instead).
  NoGradGuard no_grad;
  model.eval();
  std::vector<std::int64_t> sequence;
  for (char c : std::string("a stitch")) sequence.push_back(id_of(c));
  std::string continuation;
  for (int i = 0; i < 20; ++i) {
    xt::xarray<std::int64_t> ids = xt::xarray<std::int64_t>::from_shape({1, sequence.size()});
    std::copy(sequence.begin(), sequence.end(), ids.begin());
    const Tensor<float> logits = model(ids);  // [1, length, vocab]
    const auto last = static_cast<std::int64_t>(sequence.size()) - 1;
    const std::int64_t next = argmax(select(select(logits, 0, 0), 0, last), 0)();
    sequence.push_back(next);
    continuation += alphabet[static_cast<std::size_t>(next)];
  }
  std::cout << "a stitch" << continuation << "\n";
  return continuation == " in time saves nine." ? 0 : 1;
}
