// nn modules: names and counts identical to torch.nn, initialization, printing, state_dict aliasing,
// train/eval, gradchecks through every module, attention masking, and outputs matching PyTorch.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>
#include <xtensor/xadapt.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/nn/nn.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using tapegrad::testing::allclose;
using tapegrad::testing::rand_input;
using TD = Tensor<double>;

namespace {

std::vector<std::string> names_of(const Module<double>& m) {
  std::vector<std::string> out;
  for (const auto& [name, _] : m.named_parameters()) out.push_back(name);
  return out;
}

// The module's parameters followed by the extra inputs, for gradcheck.
std::vector<TD> with_params(const Module<double>& m, std::vector<TD> inputs) {
  auto params = m.parameters();
  params.insert(params.end(), inputs.begin(), inputs.end());
  return params;
}

// Deterministic parameter values shared with the PyTorch script that produced the expected numbers:
// parameter k (in named_parameters order), element j: 0.5 sin(0.37 (j + 1) + 0.11 k).
void fill_like_reference(Module<double>& m) {
  std::size_t k = 0;
  for (auto& p : m.parameters()) {
    auto& data = p.mutable_data();
    for (std::size_t j = 0; j < data.size(); ++j) data.data()[j] = 0.5 * std::sin(0.37 * (j + 1) + 0.11 * k);
    ++k;
  }
}

// cos(0.23 (j + 1) + phase) in row-major order.
TD reference_input(const Shape& shape, double phase = 0.0) {
  xt::xarray<double> a = xt::xarray<double>::from_shape(shape);
  for (std::size_t j = 0; j < a.size(); ++j) a.data()[j] = std::cos(0.23 * (j + 1) + phase);
  return TD(a);
}

// CHECK_GRADCHECK behind a function, so lambdas with commas outside parentheses can be passed.
template <typename F>
void check_gradcheck(F f, const std::vector<TD>& inputs) {
  CHECK_GRADCHECK(f, inputs);
}

TransformerLayerOptions small_layer(Activation act = Activation::ReLU, bool norm_first = false, double dropout = 0.0) {
  TransformerLayerOptions o(4, 2);
  o.dim_feedforward = 6;
  o.dropout = dropout;
  o.activation = act;
  o.norm_first = norm_first;
  return o;
}

}  // namespace

TEST_CASE("Module: names, buffers, state_dict and train/eval across a tree", "[nn]") {
  Generator gen(0);
  Sequential<double> seq(std::make_shared<Linear<double>>(3, 4, gen), std::make_shared<ReLU<double>>(),
                         std::make_shared<Linear<double>>(4, 2, gen, /*bias=*/false),
                         std::make_shared<SinusoidalPositionalEncoding<double>>(2, 10));
  CHECK(names_of(seq) == std::vector<std::string>{"0.weight", "0.bias", "2.weight"});
  CHECK(seq.num_parameters() == 12 + 4 + 8);
  for (const auto& p : seq.parameters()) CHECK(p.requires_grad());
  REQUIRE(seq.named_buffers().size() == 1);
  CHECK(seq.named_buffers()[0].first == "3.pe");

  auto sd = seq.state_dict();  // the non-persistent pe is left out
  CHECK(sd.size() == 3);
  CHECK(sd.count("3.pe") == 0);
  // state_dict tensors alias the module's: writing into them loads the module.
  sd.at("0.bias").mutable_data() = xt::xarray<double>({1.0, 2.0, 3.0, 4.0});
  auto first = std::dynamic_pointer_cast<Linear<double>>(seq[0]);
  CHECK(first->bias.data() == xt::xarray<double>({1.0, 2.0, 3.0, 4.0}));
  CHECK(sd.at("0.weight").same_as(first->weight));

  CHECK(seq.is_training());
  seq.eval();
  for (const auto& child : seq.children()) CHECK_FALSE(child->is_training());
  seq.train();
  for (const auto& child : seq.children()) CHECK(child->is_training());

  auto y = sum(seq.forward(rand_input({5, 1, 3}, 1)));
  y.backward();
  CHECK(first->weight.has_grad());
  seq.zero_grad();
  CHECK_FALSE(first->weight.has_grad());

  SinusoidalPositionalEncoding<double> pe(4, 8);
  CHECK_THROWS_WITH(pe.register_buffer("pe", TD::zeros({1})), Catch::Contains("\"pe\" is already registered"));
  CHECK_THROWS_WITH(pe.register_parameter("a.b", TD::zeros({1})), Catch::Contains("a.b"));

  // remove_module takes a submodule and its parameters out of the tree, and frees its name.
  Linear<double> outer(2, 2, gen);
  outer.register_module("extra", std::make_shared<Linear<double>>(2, 1, gen));
  CHECK(names_of(outer) == std::vector<std::string>{"weight", "bias", "extra.weight", "extra.bias"});
  auto removed = outer.remove_module("extra");
  CHECK(removed->num_parameters() == 3);
  CHECK(names_of(outer) == std::vector<std::string>{"weight", "bias"});
  CHECK(outer.to_string() == "Linear(in_features=2, out_features=2, bias=True)");
  CHECK_THROWS_WITH(outer.remove_module("extra"), Catch::Contains("Linear: no submodule \"extra\" to remove"));
  outer.register_module("extra", removed);
  CHECK(outer.state_dict().size() == 4);
}

TEST_CASE("Module: a persistent buffer is in state_dict", "[nn]") {
  struct WithBuffer : Module<double> {
    WithBuffer() {
      register_parameter("w", TD::zeros({2}));
      register_buffer("count", TD::scalar(3.0));
      register_buffer("scratch", TD::zeros({2}), /*persistent=*/false);
    }
    std::string name() const override { return "WithBuffer"; }
  } m;
  auto sd = m.state_dict();
  CHECK(sd.size() == 2);
  CHECK(sd.at("count").item() == 3.0);
  CHECK(m.buffers().size() == 2);
  CHECK_FALSE(m.named_buffers()[0].second.requires_grad());
}

TEST_CASE("Linear: torch's init bounds, forward and gradcheck", "[nn]") {
  Generator gen(3);
  Linear<double> lin(16, 5, gen);
  const double bound = 1.0 / 4.0;  // 1 / sqrt(in_features)
  CHECK(lin.weight.shape() == Shape{5, 16});
  CHECK(xt::amax(xt::abs(lin.weight.data()))() <= bound);
  CHECK(xt::amax(xt::abs(lin.bias.data()))() <= bound);
  CHECK(xt::amax(xt::abs(lin.weight.data()))() > 0.8 * bound);  // spread over the whole range
  CHECK(names_of(lin) == std::vector<std::string>{"weight", "bias"});
  CHECK(lin.to_string() == "Linear(in_features=16, out_features=5, bias=True)");

  Generator g2(4);
  Linear<double> small(3, 2, g2);
  auto x = rand_input({2, 4, 3}, 5);
  check_gradcheck([&](const std::vector<TD>& in) { return small.forward(in.back()); }, with_params(small, {x}));
  Linear<double> no_bias(3, 2, g2, false);
  CHECK(names_of(no_bias) == std::vector<std::string>{"weight"});
  check_gradcheck([&](const std::vector<TD>& in) { return no_bias.forward(in.back()); }, with_params(no_bias, {x}));
}

TEST_CASE("LayerNorm: ones/zeros init, printing and gradcheck", "[nn]") {
  LayerNorm<double> ln(Shape{2, 3});
  CHECK(ln.weight.data() == xt::ones<double>({2, 3}));
  CHECK(ln.bias.data() == xt::zeros<double>({2, 3}));
  CHECK(ln.to_string() == "LayerNorm((2, 3), eps=1e-05, elementwise_affine=True)");
  CHECK(LayerNorm<double>(8, 1e-6).to_string() == "LayerNorm((8,), eps=1e-06, elementwise_affine=True)");
  CHECK(LayerNorm<double>(8, 1e-5, false).num_parameters() == 0);
  Generator gen(1);
  ln.weight.mutable_data() = TD::uniform({2, 3}, 0.5, 1.5, gen).data();
  ln.bias.mutable_data() = TD::uniform({2, 3}, -0.5, 0.5, gen).data();
  check_gradcheck([&](const std::vector<TD>& in) { return ln.forward(in.back()); },
                  with_params(ln, {rand_input({4, 2, 3}, 2)}));
}

TEST_CASE("Embedding: N(0, 1) init with the padding row zeroed, gradcheck", "[nn]") {
  Generator gen(7);
  Embedding<double> emb(10, 4, gen, /*padding_idx=*/-2);
  CHECK(*emb.padding_idx == 8);  // normalized as torch does
  const xt::xarray<double> padding_row = xt::view(emb.weight.data(), 8, xt::all());
  CHECK(padding_row == xt::xarray<double>(xt::zeros<double>({4})));
  CHECK(emb.to_string() == "Embedding(10, 4, padding_idx=8)");
  Embedding<double> big(400, 50, gen);
  const double m = xt::mean(big.weight.data())();
  const double sd = std::sqrt(xt::variance(big.weight.data())());
  CHECK(std::abs(m) < 0.02);
  CHECK(sd == Approx(1.0).epsilon(0.02));
  xt::xarray<std::int64_t> ids = {{1, 8, 3}, {3, 0, 9}};
  auto out = emb.forward(ids);
  CHECK(out.shape() == Shape{2, 3, 4});
  CHECK(out.data()(1, 2, 1) == emb.weight.data()(9, 1));
  sum(out).backward();
  for (std::size_t j = 0; j < 4; ++j) {
    CHECK(emb.weight.grad()(8, j) == 0.0);  // the padding row is used but not trained
    CHECK(emb.weight.grad()(3, j) == 2.0);  // id 3 appears twice
  }
  emb.zero_grad();
  // The padding row's value does reach the output, so only ids without it can be gradchecked.
  xt::xarray<std::int64_t> no_padding = {{1, 2, 3}, {3, 0, 9}};
  check_gradcheck([&](const std::vector<TD>&) { return emb.forward(no_padding); }, with_params(emb, {}));
  CHECK_THROWS_WITH(Embedding<double>(5, 2, gen, 5),
                    Catch::Contains("padding_idx 5") && Catch::Contains("5 embeddings"));
}

