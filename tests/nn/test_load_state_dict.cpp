// Module::load_state_dict (torch's module.load_state_dict) from a state_dict in memory: float64 into
// float32 and back as torch's copy_, strict and non-strict names, and every refusal named at once with
// the module left unchanged.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <memory>

#include "tapegrad/nn/nn.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;

namespace {

template <typename T>
struct TwoLayers : nn::Module<T, TwoLayers<T>> {
  TwoLayers(std::size_t hidden, Generator& gen) {
    fc1 = this->register_module("fc1", std::make_shared<nn::Linear<T>>(3, hidden, gen));
    norm = this->register_module("norm", std::make_shared<nn::LayerNorm<T>>(Shape{hidden}));
    fc2 = this->register_module("fc2", std::make_shared<nn::Linear<T>>(hidden, 2, gen));
  }
  Tensor<T> forward(const Tensor<T>& x) const { return (*fc2)((*norm)((*fc1)(x)).relu()); }
  std::string name() const override { return "TwoLayers"; }
  std::shared_ptr<nn::Linear<T>> fc1, fc2;
  std::shared_ptr<nn::LayerNorm<T>> norm;
};

}  // namespace

TEST_CASE("Module::load_state_dict loads a float64 model's state_dict into a float32 model and back", "[nn][state]") {
  Generator gen64(1), gen32(2);
  TwoLayers<double> m64(5, gen64);
  TwoLayers<float> m32(5, gen32);
  const auto weight32 = m32.fc1->weight;  // the parameter itself, to see that it is written in place
  m32.load_state_dict(m64.state_dict());
  for (const auto& [name, t64] : m64.state_dict()) {
    const auto& v64 = t64.data();
    const auto& v32 = m32.state_dict().at(name).data();
    REQUIRE(v32.size() == v64.size());
    for (std::size_t i = 0; i < v64.size(); ++i) CHECK(v32.data()[i] == static_cast<float>(v64.data()[i]));
  }
  CHECK(weight32.same_as(m32.fc1->weight));
  CHECK(m32.fc1->weight.requires_grad());
  // Copied, not aliased: changing the source afterwards leaves the loaded model as it was.
  m64.fc1->bias.mutable_data()(0) += 1.0;
  CHECK(m32.fc1->bias.data()(0) != static_cast<float>(m64.fc1->bias.data()(0)));

  // And back: float values widen exactly into a double model, which then computes what the float one
  // does to float precision.
  Generator gen_back(3);
  TwoLayers<double> back(5, gen_back);
  back.load_state_dict(m32.state_dict());
  CHECK(back.fc2->weight.data()(1, 2) == static_cast<double>(m32.fc2->weight.data()(1, 2)));
  const auto x = Tensor<float>::from_vector({0.5f, -1.0f, 2.0f}, {1, 3});
  const auto y32 = m32(x);
  const auto y64 = back(Tensor<double>::from_vector({0.5, -1.0, 2.0}, {1, 3}));
  for (std::size_t j = 0; j < 2; ++j) CHECK(y64.data()(0, j) == Approx(y32.data()(0, j)).epsilon(1e-5));
}

TEST_CASE("Module::load_state_dict refuses wrong names, shapes and values, naming them all, and changes nothing",
          "[nn][state]") {
  Generator gen(4);
  TwoLayers<float> model(5, gen);
  TwoLayers<double> wider(6, gen);
  const xt::xarray<float> before = model.fc1->weight.data();
  auto state = wider.state_dict();
  state.erase("norm.bias");
  state.emplace("extra", Tensor<double>::zeros({1}));
  state.at("fc2.bias") = Tensor<double>::from_vector({std::numeric_limits<double>::quiet_NaN(), 0.0}, {2});
  const std::string m = testing::error_of<std::runtime_error>([&] { model.load_state_dict(state); });
  CHECK_THAT(m, Catch::StartsWith("load_state_dict: 7 problem(s):"));
  testing::check_names_each(
      m, {"\"fc1.weight\" has shape [6, 3] in the state_dict, [5, 3] in the model",
          "\"fc1.bias\" has shape [6] in the state_dict, [5] in the model",
          "\"fc2.weight\" has shape [2, 6] in the state_dict, [2, 5] in the model",
          "\"norm.weight\" has shape [6] in the state_dict, [5] in the model", "\"fc2.bias\" holds nan at flat index 0",
          "unexpected \"extra\"", "missing \"norm.bias\""});
  CHECK(model.fc1->weight.data() == before);

  // strict = false ignores the names but still refuses a wrong shape; with the names alone wrong it loads.
  CHECK_THROWS_WITH(model.load_state_dict(state, /*strict=*/false), Catch::Contains("has shape [6, 3]"));
  Generator other_gen(5);
  TwoLayers<float> same_shapes(5, other_gen);
  auto partial = same_shapes.state_dict();
  partial.erase("fc2.weight");
  partial.emplace("unused", Tensor<float>::zeros({3}));
  CHECK_THROWS_WITH(model.load_state_dict(partial),
                    Catch::Contains("missing \"fc2.weight\"") && Catch::Contains("unexpected \"unused\""));
  const xt::xarray<float> fc2_before = model.fc2->weight.data();
  model.load_state_dict(partial, /*strict=*/false);
  CHECK(model.fc1->weight.data() == same_shapes.fc1->weight.data());
  CHECK(model.fc2->weight.data() == fc2_before);
}
