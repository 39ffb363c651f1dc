// Hugging Face checkpoints both ways: the folders of tests/fixtures/make_pretrained_fixtures.py (GPT-2 and
// Llama, F32 / F16 / BF16, one file and shards, both GPT-2 naming schemes, tied and untied, grouped-query
// attention) give the logits and greedy continuations of its independent torch reference;
// save_pretrained writes transformers' names, shapes and config, and reads back to the same logits;
// every unsupported setting and broken file is refused by name.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tapegrad/autograd/tape.hpp"
#include "tapegrad/io/json.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/models/generate.hpp"
#include "tapegrad/models/gpt.hpp"
#include "tapegrad/models/llama.hpp"
#include "tapegrad/models/pretrained.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::models;
namespace st = tapegrad::io::safetensors;
namespace fs = std::filesystem;
using nlohmann::json;
using tapegrad::testing::random_ids;
using tapegrad::testing::TempDir;

namespace {

const std::string kDir = std::string(TAPEGRAD_TEST_FIXTURES_DIR) + "/pretrained/";

const std::vector<std::string> kCases = {"gpt2_prefixed_f32_tied",
                                         "gpt2_bare_f16_untied",
                                         "gpt2_sharded_bf16",
                                         "llama_gqa_bf16_rope_parameters",
                                         "llama_sharded_f16_tied_bias_head_dim",
                                         "llama_f32"};

// The largest |a - b| relative to max(1, |b|).
template <typename T>
double worst_difference(const xt::xarray<T>& a, const xt::xarray<float>& b) {
  REQUIRE(a.shape() == b.shape());
  double worst = 0.0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    const double ref = b.data()[k];
    worst = std::max(worst, std::abs(double(a.data()[k]) - ref) / std::max(1.0, std::abs(ref)));
  }
  return worst;
}

template <typename T>
void check_against_reference(const std::string& name, double tolerance) {
  INFO(name);
  const st::File expected(kDir + name + ".expected.safetensors");
  const auto model = from_pretrained<T>(kDir + name);
  NoGradGuard no_grad;
  const double worst =
      worst_difference(model->forward(expected.get<std::int64_t>("ids")).data(), expected.get<float>("logits"));
  INFO("largest relative difference from the reference's logits " << worst);
  CHECK(worst <= tolerance);
  const auto prompt = expected.get<std::int64_t>("prompt");
  const auto greedy = expected.get<std::int64_t>("greedy");
  GenerateOptions g;
  g.sampling.temperature = 0.0;
  g.max_new_tokens = greedy.size();
  CHECK(generate(*model, std::vector<std::int64_t>(prompt.begin(), prompt.end()), g) ==
        std::vector<std::int64_t>(greedy.begin(), greedy.end()));
}

json read_config(const fs::path& dir) {
  std::ifstream in(dir / "config.json");
  return json::parse(in);
}

void write_config(const fs::path& dir, const json& config) { std::ofstream(dir / "config.json") << config.dump(2); }

int copies = 0;  // one counter for every instance of edited_copy

// A fresh copy of a fixture's folder whose config.json edit() changes.
template <typename Edit>
fs::path edited_copy(const TempDir& tmp, const std::string& name, Edit edit) {
  const fs::path dir = tmp.path / (name + "." + std::to_string(++copies));
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(kDir + name))
    fs::copy_file(entry.path(), dir / entry.path().filename());
  json config = read_config(dir);
  edit(config);
  write_config(dir, config);
  return dir;
}