TEST_CASE("Dropout: identity in eval, restorable randomness in training", "[nn]") {
  auto gen = std::make_shared<Generator>(11);
  Dropout<double> drop(0.5, gen);
  CHECK(drop.to_string() == "Dropout(p=0.5, inplace=False)");
  CHECK(Dropout<double>(0.0).to_string() == "Dropout(p=0.0, inplace=False)");
  auto x = TD::ones({100});
  const auto state = gen->state();
  auto a = drop.forward(x);
  gen->set_state(state);  // what resuming a checkpoint does
  auto b = drop.forward(x);
  CHECK(a.data() == b.data());
  std::size_t zeros = 0;
  for (double v : a.data()) {
    CHECK((v == 0.0 || v == 2.0));
    zeros += v == 0.0;
  }
  CHECK(zeros > 25);
  CHECK(zeros < 75);
  drop.eval();
  CHECK(drop.forward(x).data() == x.data());
  CHECK_THROWS_WITH(Dropout<double>(1.5), Catch::Contains("1.5"));
  Dropout<double> all(1.0, gen);  // torch allows p = 1: everything dropped in training
  CHECK(all.forward(x).data() == xt::zeros<double>({100}));
  all.eval();
  CHECK(all.forward(x).data() == x.data());

  // Every generator of a model, by name, for a checkpoint.
  Sequential<double> two(std::make_shared<Dropout<double>>(0.1, 1), std::make_shared<Dropout<double>>(0.1, gen),
                         std::make_shared<Dropout<double>>(0.1, gen));
  const auto gens = two.named_generators();
  REQUIRE(gens.size() == 2);
  CHECK(gens[0].first == "0.generator");
  CHECK(gens[1].first == "1.generator");
  CHECK(gens[1].second == gen);
}

TEST_CASE("activations and Sequential print like torch", "[nn]") {
  Generator gen(0);
  Sequential<double> seq(std::make_shared<Linear<double>>(3, 4, gen), std::make_shared<ReLU<double>>(),
                         std::make_shared<GELU<double>>(GeluApproximate::Tanh), std::make_shared<Dropout<double>>(0.2));
  CHECK(seq.to_string() ==
        "Sequential(\n"
        "  (0): Linear(in_features=3, out_features=4, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): GELU(approximate='tanh')\n"
        "  (3): Dropout(p=0.2, inplace=False)\n"
        ")");
  std::ostringstream os;
  os << seq;
  CHECK(os.str() == seq.to_string());
  seq.eval();
  auto x = rand_input({2, 3}, 3);
  check_gradcheck([&](const std::vector<TD>& in) { return seq.forward(in.back()); }, with_params(seq, {x}));
  ModuleList<double> list;
  list.push_back(std::make_shared<ReLU<double>>());
  CHECK(list.to_string() == "ModuleList(\n  (0): ReLU()\n)");
  CHECK_THROWS_WITH(list.at<Linear<double>>(0), Catch::Contains("ReLU"));
}

TEST_CASE("SiLU, LeakyReLU, Tanh, Sigmoid, Softmax, LogSoftmax and Identity: the ops as modules, printed like torch",
          "[nn]") {
  Generator gen(0);
  Sequential<double> seq(std::make_shared<Linear<double>>(3, 4, gen), std::make_shared<Tanh<double>>(),
                         std::make_shared<Identity<double>>(), std::make_shared<Sigmoid<double>>(),
                         std::make_shared<Linear<double>>(4, 5, gen), std::make_shared<LogSoftmax<double>>(-1));
  CHECK(seq.to_string() ==
        "Sequential(\n"
        "  (0): Linear(in_features=3, out_features=4, bias=True)\n"
        "  (1): Tanh()\n"
        "  (2): Identity()\n"
        "  (3): Sigmoid()\n"
        "  (4): Linear(in_features=4, out_features=5, bias=True)\n"
        "  (5): LogSoftmax(dim=-1)\n"
        ")");
  const auto x = rand_input({2, 3}, 4);
  CHECK(Tanh<double>()(x).data() == tanh(x).data());
  CHECK(Sigmoid<double>()(x).data() == sigmoid(x).data());
  CHECK(Softmax<double>(0)(x).data() == softmax(x, 0).data());
  CHECK(Softmax<double>(1).to_string() == "Softmax(dim=1)");
  CHECK(SiLU<double>()(x).data() == silu(x).data());
  CHECK(LeakyReLU<double>(0.2)(x).data() == leaky_relu(x, 0.2).data());
  CHECK(LeakyReLU<double>().to_string() == "LeakyReLU(negative_slope=0.01)");
  CHECK(LeakyReLU<double>(1e-5).to_string() == "LeakyReLU(negative_slope=1e-05)");
  CHECK(SiLU<double>().to_string() == "SiLU()");
  CHECK(LogSoftmax<double>(1)(x).data() == log_softmax(x, 1).data());
  CHECK_THROWS_WITH(Softmax<double>(2)(x), Catch::Contains("2"));
  // Identity hands back its input itself: the same tensor, so the graph gains no node.
  const Tensor<double> same = Identity<double>()(x);
  CHECK(same.data().data() == x.data().data());
  check_gradcheck([&](const std::vector<TD>& in) { return seq.forward(in.back()); }, with_params(seq, {x}));
}

TEST_CASE("loss modules are the functional losses with their options", "[nn][loss]") {
  const auto logits = rand_input({4, 3}, 5);
  const IndexArray target = {0, 2, -100, 1};
  CrossEntropyOptions o;
  o.label_smoothing = 0.1;
  o.reduction = Reduction::Sum;
  CrossEntropyLoss<double> ce(o);
  CHECK(ce.to_string() == "CrossEntropyLoss()");
  CHECK(ce(logits, target).item() == cross_entropy(logits, target, o).item());
  CHECK(CrossEntropyLoss<double>()(logits, target).item() == cross_entropy(logits, target).item());
  CHECK_THROWS_WITH(ce(logits, IndexArray{0, 3, 1, 1}), Catch::Contains("3"));
  const auto logp = log_softmax(logits, 1);
  NLLLoss<double> nll(Reduction::None, 2);
  const IndexArray target2 = {0, 2, 2, 1};
  CHECK(nll(logp, target2).data() == nll_loss(logp, target2, Reduction::None, 2).data());
  CHECK(nll(logp, target2).data()(1) == 0.0);

  const auto y = rand_input({4, 3}, 6);
  CHECK(MSELoss<double>()(logits, y).item() == mse_loss(logits, y).item());
  CHECK(MSELoss<double>(Reduction::Sum)(logits, y).item() == mse_loss(logits, y, Reduction::Sum).item());
  CHECK(L1Loss<double>(Reduction::None)(logits, y).data() == l1_loss(logits, y, Reduction::None).data());

  const Tensor<double> bits = Tensor<double>::from_vector({0, 1, 1, 0, 1, 0, 0, 0, 1, 1, 1, 0}, {4, 3});
  BinaryCrossEntropyWithLogitsOptions<double> bo;
  bo.pos_weight = Tensor<double>::from_vector({1.0, 2.0, 0.5}, {3});
  BCEWithLogitsLoss<double> bce_logits(bo);
  CHECK(bce_logits.to_string() == "BCEWithLogitsLoss()");
  CHECK(bce_logits(logits, bits).item() == binary_cross_entropy_with_logits(logits, bits, bo).item());
  // As in torch, pos_weight is a buffer: it travels with state_dict and is not trained.
  const auto state = bce_logits.state_dict();
  REQUIRE(state.size() == 1);
  CHECK(state.begin()->first == "pos_weight");
  CHECK(bce_logits.parameters().empty());
  CHECK(BCEWithLogitsLoss<double>().state_dict().size() == 0);

  const auto probs = sigmoid(logits);
  BinaryCrossEntropyOptions<double> wo;
  wo.weight = Tensor<double>::from_vector({0.5, 1.0, 2.0}, {3});
  BCELoss<double> bce(wo);
  CHECK(bce(probs, bits).item() == binary_cross_entropy(probs, bits, wo).item());
  CHECK(bce.named_buffers().at(0).first == "weight");

  // The gradient flows through the module call as through the function.
  auto x = logits.detach().requires_grad_(true);
  ce(x, target).backward();
  auto x2 = logits.detach().requires_grad_(true);
  cross_entropy(x2, target, o).backward();
  CHECK(x.grad() == x2.grad());
}

