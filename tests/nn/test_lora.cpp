// LoRA (nn/lora.hpp, nn/lora_adapter_file.hpp): injection by name with the base frozen, the adapter's
// gradients, exact merge and unmerge, PEFT's adapter folder both ways, and training steps against torch
// (tests/fixtures/make_lora_fixtures.py) on a small network, on models::Llama and on a GPT-2 whose
// attention in-projection (c_attn) is adapted.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/loss.hpp"
#include "tapegrad/autograd/shape_ops.hpp"
#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/models/gpt.hpp"
#include "tapegrad/models/hf_config.hpp"
#include "tapegrad/models/llama.hpp"
#include "tapegrad/models/pretrained.hpp"
#include "tapegrad/nn/nn.hpp"
#include "tapegrad/optim/adagrad.hpp"
#include "tapegrad/optim/adamw.hpp"
#include "tests/helpers.hpp"
#include "tests/parity.hpp"

using namespace tapegrad;
using Catch::Matchers::Contains;

namespace {

// make_lora_fixtures.py's Mlp: fc1 (6 -> 8, bias) -> GELU -> fc2 (8 -> 6, no bias) -> head (6 -> 5).
// fc1 runs through Linear's fused activation path, so the adapter's term must join before the GELU.
template <typename T>
struct Mlp : nn::Module<T, Mlp<T>> {
  explicit Mlp(Generator& gen) {
    fc1 = this->register_module("fc1", std::make_shared<nn::Linear<T>>(6, 8, gen));
    fc2 = this->register_module("fc2", std::make_shared<nn::Linear<T>>(8, 6, gen, false));
    head = this->register_module("head", std::make_shared<nn::Linear<T>>(6, 5, gen));
  }
  Tensor<T> forward(const Tensor<T>& x) const { return (*head)((*fc2)(fc1->forward(x, Activation::GELU))); }
  std::string name() const override { return "Mlp"; }
  std::shared_ptr<nn::Linear<T>> fc1, fc2, head;
};

nn::LoraConfig lora_config(std::size_t r, double lora_alpha, std::vector<std::string> target_modules) {
  nn::LoraConfig c;
  c.r = r;
  c.lora_alpha = lora_alpha;
  c.target_modules = std::move(target_modules);
  return c;
}

nn::LoraConfig mlp_config() { return lora_config(2, 4, {"fc1", "fc2"}); }

// A copy of a state_dict's values, which later changes to the model leave alone.
template <typename T>
StateDict<T> snapshot(const StateDict<T>& state) {
  StateDict<T> copy;
  for (const auto& [name, t] : state) copy.emplace(name, Tensor<T>(t.data()));
  return copy;
}

// make_lora_fixtures.py's LlamaReference(11, 8, 2, 12, 2, tie=True).
models::LlamaOptions small_llama() {
  models::LlamaOptions o;
  o.vocab_size = 11;
  o.max_len = 8;
  o.d_model = 8;
  o.nhead = 2;
  o.hidden = 12;
  o.num_layers = 2;
  return o;
}

nn::LoraConfig llama_config() { return lora_config(4, 8, {"q_proj", "v_proj"}); }

// B moved off zero, as after some training, so that forward, merge and A's gradient see the adapter.
template <typename T>
void perturb_adapters(nn::Module<T>& module, std::uint64_t seed) {
  Generator gen(seed);
  for (auto& [name, layer] : nn::lora_layers(module)) {
    auto& b = layer.lora->B->weight.mutable_data();
    for (auto& v : b) v = static_cast<T>(gen.uniform() - 0.5);
  }
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("LoraConfig: scaling and the fields it refuses", "[nn][lora]") {
  nn::LoraConfig c = mlp_config();
  CHECK(c.scaling() == 2.0);
  c.use_rslora = true;
  CHECK(c.scaling() == Approx(4.0 / std::sqrt(2.0)));
  c.r = 0;
  CHECK_THROWS_WITH(c.validate(), Contains("r must be positive"));
  c = mlp_config();
  c.lora_dropout = 1.0;
  CHECK_THROWS_WITH(c.validate(), Contains("lora_dropout must be in [0, 1), got 1"));
  c = mlp_config();
  c.bias = "some";
  CHECK_THROWS_WITH(c.validate(), Contains("\"some\""));
  c = mlp_config();
  c.target_modules.clear();
  CHECK_THROWS_WITH(c.validate(), Contains("target_modules is empty"));
}

TEST_CASE("inject_lora adds lora_A and lora_B under PEFT's names, initialized as PEFT does, and freezes the base",
          "[nn][lora]") {
  Generator gen(1);
  Mlp<float> m(gen);
  const auto x = Tensor<float>::uniform({3, 6}, -1, 1, gen);
  const auto before = m(x).data();
  Generator lora_gen(2);
  nn::inject_lora(m, mlp_config(), lora_gen);

  const auto state = m.state_dict();
  REQUIRE(state.count("fc1.lora_A.weight"));
  CHECK(state.at("fc1.lora_A.weight").shape() == Shape{2, 6});
  CHECK(state.at("fc1.lora_B.weight").shape() == Shape{8, 2});
  CHECK(state.at("fc2.lora_A.weight").shape() == Shape{2, 8});
  CHECK(state.at("fc2.lora_B.weight").shape() == Shape{6, 2});
  CHECK(state.count("head.lora_A.weight") == 0);
  // A: torch's Linear init, U(-1/sqrt(in), 1/sqrt(in)), and not all zero; B: zeros.
  const auto& a = m.fc1->lora->A->weight.data();
  CHECK(xt::amax(xt::abs(a))() <= 1 / std::sqrt(6.0f));
  CHECK(xt::amax(xt::abs(a))() > 0.1f);
  CHECK(xt::amax(xt::abs(m.fc1->lora->B->weight.data()))() == 0.0f);
  // With B zero the adapted model computes what the base does.
  CHECK(m(x).data() == before);

  std::vector<std::string> trained;
  for (const auto& [name, p] : m.named_parameters())
    if (p.requires_grad()) trained.push_back(name);
  CHECK(trained ==
        std::vector<std::string>{"fc1.lora_A.weight", "fc1.lora_B.weight", "fc2.lora_A.weight", "fc2.lora_B.weight"});
  CHECK(nn::trainable_parameters(m).size() == 4);
  CHECK(nn::lora_layers(m).size() == 2);
  CHECK(m.fc1->to_string() ==
        "Linear(\n  in_features=6, out_features=8, bias=True\n  (lora_A): Linear(in_features=6, out_features=2, "
        "bias=False)\n  (lora_B): Linear(in_features=2, out_features=8, bias=False)\n)");
}

TEST_CASE("inject_lora refuses a target that matches nothing or no Linear, and a second adapter", "[nn][lora]") {
  Generator gen(1);
  models::Llama<float> llama(small_llama(), gen);
  nn::LoraConfig c = llama_config();
  c.target_modules = {"q_proj", "c_attn"};
  CHECK_THROWS_WITH(nn::inject_lora(llama, c, gen), Contains("target module \"c_attn\" matches no module of Llama") &&
                                                        Contains("layers.0.self_attn.q_proj"));
  c.target_modules = {"self_attn"};
  CHECK_THROWS_WITH(nn::inject_lora(llama, c, gen),
                    Contains("\"layers.0.self_attn\" is a LlamaAttention, not a Linear"));
  // A suffix matches at a dot only: "proj" is no module's name.
  c.target_modules = {"proj"};
  CHECK_THROWS_WITH(nn::inject_lora(llama, c, gen), Contains("\"proj\" matches no module"));
  // Nothing changed by the refusals.
  CHECK(nn::lora_layers(llama).empty());
  CHECK(nn::trainable_parameters(llama).size() == llama.parameters().size());

  nn::inject_lora(llama, llama_config(), gen);
  CHECK(nn::lora_layers(llama).size() == 4);
  CHECK_THROWS_WITH(nn::inject_lora(llama, llama_config(), gen),
                    Contains("\"layers.0.self_attn.q_proj\" already has a LoRA adapter"));
  // A full dotted name selects one layer.
  models::Llama<float> other(small_llama(), gen);
  c.target_modules = {"layers.1.self_attn.v_proj"};
  nn::inject_lora(other, c, gen);
  REQUIRE(nn::lora_layers(other).size() == 1);
  CHECK(nn::lora_layers(other)[0].first == "layers.1.self_attn.v_proj");
}

TEST_CASE("A Linear registered in two places gets one adapter, merged once", "[nn][lora]") {
  struct Shared : nn::Module<double, Shared> {
    explicit Shared(Generator& gen) {
      fc = this->register_module("fc", std::make_shared<nn::Linear<double>>(3, 3, gen));
      this->register_module("again", fc);
    }
    Tensor<double> forward(const Tensor<double>& x) const { return (*fc)((*fc)(x)); }
    std::string name() const override { return "Shared"; }
    std::shared_ptr<nn::Linear<double>> fc;
  };
  Generator gen(30);
  Shared m(gen);
  nn::LoraConfig c = mlp_config();
  // As in torch's named_modules, the second name is not listed, so it selects nothing.
  c.target_modules = {"again"};
  CHECK_THROWS_WITH(nn::inject_lora(m, c, gen),
                    Contains("\"again\" matches no module of Shared (the layers LoRA can adapt there: fc)"));
  c.target_modules = {"fc"};
  nn::inject_lora(m, c, gen);
  REQUIRE(nn::lora_layers(m).size() == 1);
  CHECK(nn::lora_layers(m)[0].first == "fc");
  perturb_adapters(m, 31);
  const auto x = testing::rand_input({2, 3}, 32);
  const auto adapted = m(x).data();
  nn::merge_lora(m);
  CHECK(testing::allclose(m(x).data(), adapted, 1e-12, 1e-12));
}

TEST_CASE("gradcheck of a LoRA Linear in double: A, B, the input and a trained bias, and none for the frozen weight",
          "[nn][lora][gradcheck]") {
  Generator gen(3);
  Mlp<double> m(gen);
  nn::LoraConfig c = mlp_config();
  c.bias = "lora_only";
  nn::inject_lora(m, c, gen);
  perturb_adapters(m, 4);
  CHECK(m.fc1->bias.requires_grad());
  CHECK(!m.head->bias.requires_grad());
  CHECK(!m.fc1->weight.requires_grad());
  const auto x = testing::rand_input({2, 3, 6}, 5);
  auto& fc1 = *m.fc1;
  // The plain path and the fused activation path, each through the adapter.
  CHECK_GRADCHECK([&](const std::vector<Tensor<double>>& in) { return fc1(in[0]); },
                  (std::vector<Tensor<double>>{x, fc1.lora->A->weight, fc1.lora->B->weight, fc1.bias, fc1.weight}));
  CHECK_GRADCHECK([&](const std::vector<Tensor<double>>& in) { return fc1.forward(in[0], Activation::GELU); },
                  (std::vector<Tensor<double>>{x, fc1.lora->A->weight, fc1.lora->B->weight, fc1.weight}));
  CHECK_GRADCHECK([&](const std::vector<Tensor<double>>& in) { return m(in[0]); },
                  (std::vector<Tensor<double>>{x, m.fc2->lora->A->weight, m.fc2->lora->B->weight, m.head->weight}));

  m.zero_grad();
  m(x).sum().backward();
  for (const auto& [name, p] : m.named_parameters()) {
    INFO(name);
    CHECK(p.has_grad() == p.requires_grad());
  }
}

TEST_CASE("The adapter's dropout acts in training only, from one generator the model lists", "[nn][lora]") {
  Generator gen(6);
  Mlp<double> m(gen);
  nn::LoraConfig c = mlp_config();
  c.lora_dropout = 0.5;
  nn::inject_lora(m, c, gen);
  perturb_adapters(m, 7);
  const auto generators = m.named_generators();
  REQUIRE(generators.size() == 1);
  CHECK(generators[0].first == "fc1.lora_dropout.generator");
  CHECK(m.fc2->lora->dropout->generator() == generators[0].second);
  const auto x = testing::rand_input({4, 6}, 8);
  const auto trained = m(x).data();
  m.eval();
  const auto evaluated = m(x).data();
  CHECK(!testing::allclose(trained, evaluated, 1e-6, 1e-9));
  // In eval the adapter is the plain product: scaling * x A^T B^T added to the base.
  const auto& fc1 = *m.fc1;
  const auto base = linear(x, fc1.weight, fc1.bias).data();
  const auto added = (linear(linear(x, fc1.lora->A->weight), fc1.lora->B->weight) * 2.0).data();
  CHECK(testing::allclose(fc1(x).data(), xt::xarray<double>(base + added), 1e-12, 1e-12));
}

TEST_CASE("merge_lora folds the adapters into the weights and unmerge_lora restores them bit for bit", "[nn][lora]") {
  Generator gen(9);
  models::Llama<float> llama(small_llama(), gen);
  nn::inject_lora(llama, llama_config(), gen);
  perturb_adapters(llama, 10);
  llama.eval();
  const xt::xarray<std::int64_t> ids = testing::random_ids(2, 6, 11, 11);
  const auto adapted = llama.forward(ids).data();
  const StateDict<float> before = snapshot(llama.state_dict());
  CHECK(!nn::lora_merged(llama));

  nn::merge_lora(llama);
  CHECK(nn::lora_merged(llama));
  const auto q = nn::lora_layers(llama)[0].second;  // layers.0.self_attn.q_proj
  CHECK(q.weight.data() != before.at("layers.0.self_attn.q_proj.weight").data());
  // The merged model computes what the adapted one did (to float rounding), through the base alone.
  const auto merged = llama.forward(ids).data();
  CHECK(testing::allclose(merged, adapted, 1e-5, 1e-5));
  CHECK_THROWS_WITH(nn::merge_lora(llama), Contains("\"layers.0.self_attn.q_proj\" is already merged"));

  nn::unmerge_lora(llama);
  CHECK(!nn::lora_merged(llama));
  for (const auto& [name, t] : llama.state_dict()) {
    INFO(name);
    CHECK(t.data() == before.at(name).data());  // exact, not to rounding
  }
  CHECK(llama.forward(ids).data() == adapted);
  CHECK_THROWS_WITH(nn::unmerge_lora(llama), Contains("\"layers.0.self_attn.q_proj\" is not merged"));

  // A weight changed while merged is not silently overwritten, nor one whose adapter changed.
  nn::merge_lora(llama);
  auto v_proj = nn::lora_layers(llama)[1].second;  // layers.0.self_attn.v_proj
  const xt::xarray<float> merged_v = v_proj.weight.data();
  {
    NoGradGuard no_grad;
    v_proj.weight.index_put_({0, 0}, merged_v(0, 0) + 1.0f);
  }
  CHECK_THROWS_WITH(nn::unmerge_lora(llama),
                    Contains("\"layers.0.self_attn.v_proj\": its weight or its adapter changed since merge_lora") &&
                        Contains("flat element 0"));
  CHECK(nn::lora_merged(llama));  // nothing unmerged
  {
    NoGradGuard no_grad;
    v_proj.weight.copy_(Tensor<float>(merged_v));
    v_proj.lora->B->weight.index_put_({1, 1}, 0.25f);
  }
  CHECK_THROWS_WITH(nn::unmerge_lora(llama), Contains("\"layers.0.self_attn.v_proj\""));

  Generator plain_gen(1);
  Mlp<float> plain(plain_gen);
  CHECK_THROWS_WITH(nn::merge_lora(plain), Contains("Mlp has no LoRA adapter"));
}

TEST_CASE("merge_and_unload_lora leaves the base model with the adapters folded in, and unload_lora the base as it was",
          "[nn][lora]") {
  Generator gen(23);
  models::Llama<double> llama(small_llama(), gen);
  const StateDict<double> base = snapshot(llama.state_dict());
  nn::LoraConfig c = llama_config();
  c.lora_dropout = 0.1;
  nn::inject_lora(llama, c, gen);
  perturb_adapters(llama, 24);
  REQUIRE(llama.named_generators().size() == 2);
  llama.eval();
  const xt::xarray<std::int64_t> ids = testing::random_ids(2, 5, 11, 25);
  const auto adapted = llama.forward(ids).data();

  SECTION("merge and unload") {
    nn::merge_and_unload_lora(llama);
    CHECK(nn::lora_layers(llama).empty());
    for (const auto& entry : llama.named_generators())  // the adapters' dropout went with them
      CHECK(entry.first.find("lora") == std::string::npos);
    const auto state = llama.state_dict();
    CHECK(state.size() == base.size());
    for (const auto& [name, t] : base) REQUIRE(state.count(name));
    CHECK(state.at("layers.0.self_attn.q_proj.weight").data() != base.at("layers.0.self_attn.q_proj.weight").data());
    CHECK(state.at("layers.0.self_attn.k_proj.weight").data() == base.at("layers.0.self_attn.k_proj.weight").data());
    CHECK(testing::allclose(llama.forward(ids).data(), adapted, 1e-12, 1e-12));
    CHECK_THROWS_WITH(nn::merge_and_unload_lora(llama), Contains("Llama has no LoRA adapter"));
    // Plain Linears again: adapters can be injected anew.
    nn::inject_lora(llama, llama_config(), gen);
    CHECK(nn::lora_layers(llama).size() == 4);
  }
  SECTION("merged first, then merged and unloaded: folded in once") {
    nn::merge_lora(llama);
    nn::merge_and_unload_lora(llama);
    CHECK(testing::allclose(llama.forward(ids).data(), adapted, 1e-12, 1e-12));
  }
  SECTION("unload, from merged or not") {
    const bool merge_first = GENERATE(false, true);
    if (merge_first) nn::merge_lora(llama);
    nn::unload_lora(llama);
    CHECK(nn::lora_layers(llama).empty());
    const auto state = llama.state_dict();
    CHECK(state.size() == base.size());
    for (const auto& [name, t] : base) {
      INFO(name);
      CHECK(state.at(name).data() == t.data());
    }
    CHECK_THROWS_WITH(nn::unload_lora(llama), Contains("Llama has no LoRA adapter"));
  }
}

TEST_CASE("Adapters saved in PEFT's layout load back, into a fresh model or onto its adapters", "[nn][lora][io]") {
  testing::TempDir dir;
  Generator gen(12);
  models::Llama<float> llama(small_llama(), gen);
  nn::inject_lora(llama, llama_config(), gen);
  perturb_adapters(llama, 13);
  nn::LoraFileOptions options;
  options.base_model_name_or_path = "runs/llama";
  options.module_name = [](const std::string& name) { return "model." + name; };
  const std::string folder = dir.file("adapter");
  nn::save_lora_adapter(llama, llama_config(), folder, options);

  // adapter_model.safetensors: A and B only, under LlamaForCausalLM's names with PeftModel's prefix.
  const io::safetensors::File file(folder + "/adapter_model.safetensors");
  CHECK(file.names().size() == 8);
  CHECK(file.contains("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"));
  CHECK(file.shape("base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight") == Shape{8, 4});
  CHECK(file.dtype("base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight") == io::safetensors::Dtype::F32);
  CHECK(file.metadata().at("format") == "pt");
  const auto config = nlohmann::json::parse(read(folder + "/adapter_config.json"));
  CHECK(config["peft_type"] == "LORA");
  CHECK(config["task_type"] == "CAUSAL_LM");
  CHECK(config["r"] == 4);
  CHECK(config["lora_alpha"] == 8);
  CHECK(config["lora_alpha"].is_number_integer());
  CHECK(config["lora_dropout"] == 0.0);
  CHECK(config["target_modules"] == nlohmann::json::array({"q_proj", "v_proj"}));
  CHECK(config["bias"] == "none");
  CHECK(config["fan_in_fan_out"] == false);
  CHECK(config["base_model_name_or_path"] == "runs/llama");

  // Into a model without adapters: injected from the file's config, then loaded.
  Generator gen2(14);
  models::Llama<float> fresh(small_llama(), gen2);
  fresh.load_state_dict(llama.state_dict(), /*strict=*/false);  // the same base
  const nn::LoraConfig loaded = nn::load_lora_adapter(fresh, folder, options);
  CHECK(loaded.r == 4);
  CHECK(loaded.target_modules == std::vector<std::string>{"q_proj", "v_proj"});
  const auto fresh_state = fresh.state_dict();
  for (const auto& [name, t] : llama.state_dict()) {
    INFO(name);
    REQUIRE(fresh_state.count(name));
    CHECK(fresh_state.at(name).data() == t.data());
    CHECK(fresh_state.at(name).requires_grad() == t.requires_grad());
  }
  // Onto existing adapters of the same config.
  perturb_adapters(fresh, 15);
  nn::load_lora_adapter(fresh, folder, options);
  CHECK(fresh.state_dict().at("layers.1.self_attn.v_proj.lora_B.weight").data() ==
        llama.state_dict().at("layers.1.self_attn.v_proj.lora_B.weight").data());
  const xt::xarray<std::int64_t> ids = testing::random_ids(1, 5, 11, 16);
  CHECK(fresh.forward(ids).data() == llama.forward(ids).data());
}

TEST_CASE("Loading adapters refuses a config or shapes that do not fit, naming them, and changes nothing",
          "[nn][lora][io]") {
  testing::TempDir dir;
  Generator gen(17);
  models::Llama<double> llama(small_llama(), gen);
  nn::inject_lora(llama, llama_config(), gen);
  const std::string folder = dir.file("adapter");
  nn::save_lora_adapter(llama, llama_config(), folder);
  const std::string config_path = folder + "/adapter_config.json";
  const std::string original = read(config_path);

  SECTION("another rank than the model's adapters") {
    models::Llama<double> other(small_llama(), gen);
    nn::LoraConfig c = llama_config();
    c.r = 2;
    nn::inject_lora(other, c, gen);
    const xt::xarray<double> before = other.state_dict().at("layers.0.self_attn.q_proj.lora_A.weight").data();
    CHECK_THROWS_WITH(nn::load_lora_adapter(other, folder),
                      Contains("the config differs from Llama's adapters") &&
                          Contains("\"layers.0.self_attn.q_proj\" has r 2, the config 4"));
    CHECK(other.state_dict().at("layers.0.self_attn.q_proj.lora_A.weight").data() == before);
  }
  SECTION("other layers than the model's adapters") {
    models::Llama<double> other(small_llama(), gen);
    nn::LoraConfig c = llama_config();
    c.target_modules = {"q_proj"};
    nn::inject_lora(other, c, gen);
    CHECK_THROWS_WITH(nn::load_lora_adapter(other, folder),
                      Contains("\"layers.0.self_attn.v_proj\" is selected by target_modules but has no adapter"));
  }
  SECTION("shapes of another model, into a model without adapters") {
    models::LlamaOptions wide = small_llama();
    wide.d_model = 12;
    wide.nhead = 3;
    models::Llama<double> other(wide, gen);
    CHECK_THROWS_WITH(nn::load_lora_adapter(other, folder),
                      Contains("adapter_model.safetensors") &&
                          Contains("base_model.model.layers.0.self_attn.q_proj.lora_A.weight") && Contains("[4, 12]"));
    CHECK(nn::lora_layers(other).empty());  // not injected
    CHECK(nn::trainable_parameters(other).size() == other.parameters().size());
  }
  SECTION("names of another model") {
    models::Llama<double> other(small_llama(), gen);
    nn::LoraFileOptions options;
    options.module_name = [](const std::string& name) { return "model." + name; };
    CHECK_THROWS_WITH(nn::load_lora_adapter(other, folder, options),
                      Contains("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"));
    CHECK(nn::lora_layers(other).empty());
  }
  SECTION("settings tapegrad does not implement, or a broken config") {
    auto j = nlohmann::json::parse(original);
    j["use_dora"] = true;
    j["target_modules"] = ".*proj";
    j["rank_pattern"] = {{"q_proj", 8}};
    j["r"] = -1;
    std::ofstream(config_path) << j.dump();
    models::Llama<double> other(small_llama(), gen);
    CHECK_THROWS_WITH(nn::load_lora_adapter(other, folder), Contains("adapter_config.json: 4 problem(s)") &&
                                                                Contains("r is -1") && Contains("use_dora is true") &&
                                                                Contains("regular expression \".*proj\"") &&
                                                                Contains("rank_pattern"));
    std::ofstream(config_path) << "{\"peft_type\": \"PREFIX_TUNING\"";
    CHECK_THROWS_WITH(nn::load_lora_adapter(other, folder), Contains("adapter_config.json") && Contains("JSON"));
    std::filesystem::remove(config_path);
    CHECK_THROWS_WITH(nn::load_lora_adapter(other, folder), Contains("adapter_config.json: cannot be read"));
    CHECK(nn::lora_layers(other).empty());
  }
  SECTION("merged adapters") {
    nn::merge_lora(llama);
    CHECK_THROWS_WITH(nn::load_lora_adapter(llama, folder), Contains("adapters are merged"));
  }
  SECTION("saving with a config that does not describe the adapters") {
    nn::LoraConfig c = llama_config();
    c.lora_alpha = 16;
    CHECK_THROWS_WITH(nn::save_lora_adapter(llama, c, dir.file("other")),
                      Contains("\"layers.0.self_attn.q_proj\" has lora_alpha 8, the config 16"));
  }
}

TEST_CASE("A trained bias (bias \"lora_only\") is saved and loaded with the adapters", "[nn][lora][io]") {
  testing::TempDir dir;
  Generator gen(18);
  Mlp<double> m(gen);
  nn::LoraConfig c = mlp_config();
  c.bias = "lora_only";
  nn::inject_lora(m, c, gen);
  nn::save_lora_adapter(m, c, dir.file("a"));
  const io::safetensors::File file(dir.file("a") + "/adapter_model.safetensors");
  CHECK(file.names() == std::vector<std::string>{"base_model.model.fc1.bias", "base_model.model.fc1.lora_A.weight",
                                                 "base_model.model.fc1.lora_B.weight",
                                                 "base_model.model.fc2.lora_A.weight",
                                                 "base_model.model.fc2.lora_B.weight"});
  Generator gen2(19);
  Mlp<double> other(gen2);
  nn::load_lora_adapter(other, dir.file("a"));
  CHECK(other.fc1->bias.data() == m.fc1->bias.data());
  CHECK(other.fc1->bias.requires_grad());
  CHECK(other.head->bias.data() != m.head->bias.data());  // not part of the adapter
}

TEST_CASE("Only the adapters of a LoRA Llama train: the base gets no gradient, no optimizer state, no change",
          "[nn][lora][models]") {
  Generator gen(20);
  models::Llama<float> llama(small_llama(), gen);
  nn::inject_lora(llama, llama_config(), gen);
  const StateDict<float> before = snapshot(llama.state_dict());
  // Every parameter handed to the optimizers, as a program that does not filter would.
  optim::AdamWOptions adamw_options;
  adamw_options.lr = 0.01;
  optim::AdamW<float> adamw(llama.parameters(), adamw_options);
  optim::Adagrad<float> adagrad(llama.parameters());
  const xt::xarray<std::int64_t> ids = testing::random_ids(2, 6, 11, 21);
  xt::xarray<std::int64_t> flat_targets = testing::random_ids(1, 12, 11, 22);
  flat_targets.reshape({12});
  float first = 0, last = 0;
  for (int step = 0; step < 20; ++step) {
    adamw.zero_grad();
    const auto logits = llama.forward(ids);
    const auto loss = cross_entropy(reshape(logits, {-1, 11}), flat_targets);
    loss.backward();
    if (step % 2)
      adagrad.step();
    else
      adamw.step();
    (step == 0 ? first : last) = loss.item();
  }
  CHECK(last < first);
  std::size_t changed = 0;
  for (const auto& [name, t] : llama.state_dict()) {
    INFO(name);
    const bool adapter = name.find(".lora_") != std::string::npos;
    CHECK(t.requires_grad() == adapter);
    CHECK(t.has_grad() == adapter);
    if (!adapter) CHECK(t.data() == before.at(name).data());
    changed += adapter && t.data() != before.at(name).data();
  }
  CHECK(changed == 8);
  // Optimizer state only for the 8 adapter tensors, under their indices in llama.parameters().
  const auto params = llama.parameters();
  for (const optim::Optimizer<float>* opt :
       {static_cast<const optim::Optimizer<float>*>(&adamw), static_cast<const optim::Optimizer<float>*>(&adagrad)}) {
    std::set<std::size_t> with_state;
    for (const auto& entry : opt->state_dict()) {
      const std::string& key = entry.first;
      if (key.rfind("state.", 0) != 0) continue;
      with_state.insert(std::stoul(key.substr(6, key.find('.', 6) - 6)));
    }
    CHECK(with_state.size() == 8);
    for (std::size_t i : with_state) CHECK(params[i].requires_grad());
  }
  // Adagrad's state loads back without entries for the frozen parameters.
  optim::Adagrad<float> restored(llama.parameters());
  CHECK_NOTHROW(restored.load_state_dict(adagrad.state_dict()));
}

namespace {

const io::safetensors::File& lora_fixture() {
  static const io::safetensors::File file(std::string(TAPEGRAD_TEST_FIXTURES_DIR) + "/lora.safetensors");
  return file;
}

// "<name>.<dtype>.": the prefix of a case of make_lora_fixtures.py in T.
template <typename T>
std::string case_prefix(const std::string& name) {
  return name + "." + testing::dtype_tag<T>() + ".";
}

// Loads the parameters of the case `name` of make_lora_fixtures.py into module, then takes its two AdamW
// steps on its targets, compared with torch's losses, gradients and parameters at scale times the parity
// tolerance.
template <typename T>
void check_steps(nn::Module<T>& module, const std::string& name, const std::function<Tensor<T>()>& logits_of,
                 double scale) {
  const auto& file = lora_fixture();
  const std::string prefix = case_prefix<T>(name);
  StateDict<T> state = module.state_dict();
  io::safetensors::load_state_dict(file, state, true, prefix + "model.");
  optim::AdamWOptions options;
  options.lr = 0.01;
  options.weight_decay = 0.01;
  optim::AdamW<T> opt(nn::trainable_parameters(module), options);
  const double rtol = testing::Tolerance<T>::rtol * scale, atol = testing::Tolerance<T>::atol * scale;
  xt::xarray<std::int64_t> flat_targets = file.get<std::int64_t>(name + ".targets");
  flat_targets.reshape({flat_targets.size()});
  for (int k = 0; k < 2; ++k) {
    const std::string step = prefix + "step" + std::to_string(k) + ".";
    opt.zero_grad();
    const Tensor<T> logits = logits_of();
    const Tensor<T> loss =
        cross_entropy(reshape(logits, {-1, static_cast<std::int64_t>(logits.shape().back())}), flat_targets);
    loss.backward();
    {
      INFO(step << "loss");
      CHECK(testing::mismatch(xt::xarray<T>(loss.data()), file.get<T>(step + "loss"), rtol, atol) == "");
    }
    std::size_t trained = 0;
    for (const auto& [param, p] : module.named_parameters()) {
      INFO(step << param);
      if (!p.requires_grad()) {
        CHECK(!p.has_grad());
        CHECK(!file.contains(step + "grad." + param));
        continue;
      }
      ++trained;
      REQUIRE(p.has_grad());
      CHECK(testing::mismatch(p.grad(), file.get<T>(step + "grad." + param), rtol, atol) == "");
    }
    opt.step();
    for (const auto& [param, p] : module.named_parameters()) {
      if (!p.requires_grad()) continue;
      INFO(step << param);
      CHECK(testing::mismatch(p.data(), file.get<T>(step + "param." + param), rtol, atol) == "");
    }
    std::size_t stored = 0;
    for (const auto& key : file.names()) stored += key.rfind(step + "param.", 0) == 0;
    CHECK(trained == stored);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("LoRA training steps match torch: forward, loss, backward, AdamW (a network with a trained bias)",
                   "[nn][lora][parity]", float, double) {
  using T = TestType;
  Generator gen(0);
  Mlp<T> m(gen);
  nn::LoraConfig c = mlp_config();
  c.bias = "lora_only";
  nn::inject_lora(m, c, gen);
  const Tensor<T> x(lora_fixture().get<T>(case_prefix<T>("mlp") + "in.x"));
  check_steps<T>(
      m, "mlp", [&] { return m(x); }, 1.0);
}

TEMPLATE_TEST_CASE("LoRA training steps match torch on models::Llama with adapters on q_proj and v_proj",
                   "[nn][lora][parity][models]", float, double) {
  using T = TestType;
  Generator gen(0);
  models::Llama<T> llama(small_llama(), gen);
  nn::inject_lora(llama, llama_config(), gen);
  const xt::xarray<std::int64_t> ids = lora_fixture().get<std::int64_t>("llama.ids");
  // A whole model, as in tests/nn/test_parity_nn.cpp: 4 times the module tolerance.
  check_steps<T>(
      llama, "llama", [&] { return llama.forward(ids); }, 4.0);
}

namespace {

// Where an export test writes its folders: the environment variable's value when set, else a folder
// in tmp.
std::string export_folder(const char* variable, const testing::TempDir& tmp) {
  const char* env = std::getenv(variable);
  return env && *env ? std::string(env) : tmp.file("export");
}

// expected.safetensors of an export folder: the ids and the logits torch must reproduce from them.
void save_expected(const std::string& folder, const xt::xarray<std::int64_t>& ids, const xt::xarray<float>& logits) {
  io::safetensors::save_file(folder + "/expected.safetensors", {{"ids", ids}, {"logits", logits}},
                             {{"source", "tests/nn/test_lora.cpp"}});
}

}  // namespace

// The folder tests/fixtures/make_lora_fixtures.py --check-adapter loads into torch the way PEFT's
// PeftModel.from_pretrained does (by the file's names and adapter_config.json alone): write it with
//   TAPEGRAD_EXPORT_LORA_FOR_TORCH=/tmp/lora build/tests/tapegrad_tests "<this test's name>"
// (see tests/fixtures/README.md). It holds adapter/ (save_lora_adapter with LlamaForCausalLM's names),
// base.safetensors (the base Llama's state_dict) and expected.safetensors (ids and the adapted model's
// logits). Without the variable it goes to a temporary folder; either way the test checks that base
// and adapter load into a fresh model that reproduces the logits.
TEST_CASE("a tapegrad LoRA adapter folder loads into torch", "[nn][lora][io]") {
  testing::TempDir tmp;
  const std::string folder = export_folder("TAPEGRAD_EXPORT_LORA_FOR_TORCH", tmp);
  Generator gen(26);
  models::Llama<float> llama(small_llama(), gen);
  std::filesystem::create_directories(folder);
  io::safetensors::save_state_dict(folder + "/base.safetensors", llama.state_dict());
  nn::inject_lora(llama, llama_config(), gen);
  perturb_adapters(llama, 27);
  nn::LoraFileOptions options;
  options.base_model_name_or_path = "base.safetensors";
  options.module_name = [](const std::string& name) { return "model." + name; };
  nn::save_lora_adapter(llama, llama_config(), folder + "/adapter", options);
  llama.eval();
  const xt::xarray<std::int64_t> ids = testing::random_ids(2, 7, 11, 28);
  const xt::xarray<float> logits = llama.forward(ids).data();
  save_expected(folder, ids, logits);

  Generator other_gen(29);
  models::Llama<float> fresh(small_llama(), other_gen);
  StateDict<float> fresh_state = fresh.state_dict();
  io::safetensors::load_state_dict(folder + "/base.safetensors", fresh_state);
  nn::load_lora_adapter(fresh, folder + "/adapter", options);
  fresh.eval();
  CHECK(fresh.forward(ids).data() == logits);
}

// ---------------------------------------------------------------------------------------------------
// LoRA on an nn::MultiheadAttention's packed in-projection: GPT-2's c_attn.
namespace {

// make_lora_fixtures.py's GPT2Reference(13, 8, 8, 2, 2): GPT-2's computation without dropout.
models::GPTOptions small_gpt2() {
  return models::gpt2_options({{"model_type", "gpt2"},
                               {"vocab_size", 13},
                               {"n_positions", 8},
                               {"n_embd", 8},
                               {"n_head", 2},
                               {"n_layer", 2},
                               {"resid_pdrop", 0.0},
                               {"embd_pdrop", 0.0},
                               {"attn_pdrop", 0.0}},
                              "small_gpt2");
}

// PEFT's config for GPT2LMHeadModel, matched under Hugging Face's names.
nn::LoraConfig gpt2_config() {
  nn::LoraConfig c = lora_config(2, 4, {"c_attn", "c_proj"});
  c.fan_in_fan_out = true;
  return c;
}

template <typename T>
nn::LoraModuleName hf_names(const models::GPT<T>& gpt) {
  return [&gpt](const std::string& name) { return models::hugging_face_module_name<T>(gpt, name); };
}

// One self-attention layer as a named child, so that a target selects it.
template <typename T>
struct Attention : nn::Module<T, Attention<T>> {
  Attention(const nn::MultiheadAttentionOptions& o, Generator& gen) {
    attn = this->register_module("attn", std::make_shared<nn::MultiheadAttention<T>>(o, gen));
  }
  std::string name() const override { return "Attention"; }
  std::shared_ptr<nn::MultiheadAttention<T>> attn;
};

nn::MultiheadAttentionOptions attention_options() {
  nn::MultiheadAttentionOptions o(6, 2);
  o.batch_first = true;
  return o;
}

nn::LoraConfig attention_config() { return lora_config(3, 6, {"attn"}); }

}  // namespace

TEST_CASE("inject_lora adapts a MultiheadAttention's packed in-projection: A [r, E], B [3E, r], under PEFT's names",
          "[nn][lora]") {
  Generator gen(40);
  models::GPT<float> gpt(small_gpt2(), gen);
  const xt::xarray<std::int64_t> ids = testing::random_ids(2, 6, 13, 41);
  const auto before = gpt.forward(ids).data();
  nn::inject_lora(gpt, gpt2_config(), gen, hf_names(gpt));

  std::vector<std::string> adapted;
  for (const auto& [name, layer] : nn::lora_layers(gpt)) adapted.push_back(name);
  CHECK(adapted == std::vector<std::string>{"encoder.layers.0.self_attn", "encoder.layers.0.self_attn.out_proj",
                                            "encoder.layers.0.linear2", "encoder.layers.1.self_attn",
                                            "encoder.layers.1.self_attn.out_proj", "encoder.layers.1.linear2"});
  const auto layer = nn::lora_layers(gpt)[0].second;
  CHECK(layer.in_features == 8);
  CHECK(layer.out_features == 24);
  CHECK(layer.weight.same_as(gpt.state_dict().at("encoder.layers.0.self_attn.in_proj_weight")));
  const auto state = gpt.state_dict();
  CHECK(state.at("encoder.layers.0.self_attn.lora_A.weight").shape() == Shape{2, 8});
  CHECK(state.at("encoder.layers.0.self_attn.lora_B.weight").shape() == Shape{24, 2});
  CHECK(state.at("encoder.layers.0.self_attn.out_proj.lora_A.weight").shape() == Shape{2, 8});
  CHECK(state.count("encoder.layers.0.linear1.lora_A.weight") == 0);
  CHECK(!state.at("encoder.layers.0.self_attn.in_proj_weight").requires_grad());
  CHECK(!state.at("encoder.layers.0.self_attn.in_proj_bias").requires_grad());
  CHECK(nn::trainable_parameters(gpt).size() == 12);
  CHECK(gpt.forward(ids).data() == before);  // B is zero

  // Under tapegrad's own names the attention is "self_attn"; a target selects it whole or by suffix.
  models::GPT<float> plain(small_gpt2(), gen);
  nn::LoraConfig c = gpt2_config();
  c.target_modules = {"layers.1.self_attn"};
  nn::inject_lora(plain, c, gen);
  REQUIRE(nn::lora_layers(plain).size() == 1);
  CHECK(nn::lora_layers(plain)[0].first == "encoder.layers.1.self_attn");
  // A target matching nothing lists what LoRA can adapt, under the names targets see.
  c.target_modules = {"q_attn"};
  models::GPT<float> other(small_gpt2(), gen);
  CHECK_THROWS_WITH(nn::inject_lora(other, c, gen, hf_names(other)), Contains("\"q_attn\" matches no module of GPT") &&
                                                                         Contains("transformer.h.0.attn.c_attn") &&
                                                                         Contains("transformer.h.0.mlp.c_fc"));
  // An attention with separate q/k/v_proj_weight has no packed projection to adapt.
  nn::MultiheadAttentionOptions cross = attention_options();
  cross.kdim = 4;
  Attention<float> unpacked(cross, gen);
  CHECK_THROWS_WITH(nn::inject_lora(unpacked, attention_config(), gen),
                    Contains("\"attn\" is a MultiheadAttention with separate q/k/v_proj_weight"));
  CHECK(nn::trainable_parameters(unpacked).size() == unpacked.parameters().size());
}

TEST_CASE("gradcheck of a LoRA in-projection in double: self-attention, attention over another sequence, dropout off",
          "[nn][lora][gradcheck]") {
  Generator gen(42);
  Attention<double> m(attention_options(), gen);
  nn::LoraConfig c = attention_config();
  c.bias = "lora_only";
  nn::inject_lora(m, c, gen);
  perturb_adapters(m, 43);
  auto& attn = *m.attn;
  CHECK(attn.in_proj_bias.requires_grad());
  CHECK(!attn.in_proj_weight.requires_grad());
  const auto x = testing::rand_input({2, 4, 6}, 44);
  const auto memory = testing::rand_input({2, 5, 6}, 45);
  const auto& A = attn.lora->A->weight;
  const auto& B = attn.lora->B->weight;
  // One packed projection of x (query = key = value), with the causal path as GPT runs it.
  CHECK_GRADCHECK(
      [&](const std::vector<Tensor<double>>& in) {
        return attn.forward(in[0], in[0], in[0], {}, false, {}, true, /*is_causal=*/true).first;
      },
      (std::vector<Tensor<double>>{x, A, B, attn.in_proj_bias, attn.in_proj_weight}));
  // Query apart from key = value, and all three apart: the adapter's rows of each.
  CHECK_GRADCHECK([&](const std::vector<Tensor<double>>& in) { return attn.forward(in[0], in[1], in[1]).first; },
                  (std::vector<Tensor<double>>{x, memory, A, B}));
  CHECK_GRADCHECK([&](const std::vector<Tensor<double>>& in) { return attn.forward(in[0], in[1], in[2]).first; },
                  (std::vector<Tensor<double>>{x, memory, testing::rand_input({2, 5, 6}, 46), A, B}));
  // Each path adds the adapter's rows of its own projections: the merged weight, split as the path
  // splits it, computes the same.
  m.eval();
  const auto value = testing::rand_input({2, 5, 6}, 47);
  const xt::xarray<double> self = attn.forward(x, x, x, {}, false).first.data();
  const xt::xarray<double> cross = attn.forward(x, memory, memory, {}, false).first.data();
  const xt::xarray<double> apart = attn.forward(x, memory, value, {}, false).first.data();
  nn::merge_lora(m);
  CHECK(testing::allclose(xt::xarray<double>(attn.forward(x, x, x, {}, false).first.data()), self, 1e-12, 1e-12));
  CHECK(testing::allclose(xt::xarray<double>(attn.forward(x, memory, memory, {}, false).first.data()), cross, 1e-12,
                          1e-12));
  CHECK(testing::allclose(xt::xarray<double>(attn.forward(x, memory, value, {}, false).first.data()), apart, 1e-12,
                          1e-12));
  nn::unload_lora(m);
  CHECK(!testing::allclose(xt::xarray<double>(attn.forward(x, memory, value, {}, false).first.data()), apart, 1e-6,
                           1e-6));
}

TEST_CASE("A LoRA c_attn merges exactly, unmerges bit for bit, unloads, and incremental decoding sees it",
          "[nn][lora][models]") {
  Generator gen(46);
  models::GPT<float> gpt(small_gpt2(), gen);
  const StateDict<float> base = snapshot(gpt.state_dict());
  nn::LoraConfig c = gpt2_config();
  c.target_modules = {"c_attn"};
  nn::inject_lora(gpt, c, gen, hf_names(gpt));
  perturb_adapters(gpt, 47);
  gpt.eval();
  const xt::xarray<std::int64_t> ids = testing::random_ids(2, 7, 13, 48);
  const xt::xarray<float> adapted = gpt.forward(ids).data();
  {
    models::GPT<float> reference(small_gpt2(), gen);
    reference.load_state_dict(base);
    reference.eval();
    CHECK(!testing::allclose(adapted, xt::xarray<float>(reference.forward(ids).data()), 1e-3, 1e-3));
  }
  // Incremental decoding: a prompt, then one token at a time, each the logits forward gives.
  {
    models::GPT<float>::Cache cache;
    const xt::xarray<std::int64_t> prompt = xt::view(ids, xt::all(), xt::range(0, 4));
    const xt::xarray<float> first = gpt.forward_incremental(prompt, cache).data();
    CHECK(testing::allclose(first, xt::xarray<float>(xt::view(adapted, xt::all(), xt::range(0, 4))), 1e-5, 1e-5));
    for (std::size_t t = 4; t < 7; ++t) {
      const xt::xarray<std::int64_t> next = xt::view(ids, xt::all(), xt::range(t, t + 1));
      const xt::xarray<float> step = gpt.forward_incremental(next, cache).data();
      CHECK(testing::allclose(step, xt::xarray<float>(xt::view(adapted, xt::all(), xt::range(t, t + 1))), 1e-5, 1e-5));
    }
  }

  const StateDict<float> adapted_state = snapshot(gpt.state_dict());
  nn::merge_lora(gpt);
  CHECK(nn::lora_merged(gpt));
  const auto w = gpt.state_dict().at("encoder.layers.1.self_attn.in_proj_weight");
  CHECK(w.data() != base.at("encoder.layers.1.self_attn.in_proj_weight").data());
  CHECK(testing::allclose(xt::xarray<float>(gpt.forward(ids).data()), adapted, 1e-5, 1e-5));
  nn::unmerge_lora(gpt);
  for (const auto& [name, t] : gpt.state_dict()) {
    INFO(name);
    CHECK(t.data() == adapted_state.at(name).data());  // exact, not to rounding
  }
  CHECK(gpt.forward(ids).data() == adapted);
  // A merged in_proj_weight changed since is not silently overwritten.
  nn::merge_lora(gpt);
  const xt::xarray<float> merged = gpt.state_dict().at("encoder.layers.0.self_attn.in_proj_weight").data();
  {
    NoGradGuard no_grad;
    gpt.state_dict().at("encoder.layers.0.self_attn.in_proj_weight").index_put_({5, 1}, 3.0f);
  }
  CHECK_THROWS_WITH(nn::unmerge_lora(gpt),
                    Contains("\"encoder.layers.0.self_attn\": its weight or its adapter changed since merge_lora"));
  {
    NoGradGuard no_grad;
    gpt.state_dict().at("encoder.layers.0.self_attn.in_proj_weight").copy_(Tensor<float>(merged));
  }
  nn::unmerge_lora(gpt);

  SECTION("merge and unload: the base's names, the adapted logits") {
    nn::merge_and_unload_lora(gpt);
    CHECK(nn::lora_layers(gpt).empty());
    CHECK(gpt.state_dict().size() == base.size());
    CHECK(testing::allclose(xt::xarray<float>(gpt.forward(ids).data()), adapted, 1e-5, 1e-5));
  }
  SECTION("unload: the base as it was") {
    nn::merge_lora(gpt);
    nn::unload_lora(gpt);
    const auto state = gpt.state_dict();
    CHECK(state.size() == base.size());
    for (const auto& [name, t] : base) {
      INFO(name);
      CHECK(state.at(name).data() == t.data());
    }
  }
}

TEMPLATE_TEST_CASE(
    "LoRA training steps match torch on a GPT-2 with adapters on c_attn and c_proj (Conv1D, fan_in_fan_out)",
    "[nn][lora][parity][models]", float, double) {
  using T = TestType;
  const auto& file = lora_fixture();
  const std::string prefix = case_prefix<T>("gpt2");
  Generator gen(0);
  models::GPT<T> gpt(small_gpt2(), gen);
  nn::inject_lora(gpt, gpt2_config(), gen, hf_names(gpt));
  const xt::xarray<std::int64_t> ids = file.get<std::int64_t>("gpt2.ids");
  check_steps<T>(
      gpt, "gpt2", [&] { return gpt.forward(ids); }, 4.0);
  // PEFT merges B A transposed into the Conv1D's [in, out] weight; tapegrad's [out, in] gets B A.
  nn::merge_lora(gpt);
  const double rtol = testing::Tolerance<T>::rtol * 4, atol = testing::Tolerance<T>::atol * 4;
  for (const auto& [name, layer] : nn::lora_layers(gpt)) {
    const std::string weight =
        name + (name.size() > 9 && name.substr(name.size() - 9) == "self_attn" ? ".in_proj_weight" : ".weight");
    INFO(weight);
    CHECK(testing::mismatch(layer.weight.data(), file.get<T>(prefix + "merged." + weight), rtol, atol) == "");
  }
}

TEST_CASE("A GPT's adapters saved under GPT2LMHeadModel's names (c_attn, c_proj) load back onto the base",
          "[nn][lora][io]") {
  testing::TempDir dir;
  Generator gen(50);
  models::GPT<float> gpt(small_gpt2(), gen);
  const StateDict<float> base = gpt.state_dict();
  const StateDict<float> base_copy = snapshot(base);
  nn::inject_lora(gpt, gpt2_config(), gen, hf_names(gpt));
  perturb_adapters(gpt, 51);
  nn::LoraFileOptions options;
  options.module_name = hf_names(gpt);
  nn::save_lora_adapter(gpt, gpt2_config(), dir.file("a"), options);
  const io::safetensors::File file(dir.file("a") + "/adapter_model.safetensors");
  const auto names = file.names();
  CHECK(names.size() == 12);
  for (const char* expected : {"base_model.model.transformer.h.0.attn.c_attn.lora_A.weight",
                               "base_model.model.transformer.h.1.attn.c_attn.lora_B.weight",
                               "base_model.model.transformer.h.0.attn.c_proj.lora_A.weight",
                               "base_model.model.transformer.h.1.mlp.c_proj.lora_B.weight"}) {
    INFO(expected);
    CHECK(std::find(names.begin(), names.end(), expected) != names.end());
  }
  CHECK(file.shape("base_model.model.transformer.h.0.attn.c_attn.lora_B.weight") == Shape{24, 2});
  const auto config = nlohmann::json::parse(read(dir.file("a") + "/adapter_config.json"));
  CHECK(config["target_modules"] == nlohmann::json::array({"c_attn", "c_proj"}));
  CHECK(config["fan_in_fan_out"] == true);

  Generator gen2(52);
  models::GPT<float> fresh(small_gpt2(), gen2);
  fresh.load_state_dict(base_copy);
  const nn::LoraConfig loaded = nn::load_lora_adapter(fresh, dir.file("a"), options);
  CHECK(loaded.fan_in_fan_out);
  CHECK(nn::lora_layers(fresh).size() == 6);
  const xt::xarray<std::int64_t> ids = testing::random_ids(2, 5, 13, 53);
  CHECK(fresh.forward(ids).data() == gpt.forward(ids).data());
  // Without the names of the Hugging Face model, "c_attn" selects nothing of a GPT.
  models::GPT<float> unnamed(small_gpt2(), gen2);
  CHECK_THROWS_WITH(nn::load_lora_adapter(unnamed, dir.file("a")), Contains("\"c_attn\" matches no module of GPT"));
}

// The GPT-2 counterpart of the test above, for make_lora_fixtures.py --check-gpt2-adapter: a GPT saved
// in GPT2LMHeadModel's layout (base/, models::save_pretrained) and its adapters on c_attn and c_proj in
// PEFT's (adapter/, fan_in_fan_out), which torch applies to transformers' Conv1D layers. Write it with
//   TAPEGRAD_EXPORT_GPT2_LORA_FOR_TORCH=/tmp/gpt2-lora build/tests/tapegrad_tests "<this test's name>"
// Either way the test checks that the two folders load into a fresh GPT that reproduces the logits.
TEST_CASE("a tapegrad GPT-2 LoRA adapter folder (c_attn, c_proj) loads into torch", "[nn][lora][io]") {
  testing::TempDir tmp;
  const std::string folder = export_folder("TAPEGRAD_EXPORT_GPT2_LORA_FOR_TORCH", tmp);
  Generator gen(60);
  models::GPT<float> gpt(small_gpt2(), gen);
  models::save_pretrained(gpt, folder + "/base");
  nn::inject_lora(gpt, gpt2_config(), gen, hf_names(gpt));
  perturb_adapters(gpt, 61);
  nn::LoraFileOptions options;
  options.base_model_name_or_path = "base";
  options.module_name = hf_names(gpt);
  nn::save_lora_adapter(gpt, gpt2_config(), folder + "/adapter", options);
  gpt.eval();
  const xt::xarray<std::int64_t> ids = testing::random_ids(2, 7, 13, 62);
  const xt::xarray<float> logits = gpt.forward(ids).data();
  save_expected(folder, ids, logits);

  const auto fresh = models::from_pretrained<float>(folder + "/base");
  auto& module = dynamic_cast<nn::Module<float>&>(*fresh);
  nn::LoraFileOptions fresh_options;
  fresh_options.module_name = [&](const std::string& n) { return models::hugging_face_module_name(*fresh, n); };
  nn::load_lora_adapter(module, folder + "/adapter", fresh_options);
  module.eval();
  CHECK(fresh->forward(ids).data() == logits);
}

TEST_CASE("A LoRA c_attn trains the same under activation checkpointing, dropout masks included",
          "[nn][lora][models]") {
  models::GPTOptions o = small_gpt2();
  const xt::xarray<std::int64_t> ids = testing::random_ids(2, 7, 13, 70);
  xt::xarray<std::int64_t> targets = testing::random_ids(1, 14, 13, 71);
  targets.reshape({14});
  std::vector<std::pair<std::string, xt::xarray<double>>> grads[2];
  for (const bool checkpointing : {false, true}) {
    o.activation_checkpointing = checkpointing;
    Generator gen(72);
    models::GPT<double> gpt(o, gen);
    nn::LoraConfig c = gpt2_config();
    c.lora_dropout = 0.3;
    nn::inject_lora(gpt, c, gen, hf_names(gpt));
    perturb_adapters(gpt, 73);
    cross_entropy(reshape(gpt.forward(ids), {14, 13}), targets).backward();
    for (const auto& [name, p] : gpt.named_parameters())
      if (p.requires_grad()) grads[checkpointing].emplace_back(name, p.grad());
  }
  REQUIRE(grads[0].size() == 12);
  REQUIRE(grads[1].size() == 12);
  for (std::size_t i = 0; i < grads[0].size(); ++i) {
    INFO(grads[0][i].first);
    CHECK(grads[1][i].first == grads[0][i].first);
    CHECK(testing::allclose(grads[1][i].second, grads[0][i].second, 1e-12, 1e-12));
  }
}
