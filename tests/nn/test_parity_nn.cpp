// nn modules against torch 1.13 in eval mode: torch's state_dict loaded (strict) into a tapegrad module
// built from another seed, then outputs, attention weights and the gradients of every input and
// parameter for fixed random upstream gradients, in float and double, read from
// tests/fixtures/modules.safetensors (written by tests/fixtures/make_module_fixtures.py, which
// documents the layout; torch is not needed here). And the other direction: a state_dict tapegrad
// saves, which that script's --check-tapegrad mode loads into torch.
#include <fmt/format.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/models/llama.hpp"
#include "tapegrad/nn/nn.hpp"
#include "tests/helpers.hpp"
#include "tests/parity.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::testing;

namespace {

const io::safetensors::File& fixture() { return testing::fixture_file("modules.safetensors"); }

// One case of the fixture in one dtype: its inputs as fresh leaves that require grad, its masks.
template <typename T>
class Inputs : public testing::CaseInputs<T> {
 public:
  explicit Inputs(std::string prefix) : testing::CaseInputs<T>(fixture(), std::move(prefix)) {}
  AttentionMask<T> mask(const std::string& name) const {
    return this->file_.template get<bool>(this->prefix_ + ".mask." + name);
  }
  // An integer input (EmbeddingBag's ids and offsets).
  xt::xarray<std::int64_t> ids(const std::string& name) const {
    return this->file_.template get<std::int64_t>(this->prefix_ + ".ids." + name);
  }
};

// The output and, for attention, the weights (undefined otherwise).
template <typename T>
using Outputs = std::pair<Tensor<T>, Tensor<T>>;

template <typename T>
struct ModuleCase {
  std::function<std::shared_ptr<Module<T>>(Generator&)> build;
  std::function<Outputs<T>(const Module<T>&, const Inputs<T>&)> call;
  /// The tolerance of tests/parity.hpp times this: whole models (llama_tied, llama_untied), whose
  /// parameter gradients in float pass through two layers, tied projections and the embedding, carry more
  /// rounding than one module: torch's own float32 gradients there differ from its float64 ones by up to
  /// 2.2 times the module tolerance (seen over seeds and lengths of these cases).
  double tolerance_scale = 1.0;
};

// A whole model's entry: its comparison at 4 times the module tolerance (see ModuleCase).
template <typename T>
std::pair<std::string, ModuleCase<T>> whole_model(std::pair<std::string, ModuleCase<T>> e) {
  e.second.tolerance_scale = 4.0;
  return e;
}

// A table entry for module type M: build makes it, call runs it (on the M that build made).
template <typename T, typename M, typename Build, typename Call>
std::pair<std::string, ModuleCase<T>> entry(std::string name, Build build, Call call) {
  ModuleCase<T> c;
  c.build = [build](Generator& gen) -> std::shared_ptr<Module<T>> { return build(gen); };
  c.call = [call](const Module<T>& m, const Inputs<T>& in) -> Outputs<T> { return call(static_cast<const M&>(m), in); };
  return {std::move(name), std::move(c)};
}

MultiheadAttentionOptions self_attention_options() {
  MultiheadAttentionOptions o(8, 2);
  o.dropout = 0.1;
  o.batch_first = true;
  return o;
}

TransformerLayerOptions layer_options(bool batch_first, bool norm_first, Activation activation) {
  TransformerLayerOptions o(8, 2);
  o.dim_feedforward = 16;
  o.dropout = 0.1;
  o.batch_first = batch_first;
  o.norm_first = norm_first;
  o.activation = activation;
  return o;
}

// make_module_fixtures.py's LlamaReference(11, 8, 2, 12, layers, tie) and its layers.
models::LlamaOptions llama_options(std::size_t layers, bool tied) {
  auto o = testing::sized<models::LlamaOptions>(11, 8, 8, 2, layers);
  o.hidden = 12;
  o.tie_embeddings = tied;
  return o;
}

// Every case of the fixture file; each mirrors the torch module and call of the same name in
// make_module_fixtures.py.
template <typename T>
std::vector<std::pair<std::string, ModuleCase<T>>> cases() {
  using MHA = MultiheadAttention<T>;
  using EncoderLayer = TransformerEncoderLayer<T>;
  using DecoderLayer = TransformerDecoderLayer<T>;
  const auto self_attention = [](bool average) {
    return [average](const MHA& m, const Inputs<T>& in) {
      const auto& x = in.in("x");
      return m.forward(x, x, x, in.mask("key_padding_mask"), /*need_weights=*/true, {}, average);
    };
  };
  const auto encode = [](const auto& m, const Inputs<T>& in) {
    return Outputs<T>{m.forward(in.in("src"), {}, in.mask("src_key_padding_mask")), {}};
  };
  const auto decode = [](const DecoderLayer& m, const Inputs<T>& in) {
    return Outputs<T>{
        m.forward(in.in("tgt"), in.in("memory"), in.mask("tgt_mask"), {}, {}, in.mask("memory_key_padding_mask")), {}};
  };
  const auto encoder_layer = [](bool norm_first, Activation activation) {
    return [=](Generator& gen) {
      return std::make_shared<EncoderLayer>(layer_options(true, norm_first, activation), gen);
    };
  };
  const auto decoder_layer = [](bool batch_first, bool norm_first, Activation activation) {
    return [=](Generator& gen) {
      return std::make_shared<DecoderLayer>(layer_options(batch_first, norm_first, activation), gen);
    };
  };
  using Bag = EmbeddingBag<T>;
  const auto single_input = [](const auto& m, const Inputs<T>& in) { return Outputs<T>{m.forward(in.in("x")), {}}; };
  const auto bag = [](EmbeddingBagMode mode, std::int64_t padding_idx, bool include_last_offset) {
    return [=](Generator& gen) { return std::make_shared<Bag>(10, 4, gen, mode, padding_idx, include_last_offset); };
  };
  const auto llama_ids = [](const models::Llama<T>& m, const Inputs<T>& in) {
    return Outputs<T>{m.forward(in.ids("ids")), {}};
  };
  const auto bag_offsets = [](const Bag& m, const Inputs<T>& in) {
    return Outputs<T>{m.forward(in.ids("input"), in.ids("offsets")), {}};
  };
  return {
      entry<T, Linear<T>>(
          "linear", [](Generator& gen) { return std::make_shared<Linear<T>>(4, 5, gen); },
          [](const Linear<T>& m, const Inputs<T>& in) {
            return Outputs<T>{m.forward(in.in("x")), {}};
          }),
      entry<T, LayerNorm<T>>(
          "layer_norm",
          [](Generator&) {
            return std::make_shared<LayerNorm<T>>(Shape{3, 5}, 1e-4);
          },
          [](const LayerNorm<T>& m, const Inputs<T>& in) {
            return Outputs<T>{m.forward(in.in("x")), {}};
          }),
      entry<T, MHA>(
          "mha_self_padding_averaged",
          [](Generator& gen) { return std::make_shared<MHA>(self_attention_options(), gen); }, self_attention(true)),
      entry<T, MHA>(
          "mha_self_padding_per_head",
          [](Generator& gen) { return std::make_shared<MHA>(self_attention_options(), gen); }, self_attention(false)),
      entry<T, MHA>(
          "mha_cross_kdim_vdim_causal",
          [](Generator& gen) {
            MultiheadAttentionOptions o(8, 4);
            o.dropout = 0.1;
            o.kdim = 6;
            o.vdim = 5;
            return std::make_shared<MHA>(o, gen);
          },
          [](const MHA& m, const Inputs<T>& in) {
            return m.forward(in.in("query"), in.in("key"), in.in("value"), {}, true, in.mask("attn_mask"));
          }),
      entry<T, EncoderLayer>("encoder_layer_post_relu", encoder_layer(false, Activation::ReLU), encode),
      entry<T, EncoderLayer>("encoder_layer_pre_gelu", encoder_layer(true, Activation::GELU), encode),
      entry<T, DecoderLayer>("decoder_layer_post_relu", decoder_layer(false, false, Activation::ReLU), decode),
      entry<T, DecoderLayer>("decoder_layer_pre_gelu", decoder_layer(true, true, Activation::GELU), decode),
      entry<T, TransformerEncoder<T>>(
          "encoder_2_layers_final_norm",
          [](Generator& gen) {
            return std::make_shared<TransformerEncoder<T>>(layer_options(true, false, Activation::ReLU), 2, gen,
                                                           std::make_shared<LayerNorm<T>>(8));
          },
          encode),
      // more_cases() of the script: RMSNorm and rotary embeddings against torch's formulas, EmbeddingBag's
      // offsets form and mode max against torch 1.13's module.
      entry<T, RMSNorm<T>>(
          "rms_norm_default_eps", [](Generator&) { return std::make_shared<RMSNorm<T>>(16); }, single_input),
      entry<T, RMSNorm<T>>(
          "rms_norm_2d_eps",
          [](Generator&) {
            return std::make_shared<RMSNorm<T>>(Shape{3, 5}, 1e-5);
          },
          single_input),
      entry<T, RMSNorm<T>>(
          "rms_norm_no_affine", [](Generator&) { return std::make_shared<RMSNorm<T>>(8, 1e-6, false); }, single_input),
      entry<T, RotaryEmbedding<T>>(
          "rotary", [](Generator&) { return std::make_shared<RotaryEmbedding<T>>(8); }, single_input),
      entry<T, RotaryEmbedding<T>>(
          "rotary_offset_base", [](Generator&) { return std::make_shared<RotaryEmbedding<T>>(16, 500.0); },
          [](const RotaryEmbedding<T>& m, const Inputs<T>& in) {
            return Outputs<T>{m.forward(in.in("x"), 1000), {}};
          }),
      entry<T, Bag>("embedding_bag_offsets_sum", bag(EmbeddingBagMode::Sum, 2, false), bag_offsets),
      entry<T, Bag>("embedding_bag_offsets_mean_last", bag(EmbeddingBagMode::Mean, 2, true), bag_offsets),
      entry<T, Bag>("embedding_bag_offsets_max", bag(EmbeddingBagMode::Max, 2, false), bag_offsets),
      entry<T, Bag>(
          "embedding_bag_2d_max",
          [](Generator& gen) { return std::make_shared<Bag>(6, 3, gen, EmbeddingBagMode::Max, 0); },
          [](const Bag& m, const Inputs<T>& in) {
            return Outputs<T>{m.forward(in.ids("input")), {}};
          }),
      // llama_cases() of the script: models::Llama's layer and model against a composite of torch ops.
      entry<T, models::LlamaDecoderLayer<T>>(
          "llama_layer",
          [](Generator& gen) {
            return std::make_shared<models::LlamaDecoderLayer<T>>(llama_options(1, true), gen,
                                                                  std::make_shared<Generator>(0));
          },
          [](const models::LlamaDecoderLayer<T>& m, const Inputs<T>& in) {
            const RotaryEmbedding<T> rope(4);
            KVCache<T> cache;  // empty: the full causal forward
            return Outputs<T>{m.forward(in.in("x"), rope, cache), {}};
          }),
      whole_model(entry<T, models::Llama<T>>(
          "llama_tied", [](Generator& gen) { return std::make_shared<models::Llama<T>>(llama_options(2, true), gen); },
          llama_ids)),
      whole_model(entry<T, models::Llama<T>>(
          "llama_untied",
          [](Generator& gen) { return std::make_shared<models::Llama<T>>(llama_options(1, false), gen); }, llama_ids)),
      // weighted_bag_cases() of the script: per_sample_weights, with their gradient.
      entry<T, Bag>("embedding_bag_offsets_sum_weighted", bag(EmbeddingBagMode::Sum, 2, false),
                    [](const Bag& m, const Inputs<T>& in) {
                      return Outputs<T>{m.forward(in.ids("input"), in.ids("offsets"), in.in("per_sample_weights")), {}};
                    }),
      entry<T, Bag>(
          "embedding_bag_2d_sum_weighted",
          [](Generator& gen) { return std::make_shared<Bag>(6, 3, gen, EmbeddingBagMode::Sum); },
          [](const Bag& m, const Inputs<T>& in) {
            return Outputs<T>{m.forward(in.ids("input"), in.in("per_sample_weights")), {}};
          }),
  };
}

template <typename T>
void expect_close(const xt::xarray<T>& got, const std::string& key, double scale = 1.0) {
  const std::string problem =
      mismatch(got, fixture().get<T>(key), testing::Tolerance<T>::rtol * scale, testing::Tolerance<T>::atol * scale);
  INFO(key << ": " << problem);
  CHECK(problem.empty());
}

// Loads torch's state_dict, runs the case, then backward from the stored upstream gradients; checks
// the outputs and every input's and parameter's gradient.
template <typename T>
void check_against_torch(const std::string& name, const ModuleCase<T>& c) {
  const std::string prefix = name + "." + dtype_tag<T>();
  Generator gen(20240601);
  const auto module = c.build(gen);
  module->eval();
  StateDict<T> state = module->state_dict();
  io::safetensors::load_state_dict(fixture(), state, /*strict=*/true, prefix + ".model.");

  const Inputs<T> inputs(prefix);
  // Every case has a float input or a parameter (EmbeddingBag's inputs are integers).
  REQUIRE_FALSE((inputs.inputs().empty() && module->parameters().empty()));
  const auto [out, weights] = c.call(*module, inputs);
  expect_close(out.data(), prefix + ".out", c.tolerance_scale);
  const bool has_weights = fixture().contains(prefix + ".weights");
  REQUIRE(weights.defined() == has_weights);
  if (has_weights) {
    expect_close(weights.data(), prefix + ".weights", c.tolerance_scale);
    weights.backward(fixture().get<T>(prefix + ".gweights"), /*retain_graph=*/true);
  }
  out.backward(fixture().get<T>(prefix + ".gout"));

  for (const auto& [input, tensor] : inputs.inputs()) {
    INFO("gradient of input " << input);
    REQUIRE(tensor.has_grad());
    expect_close(tensor.grad(), prefix + ".grad.in." + input, c.tolerance_scale);
  }
  std::set<std::string> graded;
  for (const auto& [param, tensor] : module->named_parameters()) {
    INFO("gradient of parameter " << param);
    REQUIRE(tensor.has_grad());
    expect_close(tensor.grad(), prefix + ".grad.model." + param, c.tolerance_scale);
    graded.insert(param);
  }
  // torch's file has a gradient for exactly these parameters.
  std::set<std::string> in_file;
  const std::string grads = prefix + ".grad.model.";
  for (const auto& key : fixture().names())
    if (key.compare(0, grads.size(), grads) == 0) in_file.insert(key.substr(grads.size()));
  CHECK(graded == in_file);
}

}  // namespace