TEST_CASE("Softplus, ELU, Flatten, CosineSimilarity and the new losses: the ops as modules, printed like torch",
          "[nn][loss]") {
  const auto x = rand_input({2, 3, 4}, 40, -3, 3);
  CHECK(Softplus<double>().to_string() == "Softplus(beta=1, threshold=20)");
  CHECK(Softplus<double>(0.5, 10).to_string() == "Softplus(beta=0.5, threshold=10)");
  CHECK(Softplus<double>(2, 5)(x).data() == softplus(x, 2, 5).data());
  CHECK(ELU<double>().to_string() == "ELU(alpha=1.0)");
  CHECK(ELU<double>(0.5).to_string() == "ELU(alpha=0.5)");
  CHECK(ELU<double>(0.5)(x).data() == elu(x, 0.5).data());
  CHECK(Flatten<double>().to_string() == "Flatten(start_dim=1, end_dim=-1)");
  CHECK(Flatten<double>(0, 2).to_string() == "Flatten(start_dim=0, end_dim=2)");
  CHECK(Flatten<double>()(x).shape() == Shape{2, 12});
  CHECK(Flatten<double>(0, 1)(x).shape() == Shape{6, 4});
  const auto y = rand_input({2, 3, 4}, 41);
  CHECK(CosineSimilarity<double>().to_string() == "CosineSimilarity()");
  CHECK(CosineSimilarity<double>(-1, 1e-6)(x, y).data() == cosine_similarity(x, y, -1, 1e-6).data());
  CHECK(SmoothL1Loss<double>().to_string() == "SmoothL1Loss()");
  CHECK(SmoothL1Loss<double>(Reduction::Sum, 0.5)(x, y).item() == smooth_l1_loss(x, y, Reduction::Sum, 0.5).item());
  CHECK(HuberLoss<double>().to_string() == "HuberLoss()");
  CHECK(HuberLoss<double>(Reduction::None, 2)(x, y).data() == huber_loss(x, y, Reduction::None, 2).data());
  const auto logp = log_softmax(x, -1), q = softmax(y, -1);
  CHECK(KLDivLoss<double>().to_string() == "KLDivLoss()");
  CHECK(KLDivLoss<double>(Reduction::BatchMean)(logp, q).item() == kl_div(logp, q, Reduction::BatchMean).item());
  CHECK(KLDivLoss<double>(Reduction::Sum, true)(logp, log(q)).item() ==
        kl_div(logp, log(q), Reduction::Sum, true).item());
  Generator gen(0);
  Sequential<double> seq(std::make_shared<Flatten<double>>(), std::make_shared<Linear<double>>(12, 5, gen),
                         std::make_shared<ELU<double>>(), std::make_shared<Softplus<double>>());
  CHECK(seq.to_string() ==
        "Sequential(\n"
        "  (0): Flatten(start_dim=1, end_dim=-1)\n"
        "  (1): Linear(in_features=12, out_features=5, bias=True)\n"
        "  (2): ELU(alpha=1.0)\n"
        "  (3): Softplus(beta=1, threshold=20)\n"
        ")");
  check_gradcheck([&](const std::vector<TD>& in) { return seq.forward(in.back()); }, with_params(seq, {x}));
}

namespace {
// Mean and standard deviation of a tensor's values, in double.
std::pair<double, double> moments(const xt::xarray<double>& v) {
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  const double mean = sum / static_cast<double>(v.size());
  for (double x : v) sq += (x - mean) * (x - mean);
  return {mean, std::sqrt(sq / static_cast<double>(v.size()))};
}
double phi(double x) { return std::exp(-x * x / 2) / std::sqrt(2 * 3.14159265358979323846); }
double cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
}  // namespace

TEST_CASE("init: torch.nn.init's gains, fans and bounds", "[nn][init]") {
  // torch 1.13: calculate_gain('tanh') 5/3, ('relu') sqrt(2), ('leaky_relu') sqrt(2 / 1.0001),
  // ('leaky_relu', 0.2) sqrt(2 / 1.04), ('selu') 0.75, ('conv2d') 1.
  CHECK(init::calculate_gain("tanh") == 5.0 / 3.0);
  CHECK(init::calculate_gain("relu") == std::sqrt(2.0));
  CHECK(init::calculate_gain("leaky_relu") == std::sqrt(2.0 / 1.0001));
  CHECK(init::calculate_gain("leaky_relu", 0.2) == std::sqrt(2.0 / 1.04));
  CHECK(init::calculate_gain("selu") == 0.75);
  CHECK(init::calculate_gain("conv2d") == 1.0);
  CHECK_THROWS_WITH(init::calculate_gain("swish"), Catch::Contains("\"swish\""));
  // [out, in, k...]: fan_in = in * prod(k), fan_out = out * prod(k).
  CHECK(init::calculate_fan_in_and_fan_out({5, 3}) == std::pair<std::size_t, std::size_t>{3, 5});
  CHECK(init::calculate_fan_in_and_fan_out({4, 3, 2, 2}) == std::pair<std::size_t, std::size_t>{12, 16});
  CHECK_THROWS_WITH(init::calculate_fan_in_and_fan_out({7}), Catch::Contains("[7]"));

  Generator gen(11);
  Tensor<double> w = Tensor<double>::zeros({200, 300});
  // The handle is written through: w itself holds the draws.
  init::xavier_uniform_(w, gen);
  const double bound = std::sqrt(6.0 / 500);
  CHECK(xt::amax(xt::abs(w.data()))() <= bound);
  CHECK(xt::amax(xt::abs(w.data()))() > 0.999 * bound);
  CHECK(moments(w.data()).second == Approx(bound / std::sqrt(3.0)).epsilon(0.02));
  init::xavier_normal_(w, gen, 2.0);
  CHECK(moments(w.data()).second == Approx(2.0 * std::sqrt(2.0 / 500)).epsilon(0.02));
  init::kaiming_uniform_(w, gen);  // a = 0, fan_in, leaky_relu: bound sqrt(6 / fan_in)
  CHECK(xt::amax(xt::abs(w.data()))() <= std::sqrt(6.0 / 300));
  CHECK(xt::amax(xt::abs(w.data()))() > 0.999 * std::sqrt(6.0 / 300));
  init::kaiming_normal_(w, gen, 0.0, init::FanMode::FanOut, "relu");
  CHECK(moments(w.data()).second == Approx(std::sqrt(2.0 / 200)).epsilon(0.02));
  CHECK(std::abs(moments(w.data()).first) < 0.01 * std::sqrt(2.0 / 200));

  // In place, the same draws as the factory from the same generator state.
  Generator g1(5), g2(5);
  Tensor<float> a = Tensor<float>::zeros({3, 4});
  init::uniform_(a, g1, -0.5, 0.25);
  CHECK(a.data() == Tensor<float>::uniform({3, 4}, -0.5f, 0.25f, g2).data());
  init::constant_(a, 0.5);
  CHECK(a.data() == Tensor<float>::full({3, 4}, 0.5f).data());
  CHECK(init::ones_(a).data() == Tensor<float>::ones({3, 4}).data());
  CHECK(init::zeros_(a).data() == Tensor<float>::zeros({3, 4}).data());

  // MultiheadAttention's projections are init's xavier_uniform_, drawn as before it used init: the
  // factory's uniform draws with the bound rounded to T first (trained models repeat to the digit).
  Generator g3(7), g4(7);
  nn::MultiheadAttention<float> mha(8, 2, g3);
  const float xb = static_cast<float>(std::sqrt(6.0 / (8 + 24)));
  Linear<float> out_proj_first(8, 8, g4);  // torch draws out_proj's initialization first
  CHECK(mha.in_proj_weight.data() == Tensor<float>::uniform({24, 8}, -xb, xb, g4).data());

  // A module's parameter is initialized through its handle.
  Linear<double> lin(3, 2, gen);
  init::zeros_(lin.bias);
  CHECK(lin.state_dict().at("bias").data() == xt::zeros<double>({2}));

  // The output of an op is refused: its backward reads the values init would overwrite.
  Tensor<double> leaf = Tensor<double>::ones({2, 2}, true);
  CHECK_THROWS_WITH(init::normal_(leaf * 2.0, gen), Catch::Contains("not a leaf"));
  Tensor<double> empty = Tensor<double>::zeros({0, 3});
  CHECK(init::xavier_uniform_(empty, gen).numel() == 0);
}

TEST_CASE("init: trunc_normal_ draws the truncated normal, even far in a tail", "[nn][init]") {
  Generator gen(3);
  Tensor<double> w = Tensor<double>::zeros({100000});
  // Standard normal on [-2, 2] (torch's default): variance 1 - 2 * 2 phi(2) / (Phi(2) - Phi(-2)).
  init::trunc_normal_(w, gen);
  CHECK(xt::amin(w.data())() >= -2.0);
  CHECK(xt::amax(w.data())() <= 2.0);
  const double z = cdf(2) - cdf(-2);
  CHECK(moments(w.data()).second == Approx(std::sqrt(1 - 4 * phi(2) / z)).epsilon(0.01));
  // N(1, 0.5) on [1.25, 2.5], one-sided: mean = mu + s (phi(alpha) - phi(beta)) / (Phi(beta) - Phi(alpha)).
  init::trunc_normal_(w, gen, 1.0, 0.5, 1.25, 2.5);
  CHECK(xt::amin(w.data())() >= 1.25);
  CHECK(xt::amax(w.data())() <= 2.5);
  const double alpha = 0.5, beta = 3.0;
  CHECK(moments(w.data()).first ==
        Approx(1.0 + 0.5 * (phi(alpha) - phi(beta)) / (cdf(beta) - cdf(alpha))).epsilon(0.005));
  // An interval 8 standard deviations out, where rejection sampling would not finish: the values stay
  // inside and pile up at its near end, as the density does.
  init::trunc_normal_(w, gen, 0.0, 1.0, 8.0, 9.0);
  CHECK(xt::amin(w.data())() >= 8.0);
  CHECK(xt::amax(w.data())() <= 9.0);
  CHECK(moments(w.data()).first == Approx(8.0 + 1.0 / 8.0).epsilon(0.01));  // the tail's mean, about a + 1 / a
  // ... and keep their resolution: near the upper end the cdf is within 1e-15 of 1 and has only a few
  // doubles left, so drawing there would give a handful of distinct values.
  CHECK(std::set<double>(w.data().begin(), w.data().end()).size() > 99000);
  CHECK_THROWS_WITH(init::trunc_normal_(w, gen, 0.0, 1.0, 2.0, -2.0), Catch::Contains("a 2 and b -2"));
  init::trunc_normal_(w, gen, 3.0, 0.0, -2.0, 2.0);
  CHECK(w.data() == xt::xarray<double>(xt::full_like(w.data(), 2.0)));
}

