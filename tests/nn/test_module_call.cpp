// Calling a module runs its forward (torch's __call__): every nn module, Sequential, and a module of
// the user's own that names itself in its base, Module<T, Derived>.
#include <catch2/catch.hpp>
#include <memory>
#include <type_traits>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/nn/nn.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using tapegrad::testing::rand_input;
using TD = Tensor<double>;

namespace {

// The example of nn/module.hpp, as a user writes it: the base names the class, nothing else is needed.
struct MLP : nn::Module<float, MLP> {
  MLP(Generator& gen) { fc = this->register_module("fc", std::make_shared<nn::Linear<float>>(4, 2, gen)); }
  Tensor<float> forward(const Tensor<float>& x) const { return (*fc)(x).relu(); }
  std::string name() const override { return "MLP"; }
  std::shared_ptr<nn::Linear<float>> fc;
};

// A forward with several arguments, a default, and a non-const forward.
struct Scaled : nn::Module<double, Scaled> {
  int calls = 0;
  TD forward(const TD& x, double scale = 2.0) {
    ++calls;
    return x * scale;
  }
  std::string name() const override { return "Scaled"; }
};

// model(args...) equals model.forward(args...) for a module in eval mode (no randomness).
template <typename M, typename... Args>
void check_call(const M& module, const Args&... args) {
  const auto called = module(args...);
  const auto direct = module.forward(args...);
  CHECK(called.data() == direct.data());
  CHECK(called.grad_fn_name() == direct.grad_fn_name());
}

}  // namespace

// The operator takes part in overload resolution only for arguments forward accepts.
static_assert(std::is_invocable_r_v<TD, const Linear<double>&, const TD&>);
static_assert(!std::is_invocable_v<const Linear<double>&, int>);
static_assert(!std::is_invocable_v<const Linear<double>&>);
static_assert(std::is_invocable_v<Scaled&, const TD&>);
static_assert(std::is_invocable_v<Scaled&, const TD&, double>);
static_assert(!std::is_invocable_v<const Scaled&, const TD&>);              // forward is not const
static_assert(!std::is_invocable_v<const ModuleList<double>&, const TD&>);  // no forward, as torch
// Still a Module<T>: pointers to the base hold any module.
static_assert(std::is_base_of_v<Module<float>, MLP>);
static_assert(std::is_convertible_v<std::shared_ptr<Linear<double>>, std::shared_ptr<Module<double>>>);

TEST_CASE("a module of the user's own is callable with no boilerplate", "[nn][call]") {
  Generator gen(1);
  MLP model(gen);
  const Tensor<float> x = Tensor<float>::uniform({3, 4}, -1, 1, gen);
  const Tensor<float> y = model(x);
  CHECK(y.shape() == Shape{3, 2});
  CHECK(y.data() == model.forward(x).data());
  auto ptr = std::make_shared<MLP>(gen);
  CHECK((*ptr)(x).shape() == Shape{3, 2});
  // Gradients flow to the parameters through the call.
  model(x).sum().backward();
  CHECK(model.fc->weight.has_grad());
  CHECK(model.to_string() == "MLP(\n  (fc): Linear(in_features=4, out_features=2, bias=True)\n)");

  Scaled s;
  const TD t = rand_input({2}, 2);
  CHECK(s(t).to_vector() == (t * 2.0).to_vector());
  CHECK(s(t, 3.0).to_vector() == (t * 3.0).to_vector());
  CHECK(s.calls == 2);
}