TEMPLATE_TEST_CASE("nn modules match torch 1.13 outputs and gradients", "[parity]", float, double) {
  for (const auto& [name, c] : cases<TestType>()) {
    DYNAMIC_SECTION(name) { check_against_torch<TestType>(name, c); }
  }
}

TEST_CASE("the module parity table covers every case of modules.safetensors in both dtypes", "[parity]") {
  // <case>.<dtype>.out: the case is everything before the dtype tag.
  CHECK(testing::coverage_problems(testing::fixture_cases(fixture(), ".out", /*at_end=*/true),
                                   testing::case_names(cases<double>())) == "");
  CHECK(cases<float>().size() == cases<double>().size());
}

namespace {

// A TransformerEncoderLayer's state_dict, input, padding mask and output under "<name>.", with its
// constructor arguments as torch's keyword arguments in the metadata "<name>.config".
template <typename T>
void add_encoder_layer(const std::string& name, const TransformerLayerOptions& o, std::uint64_t seed,
                       std::map<std::string, io::safetensors::Array>& tensors, io::safetensors::Metadata& metadata) {
  Generator gen(seed);
  TransformerEncoderLayer<T> layer(o, gen);
  layer.eval();
  const Shape shape = o.batch_first ? Shape{3, 5, o.d_model} : Shape{5, 3, o.d_model};
  const auto src = Tensor<T>::normal(shape, T(0), T(1), gen);
  BoolArray padding = xt::zeros<bool>({3, 5});
  padding(0, 3) = padding(0, 4) = padding(1, 4) = true;
  const Tensor<T> out = layer.forward(src, {}, padding);
  for (const auto& [key, tensor] : layer.state_dict()) tensors[name + ".model." + key] = tensor.data();
  tensors[name + ".in.src"] = src.data();
  tensors[name + ".mask.src_key_padding_mask"] = padding;
  tensors[name + ".out"] = out.data();
  metadata[name + ".config"] =
      fmt::format(R"({{"d_model": {}, "nhead": {}, "dim_feedforward": {}, "dropout": {}, "activation": "{}", )"
                  R"("layer_norm_eps": {}, "batch_first": {}, "norm_first": {}}})",
                  o.d_model, o.nhead, o.dim_feedforward, o.dropout, o.activation == Activation::ReLU ? "relu" : "gelu",
                  o.layer_norm_eps, o.batch_first ? "true" : "false", o.norm_first ? "true" : "false");
}

}  // namespace