TEST_CASE("EmbeddingBag: sums and means of bags as torch's, padding left out", "[nn][embedding]") {
  Generator gen(0);
  EmbeddingBag<double> bag(4, 3, gen, EmbeddingBagMode::Mean, 0);
  CHECK(bag.to_string() == "EmbeddingBag(4, 3, mode=mean, padding_idx=0)");
  const xt::xarray<double> padding_row = xt::view(bag.weight.data(), 0);
  CHECK(padding_row == xt::xarray<double>{0, 0, 0});  // the padding row starts at zero, as torch's
  bag.weight.mutable_data() = xt::xarray<double>{{0, 0, 0}, {1, 2, 3}, {-1, 0.5, 2}, {4, -2, 1}};
  const xt::xarray<std::int64_t> ids = {{1, 2, 0}, {0, 0, 0}, {3, 3, 1}};
  // torch 1.13, nn.EmbeddingBag(4, 3, mode='mean', padding_idx=0) with these weights, ids and upstream
  // gradient: the padding id is not counted, a bag of padding only gives zeros.
  const Tensor<double> mean = bag(ids);
  CHECK(allclose(mean.data(), xt::xarray<double>{{0, 1.25, 2.5}, {0, 0, 0}, {3, -2.0 / 3, 5.0 / 3}}, 1e-15, 0));
  mean.backward(xt::xarray<double>{{1, 2, 3}, {1, 1, 1}, {0.5, -1, 2}});
  CHECK(
      allclose(bag.weight.grad(),
               xt::xarray<double>{{0, 0, 0}, {2.0 / 3, 2.0 / 3, 13.0 / 6}, {0.5, 1, 1.5}, {1.0 / 3, -2.0 / 3, 4.0 / 3}},
               1e-15, 1e-16));

  EmbeddingBag<double> sum(4, 3, gen, EmbeddingBagMode::Sum);
  CHECK(sum.to_string() == "EmbeddingBag(4, 3, mode=sum)");
  sum.weight.mutable_data() = bag.weight.data();
  // torch: s(ids, per_sample_weights=psw) with padding_idx unset, so id 0 adds its (zero) row.
  const TD psw(xt::xarray<double>{{0.5, 2, 1}, {1, 1, 1}, {-1, 0, 3}});
  CHECK(sum(ids, psw).data() == xt::xarray<double>{{-1.5, 2, 5.5}, {0, 0, 0}, {-1, 8, 8}});
  CHECK(sum(ids).data() == embedding_bag_sum(sum.weight, ids).data());
  CHECK_THROWS_WITH(bag(ids, psw), Catch::Contains("mode Sum"));
  CHECK_THROWS_WITH(bag(xt::xarray<std::int64_t>{1, 4}), Catch::Contains("4"));
  CHECK_THROWS_WITH(EmbeddingBag<double>(4, 3, gen, EmbeddingBagMode::Sum, 4), Catch::Contains("padding_idx 4"));
  // One bag of a 1-D ids gives one row.
  CHECK(bag(xt::xarray<std::int64_t>{3, 1}).shape() == Shape{3});
  check_gradcheck([&](const std::vector<TD>& in) { return bag.forward(ids) * in.back(); },
                  with_params(bag, {rand_input({3, 3}, 2)}));
  // per_sample_weights that require grad get theirs, beside the table's.
  check_gradcheck([&](const std::vector<TD>& in) { return sum.forward(ids, in.back()); },
                  with_params(sum, {rand_input({3, 3}, 3)}));
}

TEST_CASE("RMSNorm: weight of ones, torch 2.4's repr, eps None, state_dict round trip and gradcheck", "[nn]") {
  RMSNorm<double> norm(Shape{2, 3});
  CHECK(names_of(norm) == std::vector<std::string>{"weight"});
  CHECK(norm.weight.data() == xt::ones<double>({2, 3}));
  CHECK(norm.to_string() == "RMSNorm((2, 3), eps=None, elementwise_affine=True)");
  CHECK(RMSNorm<float>(64).to_string() == "RMSNorm((64,), eps=None, elementwise_affine=True)");
  CHECK(RMSNorm<float>(64, 1e-6).to_string() == "RMSNorm((64,), eps=1e-06, elementwise_affine=True)");
  RMSNorm<double> plain(8, 1e-5, false);
  CHECK(plain.num_parameters() == 0);
  CHECK(plain.state_dict().empty());
  CHECK(plain.to_string() == "RMSNorm((8,), eps=1e-05, elementwise_affine=False)");
  // eps None is the dtype's epsilon, chosen at the forward.
  const auto x = rand_input({4, 2, 3}, 2);
  CHECK(norm(x).data() == rms_norm(x, {2, 3}, norm.weight, std::numeric_limits<double>::epsilon()).data());
  Generator gen(1);
  norm.weight.mutable_data() = TD::uniform({2, 3}, 0.5, 1.5, gen).data();
  check_gradcheck([&](const std::vector<TD>& in) { return norm.forward(in.back()); }, with_params(norm, {x}));
  // The state_dict is the weight alone, as torch's; it loads into another RMSNorm.
  RMSNorm<double> other(Shape{2, 3});
  other.load_state_dict(norm.state_dict());
  CHECK(other(x).data() == norm(x).data());
  CHECK_THROWS_WITH(norm(TD::zeros({2, 4})), Catch::Contains("[2, 4]") && Catch::Contains("[2, 3]"));
}

TEST_CASE("RotaryEmbedding: tables as non-persistent buffers, the op at an offset, errors", "[nn]") {
  RotaryEmbedding<double> rope(8, 100.0, 32);
  CHECK(rope.num_parameters() == 0);
  CHECK(rope.state_dict().empty());  // nothing trained, nothing saved: the tables are rebuilt
  std::vector<std::string> buffers;
  for (const auto& [name, t] : rope.named_buffers()) buffers.push_back(name);
  CHECK(buffers == std::vector<std::string>{"cos", "sin"});
  CHECK(rope.cos.shape() == Shape{32, 4});
  CHECK(rope.to_string() == "RotaryEmbedding(8, base=100.0, max_len=32)");
  const auto [cos, sin] = rotary_tables<double>(8, 32, 100.0);
  CHECK(rope.cos.data() == cos);
  CHECK(rope.sin.data() == sin);
  const auto x = rand_input({2, 2, 3, 8}, 4);
  CHECK(rope(x, 5).data() == rotary_embedding(x, TD(cos), TD(sin), 5).data());
  check_gradcheck([&](const std::vector<TD>& in) { return rope.forward(in.back(), 29); }, {x});
  CHECK_THROWS_WITH(rope(x, 30), Catch::Contains("positions 30 to 32") && Catch::Contains("32 positions"));
  CHECK_THROWS_WITH(rope(TD::zeros({2, 3, 8})), Catch::Contains("[2, 3, 8]"));
  CHECK_THROWS_WITH(RotaryEmbedding<float>(7), Catch::Contains("head_dim") && Catch::Contains("got 7"));
  CHECK_THROWS_WITH(RotaryEmbedding<float>(8, -1.0), Catch::Contains("base") && Catch::Contains("got -1"));
  // In float the tables are rounded from double angles: far positions keep their accuracy.
  RotaryEmbedding<float> far(64, 10000.0, 4096);
  CHECK(far.sin.data()(4000, 0) == static_cast<float>(std::sin(4000.0)));
}

TEST_CASE("EmbeddingBag: the offsets form, include_last_offset and mode max, as torch's", "[nn][embedding]") {
  Generator gen(3);
  EmbeddingBag<double> bag(5, 2, gen, EmbeddingBagMode::Max, 0, /*include_last_offset=*/true);
  CHECK(bag.to_string() == "EmbeddingBag(5, 2, mode=max, padding_idx=0)");  // torch leaves include_last_offset out
  bag.weight.mutable_data() = xt::xarray<double>{{9, 9}, {1, -2}, {1, -2}, {0.5, 4}, {2, 2}};
  const xt::xarray<std::int64_t> input = {1, 2, 3, 1, 0, 4, 4};
  // torch 1.13: nn.EmbeddingBag(5, 2, mode='max', padding_idx=0, include_last_offset=True).
  const auto y = bag(input, xt::xarray<std::int64_t>{0, 2, 2, 5, 7});
  CHECK(y.data() == xt::xarray<double>{{1, -2}, {0, 0}, {1, 4}, {2, 2}});
  y.backward(xt::xarray<double>{{1, 2}, {3, 4}, {5, 6}, {7, 8}});
  CHECK(bag.weight.grad() == xt::xarray<double>{{0, 0}, {6, 2}, {0, 0}, {0, 6}, {7, 8}});
  CHECK_THROWS_WITH(bag(input, xt::xarray<std::int64_t>{0, 2}), Catch::Contains("length 7, got 2"));
  CHECK_THROWS_WITH(bag(input, xt::xarray<std::int64_t>{0, 7}, TD::ones({7})),
                    Catch::Contains("mode Sum") && Catch::Contains("got mode max"));
  // The fixed-length form in mode max too.
  CHECK(bag(xt::xarray<std::int64_t>{{1, 3}, {0, 0}}).data() == xt::xarray<double>{{1, 4}, {0, 0}});

  EmbeddingBag<double> sum(5, 2, gen, EmbeddingBagMode::Sum);
  sum.load_state_dict(bag.state_dict());  // the state_dict is the weight alone, as torch's
  CHECK(sum.weight.data() == bag.weight.data());
  const TD psw(xt::xarray<double>{1, 2, 3, 4, 5, 6, 7});
  CHECK(
      sum(input, xt::xarray<std::int64_t>{0, 3}, psw).data() ==
      embedding_bag(sum.weight, input, xt::xarray<std::int64_t>{0, 3}, EmbeddingBagMode::Sum, std::nullopt, false, psw)
          .data());
  check_gradcheck(
      [&](const std::vector<TD>&) {
        return sum.forward(input, xt::xarray<std::int64_t>{0, 1, 1, 4});
      },
      with_params(sum, {}));
}