TEST_CASE("every nn module is callable and the call is its forward", "[nn][call]") {
  Generator gen(3);
  const TD x = rand_input({2, 3, 4}, 4);  // [L, B, E] for the unbatched-first layers
  check_call(Linear<double>(4, 5, gen), x);
  check_call(LayerNorm<double>(4), x);
  check_call(ReLU<double>(), x);
  check_call(GELU<double>(GeluApproximate::Tanh), x);
  check_call(Tanh<double>(), x);
  check_call(SiLU<double>(), x);
  check_call(LeakyReLU<double>(0.1), x);
  check_call(Sigmoid<double>(), x);
  check_call(Softmax<double>(-1), x);
  check_call(LogSoftmax<double>(0), x);
  check_call(Identity<double>(), x);
  check_call(MSELoss<double>(), x, rand_input({2, 3, 4}, 7));
  check_call(L1Loss<double>(), x, x * 0.5);
  check_call(SmoothL1Loss<double>(), x, x * 0.5);
  check_call(HuberLoss<double>(), x, x * 0.5);
  check_call(KLDivLoss<double>(), log_softmax(x, -1), softmax(x * 2.0, -1));
  check_call(Softplus<double>(), x);
  check_call(ELU<double>(), x);
  check_call(Flatten<double>(), x);
  check_call(CosineSimilarity<double>(), x, x * 0.5);
  check_call(CrossEntropyLoss<double>(), rand_input({3, 5}, 8), IndexArray{4, 0, 2});
  Dropout<double> dropout(0.5, std::make_shared<Generator>(5));
  dropout.eval();
  check_call(dropout, x);
  check_call(Embedding<double>(10, 4, gen), xt::xarray<std::int64_t>{{1, 2}, {3, 9}});
  check_call(EmbeddingBag<double>(10, 4, gen), xt::xarray<std::int64_t>{{1, 2}, {3, 9}});
  check_call(EmbeddingBag<double>(10, 4, gen, EmbeddingBagMode::Max), xt::xarray<std::int64_t>{1, 2, 3, 9},
             xt::xarray<std::int64_t>{0, 1});
  check_call(RMSNorm<double>(4), x);
  check_call(RotaryEmbedding<double>(4, 10000.0, 16), rand_input({2, 1, 3, 4}, 9), std::size_t{2});
  check_call(SinusoidalPositionalEncoding<double>(4, 16), x);
  check_call(LearnedPositionalEmbedding<double>(16, 4, gen), x);

  Sequential<double> seq(std::make_shared<Linear<double>>(4, 6, gen), std::make_shared<ReLU<double>>(),
                         std::make_shared<Linear<double>>(6, 2, gen));
  check_call(seq, x);
  CHECK(seq(x).shape() == Shape{2, 3, 2});

  TransformerLayerOptions o(4, 2);
  o.dim_feedforward = 8;
  o.dropout = 0.0;
  check_call(FeedForward<double>(4, 8, gen, 0.0), x);
  TransformerEncoderLayer<double> enc_layer(o, gen);
  check_call(enc_layer, x);
  const BoolArray padding = {{false, false}, {false, true}, {false, false}};  // [B, S]
  check_call(enc_layer, x, AttentionMask<double>(), AttentionMask<double>(padding));
  TransformerDecoderLayer<double> dec_layer(o, gen);
  const TD memory = rand_input({5, 3, 4}, 6);
  check_call(dec_layer, x, memory);
  check_call(TransformerEncoder<double>(o, 2, gen), x);
  check_call(TransformerDecoder<double>(o, 2, gen), x, memory);

  MultiheadAttention<double> mha(4, 2, gen);
  const auto [out, weights] = mha(x, memory, memory);
  const auto [out2, weights2] = mha.forward(x, memory, memory);
  CHECK(out.data() == out2.data());
  CHECK(weights.data() == weights2.data());
  CHECK(out.shape() == Shape{2, 3, 4});
}

TEST_CASE("calling through shared pointers and base references", "[nn][call]") {
  Generator gen(7);
  auto linear = std::make_shared<Linear<double>>(3, 2, gen);
  const TD x = rand_input({5, 3}, 8);
  CHECK((*linear)(x).data() == linear->forward(x).data());
  const Linear<double>& ref = *linear;
  CHECK(ref(x).data() == linear->forward(x).data());
  // The call records the same graph: gradcheck through it.
  CHECK_GRADCHECK([&](const std::vector<TD>& in) { return (*linear)(in[0]).tanh(); },
                  (std::vector<TD>{linear->weight, linear->bias, rand_input({4, 3}, 9)}));
}
