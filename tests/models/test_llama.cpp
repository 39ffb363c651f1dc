// models::Llama: gradients, the causal property, the KV cache (and RoPE's offset) against full
// recomputation, generate() through the CausalLM interface, state_dict names and round trip, errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <set>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/models/generate.hpp"
#include "tapegrad/models/gpt.hpp"
#include "tapegrad/models/llama.hpp"
#include "tapegrad/optim/adam.hpp"
#include "tests/helpers.hpp"
#include "tests/models/causal_lm_checks.hpp"
#include "tests/models/refusals.hpp"

using namespace tapegrad;
using namespace tapegrad::models;
using namespace tapegrad::testing;

namespace {

LlamaOptions tiny(bool tied = true) {
  auto o = sized<LlamaOptions>(13, 40, 16, 4, 2);
  o.hidden = 24;
  o.tie_embeddings = tied;
  return o;
}

}  // namespace

// Grouped-query attention (2 key/value heads for 4 query heads), a head size other than d_model / nhead,
// and biases on every projection, as Hugging Face's LlamaConfig allows.
LlamaOptions grouped(LlamaOptions o) {
  o.nhead = 4;
  o.num_kv_heads = 2;
  o.head_dim = 6;
  o.attention_bias = true;
  o.mlp_bias = true;
  return o;
}

TEST_CASE("Llama: gradcheck of a 2-layer model, tied, untied, and with grouped-query attention", "[llama]") {
  for (int variant : {0, 1, 2}) {
    INFO("variant " << variant << " (0 tied, 1 untied, 2 grouped-query with biases)");
    LlamaOptions o = tiny(variant == 0);
    o.vocab_size = 7;
    o.max_len = 6;
    o.d_model = 8;
    o.nhead = 2;
    o.hidden = 6;
    if (variant == 2) o = grouped(o);
    Generator gen(9);
    Llama<double> model(o, gen);
    const xt::xarray<std::int64_t> ids = {{3, 5, 1, 6, 2}, {4, 6, 2, 3, 3}};
    auto f = [&](const std::vector<Tensor<double>>&) { return model.forward(ids); };
    CHECK_GRADCHECK(f, model.parameters());
  }
}

TEST_CASE("Llama: changing token t changes no output before t, bit for bit", "[llama]") {
  check_causal_bit_for_bit(*eval_model<Llama<float>>(tiny(), 1));
}

TEMPLATE_TEST_CASE("Llama: the KV cache gives the logits of full recomputation, a prompt fed in pieces", "[llama]",
                   float, double) {
  for (int variant : {0, 1, 2}) {
    INFO("variant " << variant << " (0 tied, 1 untied, 2 grouped-query with biases)");
    LlamaOptions o = tiny(variant == 0);
    o.d_model = 32;
    o.hidden = 64;
    if (variant == 2) o = grouped(o);
    NoGradGuard no_grad;
    check_cache_matches_full(*eval_model<Llama<TestType>>(o, 4));
  }
}

TEST_CASE("Llama: forward_rows gives forward's rows", "[llama]") {
  check_forward_rows(*eval_model<Llama<double>>(tiny(), 3));
}

TEST_CASE("generate: a Llama chooses the same tokens with the cache and without, greedy and sampled", "[llama]") {
  const auto owned = eval_model<Llama<float>>(tiny(), 6);
  const Llama<float>& model = *owned;
  check_generate_with_and_without_cache(model);
  const std::vector<std::int64_t> prompt = {3, 7, 2, 9};
  // Greedy: each token is the argmax of forward's last row over the sequence so far.
  GenerateOptions g;
  g.sampling.temperature = 0.0;
  g.max_new_tokens = 8;
  const auto greedy = generate(model, prompt, g);
  std::vector<std::int64_t> sequence = prompt;
  NoGradGuard no_grad;
  for (std::int64_t token : greedy) {
    xt::xarray<std::int64_t> ids = xt::xarray<std::int64_t>::from_shape({std::size_t{1}, sequence.size()});
    std::copy(sequence.begin(), sequence.end(), ids.data());
    const xt::xarray<float> logits = model.forward(ids).data();
    const auto last = xt::eval(xt::view(logits, 0, sequence.size() - 1, xt::all()));
    CHECK(static_cast<std::int64_t>(std::max_element(last.begin(), last.end()) - last.begin()) == token);
    sequence.push_back(token);
  }
  // The interface generate() decodes through: the same tokens via a CausalLM reference.
  const CausalLM<float>& as_interface = model;
  CHECK(generate(as_interface, prompt, g) == greedy);
}