TEST_CASE("positional encodings: the sinusoid table and learned rows", "[nn]") {
  SinusoidalPositionalEncoding<double> pe(5, 20);  // odd d_model: the last column is a sine
  const auto& t = pe.pe.data();
  CHECK(t(0, 0) == 0.0);
  CHECK(t(0, 1) == 1.0);
  CHECK(t(3, 2) == Approx(std::sin(3.0 / std::pow(10000.0, 2.0 / 5))));
  CHECK(t(3, 3) == Approx(std::cos(3.0 / std::pow(10000.0, 2.0 / 5))));
  CHECK(t(7, 4) == Approx(std::sin(7.0 / std::pow(10000.0, 4.0 / 5))));
  CHECK(pe.num_parameters() == 0);
  auto x = TD::zeros({3, 2, 5});  // [L, B, D]
  auto y = pe.forward(x);
  CHECK(y.data()(2, 1, 3) == t(2, 3));
  SinusoidalPositionalEncoding<double> pe_bf(5, 20, /*batch_first=*/true);
  CHECK(pe_bf.forward(TD::zeros({2, 3, 5})).data()(1, 2, 3) == t(2, 3));
  CHECK_THROWS_WITH(pe.forward(TD::zeros({21, 1, 5})), Catch::Contains("21") && Catch::Contains("max_len 20"));
  CHECK_THROWS_WITH(pe.forward(TD::zeros({3, 1, 4})), Catch::Contains("[3, 1, 4]"));

  Generator gen(2);
  LearnedPositionalEmbedding<double> learned(6, 3, gen, /*batch_first=*/true);
  CHECK(names_of(learned) == std::vector<std::string>{"weight"});
  check_gradcheck([&](const std::vector<TD>& in) { return learned.forward(in.back()); },
                  with_params(learned, {rand_input({2, 4, 3}, 9)}));
}

TEST_CASE("MultiheadAttention: torch's names, shapes, count and init", "[nn]") {
  Generator gen(0);
  MultiheadAttention<double> mha(8, 2, gen);
  CHECK(names_of(mha) ==
        std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"});
  CHECK(mha.in_proj_weight.shape() == Shape{24, 8});
  CHECK(mha.in_proj_bias.data() == xt::zeros<double>({24}));
  CHECK(mha.out_proj->bias.data() == xt::zeros<double>({8}));
  const double xavier = std::sqrt(6.0 / (8 + 24));
  CHECK(xt::amax(xt::abs(mha.in_proj_weight.data()))() <= xavier);
  CHECK(xt::amax(xt::abs(mha.in_proj_weight.data()))() > 0.8 * xavier);
  CHECK(xt::amax(xt::abs(mha.out_proj->weight.data()))() <= 1.0 / std::sqrt(8.0));
  CHECK(mha.to_string() ==
        "MultiheadAttention(\n"
        "  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)\n"
        ")");

  MultiheadAttentionOptions o(8, 2);
  o.kdim = 4;
  o.vdim = 6;
  MultiheadAttention<double> cross(o, gen);
  // torch: [n for n, _ in MultiheadAttention(8, 2, kdim=4, vdim=6).named_parameters()]
  CHECK(names_of(cross) == std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias",
                                                    "out_proj.weight", "out_proj.bias"});
  CHECK(cross.k_proj_weight.shape() == Shape{8, 4});
  CHECK(cross.v_proj_weight.shape() == Shape{8, 6});
  CHECK(cross.num_parameters() == 240);
  o.bias = false;
  CHECK(names_of(MultiheadAttention<double>(o, gen)) ==
        std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "out_proj.weight"});
}

TEST_CASE("MultiheadAttention: outputs and weights match PyTorch", "[nn]") {
  Generator gen(0);
  MultiheadAttention<double> mha(4, 2, gen);
  fill_like_reference(mha);
  mha.eval();
  auto x = reference_input({3, 2, 4});
  BoolArray kpm = {{false, false, true}, {false, false, false}};
  auto [out, w] = mha.forward(x, x, x, kpm, true, causal_mask(3));
  const xt::xarray<double> expected_out = xt::adapt(
      std::vector<double>{-0.3283288126, 0.8198115402,  1.2152969238,  0.2350409434,  -0.2466959653, 0.2238665487,
                          1.0255934756,  0.7965844952,  -0.0356093003, -0.2032727566, 0.7370479812,  1.1713980232,
                          -0.1487555686, -0.4079579862, 0.8130759649,  1.3898704144,  0.1279011897,  -0.0222052898,
                          0.6063728539,  0.9666335042,  -0.0039076128, 0.3982094774,  0.8144210362,  0.5839468704},
      std::vector<std::size_t>{3, 2, 4});
  const xt::xarray<double> expected_w = xt::adapt(
      std::vector<double>{1.0, 0.0, 0.0, 0.0858635974, 0.9141364026, 0.0, 0.1774297173, 0.8225702827, 0.0, 1.0, 0.0,
                          0.0, 0.1007661945, 0.8992338055, 0.0, 0.3223144627, 0.1851542524, 0.4925312849},
      std::vector<std::size_t>{2, 3, 3});
  CHECK(allclose(out.data(), expected_out, 1e-8, 1e-9));
  CHECK(allclose(w.data(), expected_w, 1e-8, 1e-9));

  MultiheadAttentionOptions o(4, 2);
  o.kdim = 3;
  o.vdim = 5;
  o.batch_first = true;
  MultiheadAttention<double> cross(o, gen);
  fill_like_reference(cross);
  auto [cout, cw] = cross.forward(reference_input({2, 3, 4}), reference_input({2, 5, 3}, 1.0),
                                  reference_input({2, 5, 5}, 2.0), {}, true, {}, /*average=*/false);
  CHECK(cout.shape() == Shape{2, 3, 4});
  CHECK(cw.shape() == Shape{2, 2, 3, 5});
  const std::vector<double> first_out{-0.6263283965, -0.0080315812, 1.4335642523, 1.1063080698, -0.4449855792};
  const std::vector<double> first_w{0.628248249, 0.123108262, 0.045300462, 0.0494561701, 0.153886857, 0.334892249};
  for (std::size_t i = 0; i < first_out.size(); ++i) CHECK(cout.data().data()[i] == Approx(first_out[i]).margin(1e-9));
  for (std::size_t i = 0; i < first_w.size(); ++i) CHECK(cw.data().data()[i] == Approx(first_w[i]).margin(1e-8));
  CHECK(cout.data()(1, 2, 3) == Approx(0.8400565948).margin(1e-9));
}

TEST_CASE("MultiheadAttention: per-head (B * H, L, S) masks and float masks match PyTorch", "[nn]") {
  Generator gen(0);
  MultiheadAttentionOptions o(4, 2);
  o.bias = false;
  MultiheadAttention<double> mha(o, gen);
  fill_like_reference(mha);
  auto x = reference_input({3, 2, 4});
  BoolArray per_head = xt::zeros<bool>({4, 3, 3});  // index b * H + h
  per_head(0, 0, 1) = per_head(1, 2, 0) = per_head(2, 1, 2) = per_head(3, 0, 0) = true;
  auto [out, w] = mha.forward(x, x, x, {}, true, per_head, /*average=*/false);
  const std::vector<double> expected_w{
      0.9184257047, 0.0,          0.0815742953, 0.0450321627, 0.62484636,   0.3301214773, 0.0951485053, 0.5335772211,
      0.3712742736, 0.8784150944, 0.0402347243, 0.0813501813, 0.0460383033, 0.6252736277, 0.328688069,  0.0,
      0.5895149231, 0.4104850769, 0.355533191,  0.2654312062, 0.3790356028, 0.0924276885, 0.9075723115, 0.0,
      0.3339286182, 0.1326989179, 0.5333724639, 0.0,          0.4151380493, 0.5848619507, 0.0923396766, 0.8738612537,
      0.0337990697, 0.3325677649, 0.133376518,  0.5340557172};
  const std::vector<double> expected_out{-0.0293035856, 0.5262309654, 0.1247320185, -0.5036116559, 0.0242266415};
  REQUIRE(w.numel() == expected_w.size());
  for (std::size_t i = 0; i < expected_w.size(); ++i) CHECK(w.data().data()[i] == Approx(expected_w[i]).margin(1e-9));
  for (std::size_t i = 0; i < expected_out.size(); ++i)
    CHECK(out.data().data()[i] == Approx(expected_out[i]).margin(1e-9));

  xt::xarray<double> float_mask = xt::zeros<double>({4, 3, 3});
  float_mask(1, 1, 1) = -2.0;
  float_mask(3, 2, 2) = 1.5;
  auto float_kpm = TD::from_vector({0.0, -1.0, 0.0, 0.5, 0.0, 0.0}, {2, 3});
  auto fout = mha.forward(x, x, x, float_kpm, false, TD(float_mask)).first;
  // torch 2's semantics (a float key_padding_mask is added; torch 1.13 treated it as bool), computed
  // in torch by passing the sum of both masks as attn_mask.
  const std::vector<double> expected_fout{-0.0795217149, 0.505663249, 0.1712203313, -0.4746135978, 0.0183612736};
  for (std::size_t i = 0; i < expected_fout.size(); ++i)
    CHECK(fout.data().data()[i] == Approx(expected_fout[i]).margin(1e-9));
  CHECK(fout.data()(2, 1, 3) == Approx(-0.0036375664).margin(1e-9));
}