std::string load_error(const fs::path& dir) {
  try {
    from_pretrained<float>(dir.string());
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("from_pretrained: every fixture gives the torch reference's logits and greedy continuation, in double",
          "[pretrained]") {
  // The expected logits are stored as F32: their own rounding is 6e-8 of their size.
  for (const auto& name : kCases) check_against_reference<double>(name, 1e-6);
}

TEST_CASE("from_pretrained: every fixture gives the torch reference's logits and greedy continuation, in float",
          "[pretrained]") {
  for (const auto& name : kCases) check_against_reference<float>(name, 2e-5);
}

TEST_CASE("from_pretrained: the configs become GPT's and Llama's options, field by field", "[pretrained]") {
  const auto tied = std::dynamic_pointer_cast<GPT<float>>(from_pretrained<float>(kDir + "gpt2_prefixed_f32_tied"));
  REQUIRE(tied);
  CHECK(tied->options.activation == nn::Activation::GELUTanh);
  CHECK(tied->options.tie_embeddings);
  CHECK_FALSE(tied->options.scale_embeddings);
  CHECK_FALSE(tied->options.output_bias);
  CHECK_FALSE(tied->options.padding_idx.has_value());
  CHECK(tied->options.max_len == 48);
  CHECK(tied->options.dim_feedforward == 64);  // n_inner absent: 4 n_embd
  CHECK_FALSE(tied->is_training());            // eval mode, as transformers returns it
  CHECK(tied->lm_head == nullptr);

  const auto untied = std::dynamic_pointer_cast<GPT<float>>(from_pretrained<float>(kDir + "gpt2_bare_f16_untied"));
  REQUIRE(untied);
  CHECK(untied->options.activation == nn::Activation::GELU);
  CHECK(untied->options.layer_norm_eps == 1e-3);
  CHECK(untied->options.dim_feedforward == 24);
  CHECK(untied->options.dropout == 0.0);
  CHECK(untied->options.embedding_dropout == 0.2);
  CHECK(untied->options.activation_dropout == 0.0);
  CHECK(untied->lm_head != nullptr);

  const auto gqa =
      std::dynamic_pointer_cast<Llama<float>>(from_pretrained<float>(kDir + "llama_gqa_bf16_rope_parameters"));
  REQUIRE(gqa);
  CHECK(gqa->options.nhead == 4);
  CHECK(gqa->options.kv_heads() == 2);
  CHECK(gqa->options.rope_base == 500000.0);  // from rope_parameters
  CHECK(gqa->options.rms_norm_eps == 1e-5);
  CHECK_FALSE(gqa->options.tie_embeddings);

  const auto mqa =
      std::dynamic_pointer_cast<Llama<float>>(from_pretrained<float>(kDir + "llama_sharded_f16_tied_bias_head_dim"));
  REQUIRE(mqa);
  CHECK(mqa->options.kv_heads() == 1);
  CHECK(mqa->options.head_size() == 6);
  CHECK(mqa->options.rope_base == 1000.0);
  CHECK(mqa->options.attention_bias);
  CHECK(mqa->options.mlp_bias);
  CHECK(mqa->options.tie_embeddings);
  const auto plain = std::dynamic_pointer_cast<Llama<double>>(from_pretrained<double>(kDir + "llama_f32"));
  REQUIRE(plain);
  CHECK(plain->options.rope_base == 10000.0);  // LlamaConfig's default
  CHECK(plain->options.padding_idx == std::optional<std::int64_t>(0));
}

TEST_CASE("save_pretrained: transformers' names, Conv1D layouts and config, and the same logits read back",
          "[pretrained]") {
  TempDir tmp;
  for (const auto& name : kCases) {
    INFO(name);
    const auto model = from_pretrained<float>(kDir + name);
    const fs::path out = tmp.path / name;
    save_pretrained(*model, out.string());
    const auto again = from_pretrained<float>(out.string());
    const xt::xarray<std::int64_t> ids = random_ids(2, 9, model->vocab_size(), 4);
    NoGradGuard no_grad;
    // F32 holds a float model's every bit.
    CHECK(bool(model->forward(ids).data() == again->forward(ids).data()));

    const st::File file((out / "model.safetensors").string());
    CHECK(file.metadata() == st::Metadata{{"format", "pt"}});
    const json config = read_config(out);
    const json original = read_config(kDir + name);
    CHECK(config["model_type"] == original["model_type"]);
    if (original["model_type"] == "gpt2") {
      CHECK(config["architectures"] == json::array({"GPT2LMHeadModel"}));
      for (const char* field : {"n_embd", "n_layer", "n_head", "n_positions", "vocab_size"})
        CHECK(config[field] == original[field]);
      CHECK(file.shape("transformer.h.1.attn.c_attn.weight") == Shape{16, 48});  // Conv1D: [in, out]
      CHECK(file.shape("transformer.h.0.mlp.c_proj.weight") == Shape{config["n_inner"].get<std::size_t>(), 16});
      CHECK(file.contains("transformer.ln_f.bias"));
      CHECK(file.contains("lm_head.weight") == !original.value("tie_word_embeddings", true));
      CHECK(config["tie_word_embeddings"] == original.value("tie_word_embeddings", true));
    } else {
      CHECK(config["architectures"] == json::array({"LlamaForCausalLM"}));
      CHECK(file.contains("model.layers.1.self_attn.k_proj.weight"));
      CHECK(file.contains("lm_head.weight") == !original.value("tie_word_embeddings", false));
      CHECK(config["num_key_value_heads"] == original["num_key_value_heads"]);
      CHECK(config["rope_theta"].get<double>() == dynamic_cast<const Llama<float>&>(*model).options.rope_base);
    }
  }
}

TEST_CASE("save_pretrained: a GPT of train_lm's kind (scaled embeddings, sinusoidal positions) as GPT-2",
          "[pretrained]") {
  auto o = testing::sized<GPTOptions>(40, 20, 16, 2, 2);
  o.dim_feedforward = 32;
  o.positional = PositionalKind::Sinusoidal;
  Generator gen(3);
  GPT<double> model(o, gen);
  model.eval();
  TempDir tmp;
  // Its output bias is a parameter GPT-2 lacks: a trained one cannot be written.
  model.output_bias.mutable_data()(3) = 0.5;
  CHECK_THROWS_WITH(
      save_pretrained(model, tmp.file("gpt")),
      Catch::Contains("output_bias is nonzero (|value| up to 0.5)") && Catch::Contains("GPT-2's lm_head has no bias"));
  model.output_bias.mutable_data()(3) = 0.0;
  save_pretrained(model, tmp.file("gpt"));
  const st::File file(tmp.file("gpt") + "/model.safetensors");
  CHECK(file.shape("transformer.wpe.weight") == Shape{20, 16});
  CHECK(file.contains("lm_head.weight"));  // the scaled input table and the head differ: written untied
  CHECK_FALSE(read_config(tmp.file("gpt"))["tie_word_embeddings"].get<bool>());
  const auto again = from_pretrained<double>(tmp.file("gpt"));
  const xt::xarray<std::int64_t> ids = random_ids(2, 20, o.vocab_size, 6);
  NoGradGuard no_grad;
  // The weights went through F32.
  CHECK(xt::allclose(model.forward(ids).data(), again->forward(ids).data(), 1e-5, 1e-5));
}

TEST_CASE("save_pretrained: a Llama with grouped-query attention reads back to the same logits", "[pretrained]") {
  auto o = testing::sized<LlamaOptions>(50, 24, 16, 4, 2);
  o.num_kv_heads = 2;
  o.hidden = 24;
  o.tie_embeddings = false;
  Generator gen(8);
  Llama<float> model(o, gen);
  model.eval();
  TempDir tmp;
  save_pretrained(model, tmp.file("llama"));
  const json config = read_config(tmp.file("llama"));
  CHECK(config["num_key_value_heads"] == 2);
  CHECK(config["head_dim"] == 4);
  CHECK(config["pad_token_id"] == 0);
  CHECK(config["rope_parameters"] == json{{"rope_type", "default"}, {"rope_theta", 10000.0}});
  const auto again = from_pretrained<float>(tmp.file("llama"));
  const xt::xarray<std::int64_t> ids = random_ids(2, 24, o.vocab_size, 2);
  NoGradGuard no_grad;
  CHECK(bool(model.forward(ids).data() == again->forward(ids).data()));
}

TEST_CASE("from_pretrained: unknown architectures and unsupported settings are refused by name", "[pretrained]") {
  TempDir tmp;
  const auto refused = [&](const std::string& name, auto edit) { return load_error(edited_copy(tmp, name, edit)); };
  CHECK_THAT(refused("gpt2_sharded_bf16", [](json& c) { c["model_type"] = "mistral"; }),
             Catch::Contains("config.json: model_type \"mistral\" is not supported (gpt2, llama)"));
  CHECK_THAT(refused("gpt2_sharded_bf16", [](json& c) { c.erase("model_type"); }),
             Catch::Contains("config.json: has no model_type (gpt2 or llama)"));
  CHECK_THAT(refused("gpt2_sharded_bf16", [](json& c) { c["activation_function"] = "quick_gelu"; }),
             Catch::Contains("activation_function \"quick_gelu\" is not supported"));
  CHECK_THAT(refused("gpt2_sharded_bf16", [](json& c) { c["scale_attn_by_inverse_layer_idx"] = true; }),
             Catch::Contains("scale_attn_by_inverse_layer_idx true is not supported"));
  CHECK_THAT(refused("gpt2_sharded_bf16", [](json& c) { c["n_head"] = 3; }),
             Catch::Contains("config.json: GPT: d_model (16) must be divisible by nhead (3)"));
  CHECK_THAT(refused("gpt2_sharded_bf16", [](json& c) { c["n_embd"] = "16"; }),
             Catch::Contains("n_embd must be a non-negative integer, got \"16\""));
  CHECK_THAT(refused("llama_f32",
                     [](json& c) {
                       c["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
                     }),
             Catch::Contains("rope_scaling type \"linear\" is not supported"));
  CHECK_THAT(refused("llama_f32",
                     [](json& c) {
                       c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
                     }),
             Catch::Contains("rope_scaling type \"llama3\" is not supported"));
  CHECK_THAT(refused("llama_f32",
                     [](json& c) {
                       c["rope_parameters"] = {{"rope_type", "yarn"}};
                     }),
             Catch::Contains("rope_parameters type \"yarn\" is not supported"));
  CHECK_THAT(refused("llama_f32", [](json& c) { c["hidden_act"] = "gelu"; }),
             Catch::Contains("hidden_act \"gelu\" is not supported"));
  CHECK_THAT(refused("llama_f32", [](json& c) { c["attention_dropout"] = 0.1; }),
             Catch::Contains("attention_dropout 0.1 is not supported"));
  CHECK_THAT(refused("llama_f32", [](json& c) { c["num_key_value_heads"] = 3; }),
             Catch::Contains("Llama: nhead (4) must be divisible by num_kv_heads (3)"));
  // A default RoPE named explicitly is fine.
  CHECK(refused("llama_f32", [](json& c) { c["rope_scaling"] = {{"rope_type", "default"}}; }) == "no error");
}

TEST_CASE("from_pretrained: broken folders and weights are reported with the file and the tensor", "[pretrained]") {
  TempDir tmp;
  CHECK_THAT(load_error(tmp.path / "nowhere"), Catch::Contains("nowhere: is not a folder"));
  const fs::path empty = tmp.path / "empty";
  fs::create_directories(empty);
  CHECK_THAT(load_error(empty), Catch::Contains("config.json: cannot open for reading"));
  std::ofstream(empty / "config.json") << "{\"model_type\": \"gpt2\",";
  CHECK_THAT(load_error(empty), Catch::Contains("config.json: is not valid JSON"));
  std::ofstream(empty / "config.json") << "{\"model_type\": \"gpt2\", \"n_embd\": 16, \"n_head\": 4}";
  CHECK_THAT(load_error(empty), Catch::Contains("has neither model.safetensors nor model.safetensors.index.json"));
  std::ofstream(empty / "pytorch_model.bin") << "pickle";
  CHECK_THAT(load_error(empty), Catch::Contains("pytorch_model.bin, a pickle, is not read"));

  // A config that does not fit the weights: every tensor's shape named with the file's name.
  const auto wider = edited_copy(tmp, "gpt2_prefixed_f32_tied", [](json& c) { c["n_embd"] = 20; });
  CHECK_THAT(load_error(wider), Catch::Contains("from_pretrained:") &&
                                    Catch::Contains("\"transformer.wte.weight\" has shape [300, 16] in "
                                                    "model.safetensors, the config implies [300, 20]") &&
                                    Catch::Contains("\"transformer.h.0.attn.c_attn.weight\" has shape [16, 48]"));
  // A layer more than the file holds, and one fewer.
  CHECK_THAT(load_error(edited_copy(tmp, "llama_f32", [](json& c) { c["num_hidden_layers"] = 3; })),
             Catch::Contains("missing \"model.layers.2.self_attn.q_proj.weight\""));
  CHECK_THAT(load_error(edited_copy(tmp, "gpt2_sharded_bf16", [](json& c) { c["n_layer"] = 1; })),
             Catch::Contains("unexpected \"transformer.h.1.attn.c_attn.weight\" in model-0000"));
  // Untied in the config, but no lm_head in the file.
  CHECK_THAT(load_error(edited_copy(tmp, "gpt2_prefixed_f32_tied", [](json& c) { c["tie_word_embeddings"] = false; })),
             Catch::Contains("missing \"lm_head.weight\""));

  // An index naming a shard that is not there, or a path out of the folder.
  const auto sharded = edited_copy(tmp, "gpt2_sharded_bf16", [](json&) {});
  fs::remove(sharded / "model-00002-of-00002.safetensors");
  CHECK_THAT(load_error(sharded), Catch::Contains("model-00002-of-00002.safetensors: cannot open for reading"));
  const auto escaping = edited_copy(tmp, "llama_sharded_f16_tied_bias_head_dim", [](json&) {});
  {
    std::ifstream in(escaping / "model.safetensors.index.json");
    json index = json::parse(in);
    index["weight_map"]["model.norm.weight"] = "../model-00001-of-00003.safetensors";
    std::ofstream(escaping / "model.safetensors.index.json") << index.dump();
  }
  CHECK_THAT(load_error(escaping), Catch::Contains("names \"../model-00001-of-00003.safetensors\", not a file of "
                                                   "the folder"));

  // A NaN weight and an integer tensor where a weight should be.
  const auto poisoned = edited_copy(tmp, "llama_f32", [](json&) {});
  {
    const st::File original((poisoned / "model.safetensors").string());
    std::map<std::string, st::Array> tensors;
    for (const auto& name : original.names()) tensors[name] = original.get<float>(name);
    std::get<xt::xarray<float>>(tensors["model.norm.weight"])(2) = std::nanf("");
    tensors["model.layers.0.input_layernorm.weight"] = xt::xarray<std::int64_t>(xt::zeros<std::int64_t>({16}));
    st::save_file((poisoned / "model.safetensors").string(), tensors);
  }
  CHECK_THAT(load_error(poisoned),
             Catch::Contains("\"model.norm.weight\" holds nan at flat index 2 in model.safetensors") &&
                 Catch::Contains("\"model.layers.0.input_layernorm.weight\" is I64 in "
                                 "model.safetensors, not a floating dtype"));
}