TEST_CASE("Llama: state_dict names are Hugging Face's, parameters counted, and a round trip", "[llama]") {
  Generator gen(2);
  for (bool tied : {true, false}) {
    INFO("tied " << tied);
    const LlamaOptions o = tiny(tied);
    Llama<float> model(o, gen);
    const auto state = model.state_dict();
    std::set<std::string> names;
    for (const auto& [name, tensor] : state) names.insert(name);
    std::set<std::string> expected = {"embed_tokens.weight", "norm.weight"};
    for (const char* layer : {"layers.0.", "layers.1."}) {
      for (const char* part : {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                               "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
                               "mlp.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight"})
        expected.insert(std::string(layer) + part);
    }
    if (!tied) expected.insert("lm_head.weight");
    CHECK(names == expected);  // no bias anywhere, no rotary table (non-persistent buffers)
    CHECK(state.at("layers.1.mlp.gate_proj.weight").shape() == Shape{24, 16});
    CHECK(state.at("layers.1.mlp.down_proj.weight").shape() == Shape{16, 24});
    const std::size_t d = o.d_model, v = o.vocab_size, h = o.hidden;
    CHECK(model.num_parameters() == v * d + d + 2 * (4 * d * d + 3 * d * h + 2 * d) + (tied ? 0 : v * d));

    // Saved and loaded into a model drawn from another seed: the same logits, bit for bit.
    testing::TempDir tmp;
    io::safetensors::save_state_dict(tmp.file("llama.safetensors"), state);
    Generator other_gen(77);
    Llama<float> other(o, other_gen);
    auto target = other.state_dict();
    io::safetensors::load_state_dict(tmp.file("llama.safetensors"), target);
    model.eval();
    other.eval();
    const xt::xarray<std::int64_t> ids = random_ids(1, 7, o.vocab_size, 3);
    CHECK(bool(model.forward(ids).data() == other.forward(ids).data()));
  }
  // Grouped-query attention's shapes: k_proj and v_proj [kv heads * head_dim, d_model], o_proj [d_model, heads *
  // head_dim].
  Llama<float> gqa(grouped(tiny()), gen);
  const auto gqa_state = gqa.state_dict();
  CHECK(gqa_state.at("layers.0.self_attn.q_proj.weight").shape() == Shape{24, 16});
  CHECK(gqa_state.at("layers.0.self_attn.k_proj.weight").shape() == Shape{12, 16});
  CHECK(gqa_state.at("layers.0.self_attn.v_proj.bias").shape() == Shape{12});
  CHECK(gqa_state.at("layers.0.self_attn.o_proj.weight").shape() == Shape{16, 24});
  CHECK(gqa_state.at("layers.0.mlp.down_proj.bias").shape() == Shape{16});
  // The train_lm default: 2 layers, d_model 128, 2,000 tokens, hidden 344 -> within 0.5% of GPT's 654,800.
  LlamaOptions standard;
  standard.vocab_size = 2000;
  Llama<float> llama(standard, gen);
  CHECK(llama.num_parameters() == 651904);
  GPTOptions gpt_options;
  gpt_options.vocab_size = 2000;
  gpt_options.positional = PositionalKind::Sinusoidal;
  GPT<float> gpt(gpt_options, gen);
  CHECK(gpt.num_parameters() == 654800);
}

TEST_CASE("Llama: a tiny language model's loss falls", "[llama]") {
  LlamaOptions o = tiny();
  o.vocab_size = kPatternVocab;
  o.max_len = kPatternLength;
  Generator gen(0);
  Llama<float> model(o, gen);
  check_learns_pattern(model);
}

TEST_CASE("Llama: errors name the problem and the values", "[llama]") {
  Generator gen(2);
  check_each_refused<Llama<float>>(
      tiny(), {{[](auto& o) { o.nhead = 3; }, "Llama: d_model (16) must be divisible by nhead (3)"},
               {[](auto& o) { o.nhead = 16; },
                "Llama: the head size d_model / nhead = 16 / 16 = 1 must be even for rotary embeddings"},
               {[](auto& o) { o.hidden = 0; }, "Llama: hidden must be positive, got 0"},
               {[](auto& o) { o.dropout = 1.0; }, "Llama: dropout must be in [0, 1), got 1"},
               {[](auto& o) { o.rope_base = 0.0; }, "Llama: rope_base must be positive, got 0"},
               {[](auto& o) { o.padding_idx = 13; }, "Llama: padding_idx 13 is outside the vocabulary of 13 tokens"},
               {[](auto& o) { o.num_kv_heads = 3; }, "Llama: nhead (4) must be divisible by num_kv_heads (3)"},
               {[](auto& o) { o.head_dim = 5; }, "Llama: head_dim (5) must be even for rotary embeddings"}});

  Llama<float> model(tiny(), gen);
  model.eval();
  check_context_refused(model, "Llama");
  CHECK_THROWS_WITH(model.forward(xt::xarray<std::int64_t>::from_shape({2, 0})),
                    "Llama.forward: ids must be [batch, length] with length >= 1, got [2, 0]");
  xt::xarray<std::int64_t> out_of_range = {{1, 2, 13}};
  CHECK_THROWS_WITH(model.forward(out_of_range), Catch::Contains("id 13") && Catch::Contains("13 embeddings"));
  Llama<float>::Cache cache;
  model.forward_incremental(random_ids(1, 39, 13, 0), cache);
  LlamaOptions three = tiny();
  three.num_layers = 3;
  Llama<float> deeper(three, gen);
  CHECK_THROWS_WITH(deeper.forward_incremental(random_ids(1, 1, 13, 0), cache),
                    "Llama.forward_incremental: the cache holds 2 layers, the model has 3");
}

TEST_CASE("Llama: activation checkpointing gives the plain gradients bit for bit, dropout on", "[llama][checkpoint]") {
  for (bool tied : {true, false}) {
    INFO("tied " << tied);
    LlamaOptions o = tiny(tied);
    o.dropout = 0.3;
    check_activation_checkpointing<Llama<double>>(o);
  }
}