TEST_CASE("MultiheadAttention: gradcheck in self- and cross-attention with every mask", "[nn][gradcheck]") {
  Generator gen(5);
  MultiheadAttention<double> mha(4, 2, gen);
  auto x = rand_input({3, 2, 4}, 1);
  BoolArray kpm = {{false, false, true}, {false, false, false}};
  SECTION("self-attention, no mask") {
    check_gradcheck([&](const std::vector<TD>& in) { return mha.forward(in.back(), in.back(), in.back()).first; },
                    with_params(mha, {x}));
  }
  SECTION("key_padding_mask") {
    check_gradcheck([&](const std::vector<TD>& in) { return mha.forward(in.back(), in.back(), in.back(), kpm).first; },
                    with_params(mha, {x}));
  }
  SECTION("causal mask, and the per-head weights") {
    check_gradcheck(
        [&](const std::vector<TD>& in) {
          auto [o, w] = mha.forward(in.back(), in.back(), in.back(), {}, true, causal_mask(3), false);
          return o + sum(w) * 0.0 + mean(w, {1, 3}, true).data()(0, 0, 0);
        },
        with_params(mha, {x}));
  }
  SECTION("causal float mask and key_padding_mask together, weights averaged") {
    auto mask = generate_square_subsequent_mask<double>(3);
    check_gradcheck(
        [&](const std::vector<TD>& in) {
          auto [o, w] = mha.forward(in.back(), in.back(), in.back(), kpm, true, mask);
          return sum(o) + sum(w * w);
        },
        with_params(mha, {x}));
  }
  SECTION("cross-attention with L != S and kdim, vdim != embed_dim") {
    MultiheadAttentionOptions o(4, 2);
    o.kdim = 3;
    o.vdim = 5;
    MultiheadAttention<double> cross(o, gen);
    BoolArray mem_kpm = {{false, true, false, false, true}, {false, false, false, false, false}};
    check_gradcheck(
        [&](const std::vector<TD>& in) {
          const auto n = in.size();
          return cross.forward(in[n - 3], in[n - 2], in[n - 1], mem_kpm).first;
        },
        with_params(cross, {x, rand_input({5, 2, 3}, 2), rand_input({5, 2, 5}, 3)}));
  }
  SECTION("no biases, batch_first") {
    MultiheadAttentionOptions o(4, 2);
    o.bias = false;
    o.batch_first = true;
    MultiheadAttention<double> plain(o, gen);
    check_gradcheck(
        [&](const std::vector<TD>& in) {
          auto [out, w] = plain.forward(in.back(), in.back(), in.back(), {}, true, causal_mask(3));
          return sum(out) + sum(w * w);
        },
        with_params(plain, {rand_input({2, 3, 4}, 6)}));
  }
  SECTION("cross-attention through the packed weight, key is value") {
    auto mem = rand_input({5, 2, 4}, 4);
    check_gradcheck(
        [&](const std::vector<TD>& in) {
          const auto n = in.size();
          return mha.forward(in[n - 2], in[n - 1], in[n - 1]).first;
        },
        with_params(mha, {x, mem}));
  }
}

TEST_CASE("MultiheadAttention: masking semantics", "[nn]") {
  Generator gen(8);
  MultiheadAttentionOptions o(6, 3);
  o.batch_first = true;
  MultiheadAttention<double> mha(o, gen);
  auto x = rand_input({2, 5, 6}, 1);

  SECTION("weights rows sum to 1; none are returned without need_weights") {
    CHECK_FALSE(mha.forward(x, x, x, {}, /*need_weights=*/false).second.defined());
    auto [out, w] = mha.forward(x, x, x, {}, true, {}, false);
    REQUIRE(w.shape() == Shape{2, 3, 5, 5});
    auto rows = sum(w, {-1});
    for (double v : rows.data()) CHECK(v == Approx(1.0));
  }
  SECTION("the causal mask hides the future: changing a later position leaves earlier outputs bit-identical") {
    auto before = mha.forward(x, x, x, {}, false, causal_mask(5)).first;
    auto changed = TD(x.data());
    for (std::size_t d = 0; d < 6; ++d) changed.mutable_data()(1, 3, d) += 10.0;
    auto after = mha.forward(changed, changed, changed, {}, false, causal_mask(5)).first;
    auto is_causal = mha.forward(changed, changed, changed, {}, false, {}, true, /*is_causal=*/true).first;
    CHECK(is_causal.data() == after.data());
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t l = 0; l < 5; ++l)
        for (std::size_t d = 0; d < 6; ++d) {
          if (b == 1 && l >= 3)
            CHECK(before.data()(b, l, d) != after.data()(b, l, d));
          else
            CHECK(before.data()(b, l, d) == after.data()(b, l, d));
        }
  }
  SECTION("padded keys change nothing for real queries, and get zero weight") {
    BoolArray kpm = {{false, false, false, true, true}, {false, false, false, false, false}};
    auto [out, w] = mha.forward(x, x, x, kpm);
    auto changed = TD(x.data());
    for (std::size_t d = 0; d < 6; ++d) changed.mutable_data()(0, 4, d) = 100.0 * (d + 1);
    auto out2 = mha.forward(changed, changed, changed, kpm).first;
    for (std::size_t l = 0; l < 4; ++l)  // query 4 itself changed; the other queries are untouched
      for (std::size_t d = 0; d < 6; ++d) CHECK(out.data()(0, l, d) == Approx(out2.data()(0, l, d)).epsilon(1e-12));
    for (std::size_t l = 0; l < 5; ++l) {
      CHECK(w.data()(0, l, 3) == 0.0);
      CHECK(w.data()(0, l, 4) == 0.0);
    }
    // A float mask of 0 / -inf behaves like the bool mask.
    xt::xarray<double> fk = xt::zeros<double>({2, 5});
    fk(0, 3) = fk(0, 4) = -std::numeric_limits<double>::infinity();
    CHECK(allclose(mha.forward(x, x, x, TD(fk)).first.data(), out.data(), 1e-12, 1e-12));
  }
  SECTION("a fully masked query gets zero weights and out_proj.bias, with finite gradients") {
    Generator g(3);
    mha.out_proj->bias.mutable_data() = TD::uniform({6}, -1, 1, g).data();
    BoolArray all = xt::zeros<bool>({2, 5});
    xt::view(all, 0, xt::all()) = true;  // batch 0: every key is padding
    auto [out, w] = mha.forward(x, x, x, all);
    for (std::size_t l = 0; l < 5; ++l) {
      for (std::size_t s = 0; s < 5; ++s) CHECK(w.data()(0, l, s) == 0.0);
      for (std::size_t d = 0; d < 6; ++d) CHECK(out.data()(0, l, d) == mha.out_proj->bias.data()(d));
    }
    sum(out).backward();
    for (double v : mha.in_proj_weight.grad()) CHECK(std::isfinite(v));
    mha.zero_grad();
  }
}

TEST_CASE("MultiheadAttention: unbatched inputs are a batch of one", "[nn]") {
  Generator gen(6);
  for (bool batch_first : {false, true}) {
    MultiheadAttentionOptions o(4, 2);
    o.batch_first = batch_first;
    MultiheadAttention<double> mha(o, gen);
    auto x = rand_input({3, 4}, 1);
    auto batched = batch_first ? unsqueeze(x, 0) : unsqueeze(x, 1);
    BoolArray kpm = {false, true, false};
    BoolArray kpm_batched = {{false, true, false}};
    auto [out, w] = mha.forward(x, x, x, kpm, true, causal_mask(3), false);
    auto [bout, bw] = mha.forward(batched, batched, batched, kpm_batched, true, causal_mask(3), false);
    CHECK(out.shape() == Shape{3, 4});
    CHECK(w.shape() == Shape{2, 3, 3});
    CHECK(out.data() == squeeze(bout, batch_first ? 0 : 1).data());
    CHECK(w.data() == squeeze(bw, 0).data());
    check_gradcheck([&](const std::vector<TD>& in) { return mha.forward(in.back(), in.back(), in.back(), kpm).first; },
                    with_params(mha, {x}));
  }
  Generator g(0);
  MultiheadAttention<double> mha(4, 2, g);
  CHECK_THROWS_WITH(mha.forward(TD::zeros({3, 4}), TD::zeros({3, 1, 4}), TD::zeros({3, 1, 4})),
                    Catch::Contains("unbatched") && Catch::Contains("[3, 1, 4]"));
}

TEST_CASE("MultiheadAttention in float agrees with double", "[nn]") {
  Generator gd(9), gf(9);
  MultiheadAttention<double> md(6, 3, gd);
  MultiheadAttention<float> mf(6, 3, gf);
  auto xd = rand_input({4, 2, 6}, 1);
  Tensor<float> xf(xt::xarray<float>(xt::cast<float>(xd.data())));
  auto [od, wd] = md.forward(xd, xd, xd, {}, true, causal_mask(4));
  auto [of, wf] = mf.forward(xf, xf, xf, {}, true, causal_mask(4));
  CHECK(allclose(xt::xarray<double>(xt::cast<double>(of.data())), od.data(), 1e-4, 1e-5));
  CHECK(allclose(xt::xarray<double>(xt::cast<double>(wf.data())), wd.data(), 1e-4, 1e-5));
}

