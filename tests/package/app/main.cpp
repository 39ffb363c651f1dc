// A program outside the tapegrad tree, built against an installed tapegrad (tests/package/run.sh):
// every layer is reached through the one umbrella header, and each result is checked, so a missing
// header, library or dependency fails to build and a wrong one fails to run. It is written as a PyTorch
// user would write it: callable modules, torch's Tensor methods, mse_loss.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <tapegrad/tapegrad.hpp>

namespace fs = std::filesystem;
using namespace tapegrad;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::cout << (ok ? "ok   " : "FAIL ") << what << "\n";
  if (!ok) ++failures;
}

// A module of the user's own, callable as torch's (model(x)) by naming itself in its base.
struct Regressor : nn::Module<float, Regressor> {
  explicit Regressor(Generator& gen) {
    hidden = register_module("hidden", std::make_shared<nn::Linear<float>>(2, 16, gen));
    out = register_module("out", std::make_shared<nn::Linear<float>>(16, 1, gen));
  }
  Tensor<float> forward(const Tensor<float>& x) const { return (*out)((*hidden)(x).relu()); }
  std::string name() const override { return "Regressor"; }
  std::shared_ptr<nn::Linear<float>> hidden, out;
};

std::shared_ptr<nn::Sequential<float>> make_mlp(std::uint64_t seed) {
  Generator gen(seed);
  return std::make_shared<nn::Sequential<float>>(std::make_shared<nn::Linear<float>>(4, 16, gen),
                                                 std::make_shared<nn::ReLU<float>>(),
                                                 std::make_shared<nn::Linear<float>>(16, 3, gen));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: app <work folder> <aclImdb archive>\n";
    return 2;
  }
  const fs::path work = argv[1];
  fs::create_directories(work);

  // autograd: a gradient against its closed form (torch's method forms), and gradcheck in double.
  auto x = Tensor<double>::from_vector({1.0, 2.0, 3.0}, {3}, /*requires_grad=*/true);
  auto y = x.pow(2).sum();
  y.backward();
  check(y.item() == 14.0 && x.grad()(0) == 2.0 && x.grad()(2) == 6.0, "d x.pow(2).sum() / dx = 2x");
  auto m = Tensor<double>::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  check(m.sum({1}, /*keepdim=*/true).shape() == Shape{2, 1} && sum(m, 1).shape() == Shape{2} &&
            m.t().matmul(m).shape() == Shape{3, 3} && m.reshape({3, 2}).softmax(1).sum().item() > 2.999,
        "sum({1}, keepdim), sum(x, 1), t(), matmul, reshape, softmax");
  Generator gen(0);
  auto grad_ok = gradcheck([](const std::vector<Tensor<double>>& in) { return softmax(in[0], 1); },
                           {Tensor<double>::uniform({2, 5}, -1, 1, gen, true)});
  check(static_cast<bool>(grad_ok), "gradcheck(softmax)");

  // nn + optim: a callable module of one's own fits x0^2 + x1^2 with mse_loss and Adam.
  Regressor regressor(gen);
  const auto points = Tensor<float>::uniform({64, 2}, -1.0f, 1.0f, gen);
  const auto targets_r = points.pow(2).sum({1}, /*keepdim=*/true);
  optim::Adam<float> adam_r(regressor.parameters());
  float first_mse = 0, last_mse = 0;
  for (int step = 0; step < 300; ++step) {
    adam_r.zero_grad();
    auto loss = mse_loss(regressor(points), targets_r);
    loss.backward();
    adam_r.step();
    (step == 0 ? first_mse : last_mse) = loss.item();
  }
  std::cout << "mse " << first_mse << " -> " << last_mse << "\n";
  check(last_mse < 0.2f * first_mse, "regressor(x) with mse_loss and Adam: the loss falls below a fifth");

  // nn + optim: a small MLP learns three points with Adam.
  auto model = make_mlp(1);
  const auto inputs = Tensor<float>::normal({3, 4}, 0.0f, 1.0f, gen);
  const IndexArray targets = {0, 1, 2};
  optim::AdamOptions adam_options;
  adam_options.lr = 0.05;
  optim::Adam<float> adam(model->parameters(), adam_options);
  float first_loss = 0, last_loss = 0;
  for (int step = 0; step < 30; ++step) {
    adam.zero_grad();
    auto loss = cross_entropy((*model)(inputs), targets);
    loss.backward();
    adam.step();
    (step == 0 ? first_loss : last_loss) = loss.item();
  }
  std::cout << "loss " << first_loss << " -> " << last_loss << "\n";
  check(last_loss < 0.1f * first_loss, "Adam brings the loss below a tenth of its start");

  // io: a state dict saved to safetensors loads into a differently initialized model.
  const std::string weights = (work / "mlp.safetensors").string();
  io::safetensors::save_state_dict(weights, model->state_dict());
  auto loaded = make_mlp(2);
  check(!xt::allclose(loaded->forward(inputs).data(), model->forward(inputs).data()), "a fresh model differs");
  auto state = loaded->state_dict();
  io::safetensors::load_state_dict(weights, state);
  check(loaded->forward(inputs).data() == model->forward(inputs).data(), "the loaded model gives the same outputs");

  // train: a checkpoint of model and optimizer restores the step.
  const std::string checkpoint = (work / "checkpoint.safetensors").string();
  train::save_checkpoint(checkpoint, *model, adam, 30);
  optim::Adam<float> adam2(loaded->parameters(), adam_options);
  check(train::load_checkpoint(checkpoint, *loaded, adam2) == 30, "load_checkpoint returns the saved step");

  // datasets + models: the first review of a small archive through a Transformer classifier.
  const auto imdb = datasets::read_imdb(argv[2]);
  const auto tokens = datasets::tokenize(imdb.train.at(0).text);
  check(!imdb.train.empty() && !imdb.test.empty() && !tokens.empty(), "read_imdb and tokenize a review");
  models::TransformerClassifierOptions options;
  options.vocab_size = 100;
  options.max_len = 64;
  options.d_model = 16;
  options.nhead = 2;
  options.dim_feedforward = 32;
  models::TransformerClassifier<float> classifier(options, gen);
  classifier.eval();
  const std::size_t length = std::min<std::size_t>(tokens.size(), options.max_len);
  xt::xarray<std::int64_t> ids = xt::zeros<std::int64_t>({std::size_t{1}, length});
  for (std::size_t i = 0; i < length; ++i) ids(0, i) = 1 + static_cast<std::int64_t>(tokens[i].size() % 99);
  const BoolArray padding = xt::zeros<bool>({std::size_t{1}, length});
  const auto logits = classifier.forward(ids, padding);
  check(logits.shape() == Shape{1, 2} && std::isfinite(logits.data()(0, 0)) && std::isfinite(logits.data()(0, 1)),
        "TransformerClassifier gives two finite logits");

  // models: a Hugging Face folder written and read back, as a pretrained checkpoint is.
  models::LlamaOptions llama_options;
  llama_options.vocab_size = 64;
  llama_options.max_len = 32;
  llama_options.d_model = 16;
  llama_options.nhead = 4;
  llama_options.num_kv_heads = 2;
  llama_options.hidden = 32;
  models::Llama<float> llama(llama_options, gen);
  llama.eval();
  const std::string hf_folder = (work / "llama-hf").string();
  models::save_pretrained(llama, hf_folder);
  const std::shared_ptr<models::CausalLM<float>> pretrained = models::from_pretrained<float>(hf_folder);
  models::GenerateOptions greedy;
  greedy.sampling.temperature = 0.0;
  greedy.max_new_tokens = 8;
  const xt::xarray<std::int64_t> prompt_ids = {{5, 9, 2}};
  check(bool(pretrained->forward(prompt_ids).data() == llama.forward(prompt_ids).data()) &&
            models::generate(*pretrained, {5, 9, 2}, greedy) == models::generate(llama, {5, 9, 2}, greedy),
        "save_pretrained then from_pretrained gives the same logits and greedy tokens");

  std::cout << model->to_string() << "\n";
  if (failures) {
    std::cout << failures << " check(s) failed\n";
    return 1;
  }
  std::cout << "tapegrad package OK\n";
  return 0;
}
