// examples/tutorial/06_transformer_encoder.cpp
#include <iostream>
#include <memory>
#include <tapegrad/tapegrad.hpp>

using namespace tapegrad;

// Token ids: 0 pads, 1 is a [CLS] token at the start of every sequence, 2..9 are the content.
constexpr std::int64_t kPad = 0, kCls = 1, kVocab = 10;
constexpr std::size_t kMaxLen = 11;

// The task: does the sequence contain a 9? A batch of sequences of 3 to 10 content tokens after [CLS],
// padded to kMaxLen, with the key padding mask (true at padding) and the labels.
struct Batch {
  xt::xarray<std::int64_t> ids;
  BoolArray padding;
  IndexArray labels;
};

Batch make_batch(std::size_t size, Generator& gen) {
  Batch b{xt::zeros<std::int64_t>({size, kMaxLen}), xt::ones<bool>({size, kMaxLen}), IndexArray::from_shape({size})};
  for (std::size_t i = 0; i < size; ++i) {
    const std::size_t length = 1 + 3 + gen.randint(8);  // [CLS] + 3..10 tokens
    b.ids(i, 0) = kCls;
    for (std::size_t j = 1; j < length; ++j) b.ids(i, j) = 2 + static_cast<std::int64_t>(gen.randint(7));  // 2..8
    b.labels(i) = gen.randint(2);
    if (b.labels(i) == 1) b.ids(i, 1 + gen.randint(length - 1)) = 9;
    for (std::size_t j = 0; j < length; ++j) b.padding(i, j) = false;
  }
  return b;
}

// Embeddings plus sinusoidal positions, a Transformer encoder (torch.nn.TransformerEncoder's layers and
// names), and a linear classifier on the [CLS] position's output. Callable, as in chapter 3.
class Classifier : public nn::Module<float, Classifier> {
 public:
  Classifier(std::size_t d_model, Generator& gen) {
    nn::TransformerLayerOptions layer(d_model, /*nhead=*/4);
    layer.dim_feedforward = 64;
    layer.dropout = 0.0;
    layer.batch_first = true;
    embedding = register_module("embedding", std::make_shared<nn::Embedding<float>>(kVocab, d_model, gen, kPad));
    positions =
        register_module("positions", std::make_shared<nn::SinusoidalPositionalEncoding<float>>(d_model, kMaxLen, true));
    encoder = register_module("encoder", std::make_shared<nn::TransformerEncoder<float>>(layer, /*num_layers=*/2, gen));
    head = register_module("head", std::make_shared<nn::Linear<float>>(d_model, 2, gen));
  }

  // ids [B, L], padding [B, L] -> logits [B, 2]
  Tensor<float> forward(const xt::xarray<std::int64_t>& ids, const BoolArray& padding) const {
    auto h = (*positions)((*embedding)(ids));
    h = (*encoder)(h, /*mask=*/nn::AttentionMask<float>(), /*src_key_padding_mask=*/padding);
    return (*head)(select(h, /*dim=*/1, /*index=*/0));  // h[:, 0] in torch
  }

  std::string name() const override { return "Classifier"; }

  std::shared_ptr<nn::Embedding<float>> embedding;
  std::shared_ptr<nn::SinusoidalPositionalEncoding<float>> positions;
  std::shared_ptr<nn::TransformerEncoder<float>> encoder;
  std::shared_ptr<nn::Linear<float>> head;
};

int main() {
  Generator gen(0);
  Classifier model(32, gen);
  std::cout << model.to_string() << "\n" << model.num_parameters() << " parameters\n";

  optim::AdamOptions options;
  options.lr = 3e-3;
  optim::Adam<float> adam(model.parameters(), options);
  for (int step = 1; step <= 300; ++step) {
    const Batch batch = make_batch(32, gen);
    adam.zero_grad();
    auto loss = cross_entropy(model(batch.ids, batch.padding), batch.labels);
    loss.backward();
    optim::clip_grad_norm_(model.parameters(), 1.0);
    adam.step();
    if (step % 100 == 0) std::cout << "step " << step << ": loss " << loss.item() << "\n";
  }

  model.eval();
  NoGradGuard no_grad;
  const Batch test = make_batch(1000, gen);
  const auto predicted = argmax(model(test.ids, test.padding), 1);
  std::size_t right = 0;
  for (std::size_t i = 0; i < 1000; ++i) right += predicted(i) == test.labels(i);
  std::cout << "test accuracy " << right / 10.0 << "%\n";
  return right >= 950 ? 0 : 1;
}