TEST_CASE("MultiheadAttention: errors name the numbers and shapes", "[nn][errors]") {
  Generator gen(0);
  CHECK_THROWS_AS(MultiheadAttention<double>(10, 3, gen), ShapeError);
  CHECK_THROWS_WITH(MultiheadAttention<double>(10, 3, gen),
                    Catch::Contains("embed_dim 10") && Catch::Contains("num_heads 3"));
  MultiheadAttention<double> mha(4, 2, gen);
  auto x = TD::zeros({3, 2, 4});
  CHECK_THROWS_WITH(mha.forward(TD::zeros({3, 2, 5}), x, x), Catch::Contains("query") && Catch::Contains("[3, 2, 5]"));
  CHECK_THROWS_WITH(mha.forward(x, TD::zeros({3, 4}), x), Catch::Contains("key") && Catch::Contains("[3, 4]"));
  CHECK_THROWS_WITH(mha.forward(x, TD::zeros({5, 2, 4}), TD::zeros({4, 2, 4})),
                    Catch::Contains("[5, 2, 4]") && Catch::Contains("[4, 2, 4]"));
  CHECK_THROWS_WITH(mha.forward(x, x, x, BoolArray(xt::zeros<bool>({3, 2}))),
                    Catch::Contains("key_padding_mask") && Catch::Contains("[2, 3]") && Catch::Contains("[3, 2]"));
  CHECK_THROWS_WITH(mha.forward(x, x, x, {}, true, BoolArray(xt::zeros<bool>({3, 4}))),
                    Catch::Contains("attn_mask") && Catch::Contains("[3, 4]"));
}

TEST_CASE("TransformerEncoderLayer: torch's names, count and printed tree", "[nn]") {
  Generator gen(0);
  TransformerEncoderLayer<double> layer(TransformerLayerOptions(8, 2), gen);
  // torch: [n for n, _ in torch.nn.TransformerEncoderLayer(8, 2).named_parameters()]
  const std::vector<std::string> torch_names{"self_attn.in_proj_weight",
                                             "self_attn.in_proj_bias",
                                             "self_attn.out_proj.weight",
                                             "self_attn.out_proj.bias",
                                             "linear1.weight",
                                             "linear1.bias",
                                             "linear2.weight",
                                             "linear2.bias",
                                             "norm1.weight",
                                             "norm1.bias",
                                             "norm2.weight",
                                             "norm2.bias"};
  CHECK(names_of(layer) == torch_names);
  CHECK(layer.num_parameters() == 35144);
  const auto sd = layer.state_dict();
  CHECK(sd.size() == torch_names.size());
  CHECK(sd.at("linear1.weight").shape() == Shape{2048, 8});
  CHECK(sd.at("self_attn.in_proj_weight").same_as(layer.self_attn->in_proj_weight));
  CHECK(layer.to_string() ==
        "TransformerEncoderLayer(\n"
        "  (self_attn): MultiheadAttention(\n"
        "    (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)\n"
        "  )\n"
        "  (linear1): Linear(in_features=8, out_features=2048, bias=True)\n"
        "  (dropout): Dropout(p=0.1, inplace=False)\n"
        "  (linear2): Linear(in_features=2048, out_features=8, bias=True)\n"
        "  (norm1): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n"
        "  (norm2): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n"
        "  (dropout1): Dropout(p=0.1, inplace=False)\n"
        "  (dropout2): Dropout(p=0.1, inplace=False)\n"
        ")");
  layer.eval();
  CHECK_FALSE(layer.self_attn->out_proj->is_training());
  CHECK_FALSE(layer.dropout2->is_training());
  // One generator drives all of the layer's dropouts.
  CHECK(layer.dropout1->generator() == layer.dropout_generator());
  CHECK(layer.self_attn->dropout_generator() == layer.dropout_generator());
  const auto gens = layer.named_generators();
  REQUIRE(gens.size() == 1);
  CHECK(gens[0].first == "dropout_generator");
}

TEST_CASE("TransformerDecoderLayer and the stacks: torch's names and counts", "[nn]") {
  Generator gen(0);
  TransformerLayerOptions o(8, 2);
  o.dim_feedforward = 16;
  TransformerDecoderLayer<double> dec(o, gen);
  CHECK(names_of(dec) == std::vector<std::string>{
                             "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                             "self_attn.out_proj.bias", "multihead_attn.in_proj_weight", "multihead_attn.in_proj_bias",
                             "multihead_attn.out_proj.weight", "multihead_attn.out_proj.bias", "linear1.weight",
                             "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight", "norm1.bias",
                             "norm2.weight", "norm2.bias", "norm3.weight", "norm3.bias"});
  CHECK(dec.num_parameters() == 904);

  TransformerEncoder<double> enc(o, 2, gen, std::make_shared<LayerNorm<double>>(8));
  CHECK(enc.num_parameters() == 1216);
  const auto names = names_of(enc);
  CHECK(names.front() == "layers.0.self_attn.in_proj_weight");
  CHECK(names[12] == "layers.1.self_attn.in_proj_weight");
  CHECK(names.back() == "norm.bias");
  CHECK(enc.to_string().rfind("TransformerEncoder(\n  (layers): ModuleList(\n    (0): TransformerEncoderLayer(\n", 0) ==
        0);
  CHECK(enc.to_string().find("\n  (norm): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n)") !=
        std::string::npos);
  // Each layer has its own initial weights.
  CHECK(enc.layers->at<TransformerEncoderLayer<double>>(0)->linear1->weight.data() !=
        enc.layers->at<TransformerEncoderLayer<double>>(1)->linear1->weight.data());
  REQUIRE(enc.named_generators().size() == 1);
  CHECK(enc.named_generators()[0].second == enc.layers->at<TransformerEncoderLayer<double>>(1)->dropout2->generator());
  TransformerDecoder<double> decs(o, 2, gen);
  CHECK(decs.num_parameters() == 1808);
  CHECK(names_of(decs).back() == "layers.1.norm3.bias");
}

TEST_CASE("Transformer layers match PyTorch outputs", "[nn]") {
  Generator gen(0);
  auto x = reference_input({3, 2, 4});
  BoolArray kpm = {{false, false, true}, {false, false, false}};
  SECTION("encoder post-LN and pre-LN with gelu") {
    const std::vector<double> post{0.9620893995, -0.3378527224, 0.6012960351, 0.2580375213, 1.0602109745};
    const std::vector<double> pre{2.1512459622, 1.108023101, 2.2987534425, 2.3075717998, 1.5067130098};
    for (bool norm_first : {false, true}) {
      TransformerEncoderLayer<double> layer(small_layer(Activation::GELU, norm_first, 0.1), gen);
      fill_like_reference(layer);
      layer.eval();
      auto y = layer.forward(x, {}, kpm);
      const auto& expected = norm_first ? pre : post;
      for (std::size_t i = 0; i < expected.size(); ++i) CHECK(y.data().data()[i] == Approx(expected[i]).margin(1e-9));
    }
  }
  SECTION("decoder post-LN with a causal target mask") {
    TransformerDecoderLayer<double> layer(small_layer(), gen);
    fill_like_reference(layer);
    auto y = layer.forward(x, reference_input({5, 2, 4}, 0.5), causal_mask(3));
    const std::vector<double> expected{0.9685692233, -0.1671974037, 0.122969473, -0.0901255769, 0.8085702162};
    for (std::size_t i = 0; i < expected.size(); ++i) CHECK(y.data().data()[i] == Approx(expected[i]).margin(1e-9));
    CHECK(y.data()(2, 1, 3) == Approx(-0.1070762109).margin(1e-9));
  }
}

TEST_CASE("Transformer layers pass gradcheck", "[nn][gradcheck]") {
  Generator gen(21);
  auto x = rand_input({3, 2, 4}, 1);
  BoolArray kpm = {{false, false, true}, {false, false, false}};
  for (auto act : {Activation::ReLU, Activation::GELU})
    for (bool norm_first : {false, true}) {
      TransformerEncoderLayer<double> layer(small_layer(act, norm_first, 0.1), gen);
      layer.eval();  // dropout off
      INFO("activation " << (act == Activation::ReLU ? "relu" : "gelu") << ", norm_first " << norm_first);
      check_gradcheck([&](const std::vector<TD>& in) { return layer.forward(in.back(), causal_mask(3), kpm); },
                      with_params(layer, {x}));
    }
  SECTION("decoder layer, pre-LN and post-LN") {
    for (bool norm_first : {false, true}) {
      TransformerDecoderLayer<double> layer(small_layer(Activation::GELU, norm_first), gen);
      BoolArray mem_kpm = {{false, false, false, true}, {false, false, false, false}};
      check_gradcheck(
          [&](const std::vector<TD>& in) {
            const auto n = in.size();
            return layer.forward(in[n - 2], in[n - 1], causal_mask(3), {}, kpm, mem_kpm);
          },
          with_params(layer, {x, rand_input({4, 2, 4}, 2)}));
    }
  }
  SECTION("stacks of two layers with a final norm") {
    TransformerEncoder<double> enc(small_layer(), 2, gen, std::make_shared<LayerNorm<double>>(4));
    check_gradcheck([&](const std::vector<TD>& in) { return enc.forward(in.back(), {}, kpm, /*is_causal=*/true); },
                    with_params(enc, {x}));
    TransformerDecoder<double> dec(small_layer(Activation::ReLU, true), 2, gen);
    check_gradcheck(
        [&](const std::vector<TD>& in) {
          const auto n = in.size();
          return dec.forward(in[n - 2], in[n - 1], {}, {}, {}, {}, /*tgt_is_causal=*/true);
        },
        with_params(dec, {x, rand_input({4, 2, 4}, 2)}));
  }
  SECTION("FeedForward") {
    FeedForward<double> ff(4, 6, gen, 0.0, Activation::GELU);
    CHECK(names_of(ff) == std::vector<std::string>{"linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"});
    check_gradcheck([&](const std::vector<TD>& in) { return ff.forward(in.back()); }, with_params(ff, {x}));
  }
}