// The file tests/fixtures/make_module_fixtures.py --check-tapegrad loads into torch: write it with
//   TAPEGRAD_EXPORT_FOR_TORCH=/tmp/enc.safetensors build/tests/tapegrad_tests "<this test's name>"
// (see tests/fixtures/README.md). Without the variable the file goes to a temporary directory; either
// way the test checks that it loads back (strict) into a fresh layer that reproduces the output.
TEST_CASE("a tapegrad TransformerEncoderLayer state_dict loads into torch", "[parity]") {
  const char* env = std::getenv("TAPEGRAD_EXPORT_FOR_TORCH");
  const auto tmp = std::filesystem::temp_directory_path() /
                   ("tapegrad_export_for_torch_" + std::to_string(::getpid()) + ".safetensors");
  const std::string path = env && *env ? std::string(env) : tmp.string();

  auto post = layer_options(false, false, Activation::ReLU);
  auto pre = layer_options(true, true, Activation::GELU);
  pre.layer_norm_eps = 1e-6;
  std::map<std::string, io::safetensors::Array> tensors;
  io::safetensors::Metadata metadata{{"source", "tests/test_parity_nn.cpp"}};
  add_encoder_layer<float>("post_relu_f32", post, 7, tensors, metadata);
  add_encoder_layer<double>("pre_gelu_f64", pre, 8, tensors, metadata);
  io::safetensors::save_file(path, tensors, metadata);

  const io::safetensors::File file(path);
  const auto reload = [&file](const std::string& name, const TransformerLayerOptions& o, auto zero) {
    using T = decltype(zero);
    Generator gen(99);
    TransformerEncoderLayer<T> layer(o, gen);
    layer.eval();
    StateDict<T> state = layer.state_dict();
    io::safetensors::load_state_dict(file, state, /*strict=*/true, name + ".model.");
    const auto out = layer.forward(Tensor<T>(file.get<T>(name + ".in.src")), {},
                                   file.get<bool>(name + ".mask.src_key_padding_mask"));
    CHECK(out.data() == file.get<T>(name + ".out"));
  };
  reload("post_relu_f32", post, 0.0f);
  reload("pre_gelu_f64", pre, 0.0);
  if (path == tmp.string()) std::filesystem::remove(tmp);
}