TEST_CASE("MultiheadAttention: dropout on the attention weights in training only", "[nn]") {
  Generator gen(2);
  MultiheadAttentionOptions o(4, 2);
  o.dropout = 0.5;
  MultiheadAttention<double> mha(o, gen);
  auto x = rand_input({6, 1, 4}, 3);
  auto [out, w] = mha.forward(x, x, x, {}, true, {}, /*average=*/false);
  auto [ref_out, ref_w] = [&] {
    mha.eval();
    return mha.forward(x, x, x, {}, true, {}, false);
  }();
  // Kept weights are scaled by 1 / (1 - p) = 2; dropped ones are 0.
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < w.numel(); ++i) {
    const double v = w.data().data()[i], r = ref_w.data().data()[i];
    CHECK((v == 0.0 || v == Approx(2 * r)));
    dropped += v == 0.0;
  }
  CHECK(dropped > w.numel() / 4);
  CHECK(dropped < 3 * w.numel() / 4);
  CHECK(out.data() != ref_out.data());

  // dropout = 1 (torch allows it) drops every weight: the output is out_proj's bias alone.
  MultiheadAttentionOptions all(4, 2);
  all.dropout = 1.0;
  Generator gen1(2);
  MultiheadAttention<double> mha1(all, gen1);
  mha1.out_proj->bias.mutable_data() = xt::xarray<double>{0.5, -1, 2, 3};  // zero at init
  auto [out1, w1] = mha1.forward(x, x, x, {}, true, {}, false);
  CHECK(w1.data() == xt::zeros<double>(w1.shape()));
  for (std::size_t i = 0; i < out1.numel(); ++i) {
    CHECK(out1.data().data()[i] == mha1.out_proj->bias.data()(i % 4));
  }
  MultiheadAttentionOptions too_much(4, 2);
  too_much.dropout = 1.5;
  CHECK_THROWS_WITH(MultiheadAttention<double>(too_much, gen1), Catch::Contains("got 1.5"));
}

TEST_CASE("dropout in training: the layer's randomness is restorable and differs from eval", "[nn]") {
  Generator gen(4);
  TransformerEncoderLayer<float> layer(small_layer(Activation::ReLU, false, 0.5), gen);
  Generator xg(1);
  auto x = Tensor<float>::uniform({3, 2, 4}, -1, 1, xg);
  const auto state = layer.dropout_generator()->state();
  auto a = layer.forward(x);
  layer.dropout_generator()->set_state(state);
  auto b = layer.forward(x);
  CHECK(a.data() == b.data());
  auto c = layer.forward(x);  // the stream moved on: other masks
  CHECK(a.data() != c.data());
  layer.eval();
  CHECK(layer.forward(x).data() == layer.forward(x).data());
}

TEST_CASE("activation_dropout: the feed-forward's inner dropout on its own rate, dropout's by default", "[nn]") {
  Generator xg(1);
  const auto x = Tensor<float>::uniform({3, 2, 4}, -1, 1, xg);
  for (bool decoder : {false, true}) {
    INFO((decoder ? "decoder" : "encoder") << " layer");
    // Only the inner dropout on: training differs from eval.
    TransformerLayerOptions inner = small_layer(Activation::ReLU, false, 0.0);
    inner.activation_dropout = 0.5;
    // The residual dropouts on, the inner one off (GPT-2's layout).
    TransformerLayerOptions outer = small_layer(Activation::ReLU, false, 0.5);
    outer.activation_dropout = 0.0;
    Generator gen(4);
    if (decoder) {
      TransformerDecoderLayer<float> layer(inner, gen);
      const auto trained = layer.forward(x, x);
      layer.eval();
      CHECK_FALSE(bool(trained.data() == layer.forward(x, x).data()));
      TransformerDecoderLayer<float> other(outer, gen);
      CHECK(other.dropout->p == 0.0);
      CHECK(other.dropout3->p == 0.5);
    } else {
      TransformerEncoderLayer<float> layer(inner, gen);
      const auto trained = layer.forward(x);
      layer.eval();
      CHECK_FALSE(bool(trained.data() == layer.forward(x).data()));
      TransformerEncoderLayer<float> other(outer, gen);
      CHECK(other.dropout->p == 0.0);
      CHECK(other.dropout2->p == 0.5);
      // Unset, it follows dropout: all off, training is eval.
      TransformerEncoderLayer<float> plain(small_layer(Activation::ReLU, false, 0.0), gen);
      const auto plain_trained = plain.forward(x);
      plain.eval();
      CHECK(bool(plain_trained.data() == plain.forward(x).data()));
    }
  }
}

TEST_CASE("a saved state_dict loads into another model through its aliasing tensors", "[nn]") {
  Generator g1(1), g2(2);
  TransformerEncoder<float> a(small_layer(), 2, g1, std::make_shared<LayerNorm<float>>(4));
  TransformerEncoder<float> b(small_layer(), 2, g2, std::make_shared<LayerNorm<float>>(4));
  Generator xg(3);
  auto x = Tensor<float>::uniform({3, 2, 4}, -1, 1, xg);
  a.eval();
  b.eval();
  REQUIRE(a.forward(x).data() != b.forward(x).data());
  const auto path = (std::filesystem::temp_directory_path() /
                     ("tapegrad_nn_state_" +
                      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ".safetensors"))
                        .string();
  io::safetensors::save_state_dict(path, a.state_dict());
  auto target = b.state_dict();
  io::safetensors::load_state_dict(path, target);
  std::filesystem::remove(path);
  CHECK(a.forward(x).data() == b.forward(x).data());
}

// ---------------------------------------------------------------------------- need_weights and masks

namespace {
// Runs mha twice from the same dropout-generator state, without and with the attention weights (which
// the kernel then materializes, with their own backward). Outputs and every gradient must agree.
void check_weights_change_nothing(MultiheadAttention<double>& mha, const std::vector<TD>& inputs,
                                  const AttentionMask<double>& kpm, const AttentionMask<double>& attn_mask,
                                  bool is_causal) {
  const auto params = mha.parameters();
  const auto state = mha.dropout_generator()->state();
  const auto run = [&](bool need_weights) {
    for (auto p : params) p.zero_grad();
    std::vector<TD> leaves;
    for (const auto& x : inputs) leaves.push_back(TD(x.data(), true));
    const TD& q = leaves[0];
    const TD& k = leaves.size() > 1 ? leaves[1] : q;
    const TD& v = leaves.size() > 2 ? leaves[2] : k;
    mha.dropout_generator()->set_state(state);
    auto out = mha.forward(q, k, v, kpm, need_weights, attn_mask, true, is_causal).first;
    CHECK(out.grad_fn_name() != "");
    Generator g(11);
    (out * TD::uniform(out.shape(), -1, 1, g)).backward(xt::xarray<double>(xt::ones<double>(out.shape())));
    std::vector<xt::xarray<double>> grads{out.data()};
    for (const auto& x : leaves) grads.push_back(x.grad());
    for (const auto& p : params) grads.push_back(p.grad());
    return grads;
  };
  const auto without = run(false), with = run(true);
  if (mha.is_training()) CHECK(mha.dropout_generator()->state().s != state.s);  // both drew
  REQUIRE(without.size() == with.size());
  for (std::size_t i = 0; i < without.size(); ++i) {
    INFO("result " << i << " (0: output, then inputs, then parameters)");
    CHECK(allclose(without[i], with[i], 1e-10, 1e-12));
  }
}
}  // namespace

TEST_CASE("MultiheadAttention: asking for the weights changes nothing else: masks, dead rows, dropout",
          "[nn][attention]") {
  Generator gen(8);
  MultiheadAttentionOptions o(6, 3);
  o.dropout = 0.3;
  MultiheadAttention<double> mha(o, gen);
  auto x = rand_input({4, 2, 6}, 21);                                          // [L, B, E]
  BoolArray kpm = {{false, true, false, true}, {false, false, false, false}};  // [B, S]
  BoolArray blocks_all = {{true, true, true, true}, {false, false, true, false}};
  BoolArray per_head = xt::zeros<bool>({6, 4, 4});
  per_head(1, 2, 0) = per_head(4, 0, 3) = per_head(5, 3, 1) = true;
  for (bool training : {true, false}) {
    mha.train(training);
    SECTION(std::string("self-attention, key padding") + (training ? ", training" : ", eval")) {
      check_weights_change_nothing(mha, {x}, kpm, {}, false);
    }
    SECTION(std::string("self-attention, causal, dead rows") + (training ? ", training" : ", eval")) {
      check_weights_change_nothing(mha, {x}, blocks_all, {}, true);
      check_weights_change_nothing(mha, {x}, {}, causal_mask(4), false);
      check_weights_change_nothing(mha, {x}, kpm, per_head, false);
    }
    SECTION(std::string("cross-attention, L != S") + (training ? ", training" : ", eval")) {
      BoolArray mem_kpm = {{false, true, false, false, true}, {true, true, true, true, true}};
      check_weights_change_nothing(mha, {x, rand_input({5, 2, 6}, 22), rand_input({5, 2, 6}, 23)}, mem_kpm, {}, false);
      check_weights_change_nothing(mha, {x, rand_input({5, 2, 6}, 24)}, {}, {}, false);
    }
  }
}
