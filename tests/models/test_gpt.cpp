// The language models: GPT's causal property, its KV cache against full recomputation, sampling
// (seeds, top-k, top-p), gradients, a tiny training run; the masked-token encoder's names and gradients.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/models/classifier.hpp"
#include "tapegrad/models/generate.hpp"
#include "tapegrad/models/gpt.hpp"
#include "tapegrad/models/masked_lm.hpp"
#include "tapegrad/optim/adam.hpp"
#include "tests/helpers.hpp"
#include "tests/models/causal_lm_checks.hpp"
#include "tests/models/refusals.hpp"

using namespace tapegrad;
using namespace tapegrad::models;
using namespace tapegrad::testing;

namespace {

GPTOptions tiny(PositionalKind positional = PositionalKind::Learned) {
  auto o = sized<GPTOptions>(13, 40, 8, 2, 2);
  o.dim_feedforward = 12;
  o.positional = positional;
  return o;
}

// The model of the KV cache's tests: tiny, with 4 heads of 8 and a feed-forward of 64.
GPTOptions cached(PositionalKind positional) {
  GPTOptions o = tiny(positional);
  o.d_model = 32;
  o.nhead = 4;
  o.dim_feedforward = 64;
  return o;
}

// Row t of logits [1, L, V].
template <typename T>
std::vector<T> row(const Tensor<T>& logits, std::size_t t) {
  const std::size_t v = logits.size(2);
  const T* p = logits.data().data() + t * v;
  return std::vector<T>(p, p + v);
}

}  // namespace

TEST_CASE("GPT: changing token t changes no output before t, bit for bit", "[gpt]") {
  for (PositionalKind positional : {PositionalKind::Learned, PositionalKind::Sinusoidal}) {
    INFO("positions " << positional_name(positional));
    GPTOptions o = tiny(positional);
    o.d_model = 16;
    o.nhead = 4;
    check_causal_bit_for_bit(*eval_model<GPT<float>>(o, 1));
  }
}

TEMPLATE_TEST_CASE("GPT: the KV cache gives the logits of full recomputation at every step", "[gpt]", float, double) {
  for (PositionalKind positional : {PositionalKind::Learned, PositionalKind::Sinusoidal}) {
    INFO("positions " << positional_name(positional));
    NoGradGuard no_grad;
    check_cache_matches_full(*eval_model<GPT<TestType>>(cached(positional), 4));
  }
}

TEST_CASE("greedy decoding: with the KV cache, every step's logits are full recomputation's within 1e-5", "[gpt]") {
  // The loop of generate() spelled out, both ways at once: the cache fed one token per step against a
  // forward over the whole sequence so far; the same greedy token must follow from both.
  for (PositionalKind positional : {PositionalKind::Learned, PositionalKind::Sinusoidal}) {
    INFO("positions " << positional_name(positional));
    Generator gen(12);
    const GPTOptions o = cached(positional);
    GPT<float> model(o, gen);
    model.eval();
    NoGradGuard no_grad;
    std::vector<std::int64_t> sequence = {4, 9, 1, 7, 7};
    GPT<float>::Cache cache, next_cache;  // forward_incremental's, and next_token_logits'
    const auto as_ids = [](const std::int64_t* first, std::size_t n) {
      xt::xarray<std::int64_t> ids = xt::xarray<std::int64_t>::from_shape({std::size_t{1}, n});
      std::copy(first, first + n, ids.data());
      return ids;
    };
    double worst = 0.0;
    while (sequence.size() < o.max_len) {
      const std::size_t done = cache.length();
      const Tensor<float> step =
          model.forward_incremental(as_ids(sequence.data() + done, sequence.size() - done), cache);
      const Tensor<float> next =
          model.next_token_logits(as_ids(sequence.data() + done, sequence.size() - done), next_cache);
      REQUIRE(next.shape() == Shape{1, o.vocab_size});
      const Tensor<float> full = model.forward(as_ids(sequence.data(), sequence.size()));
      const std::vector<float> cached = row(step, step.size(1) - 1), recomputed = row(full, sequence.size() - 1);
      for (std::size_t v = 0; v < o.vocab_size; ++v) {
        worst = std::max(worst, double(std::abs(cached[v] - recomputed[v])));
        worst = std::max(worst, double(std::abs(next.data()(0, v) - recomputed[v])));
      }
      const auto argmax = [](const std::vector<float>& l) {
        return static_cast<std::int64_t>(std::max_element(l.begin(), l.end()) - l.begin());
      };
      INFO("step " << sequence.size());
      REQUIRE(argmax(cached) == argmax(recomputed));
      sequence.push_back(argmax(cached));
    }
    INFO("largest difference " << worst);
    CHECK(worst <= 1e-5);
    // generate() makes the same choices, with the cache and without.
    GenerateOptions g;
    g.sampling.temperature = 0.0;
    g.max_new_tokens = o.max_len - 5;
    const std::vector<std::int64_t> expected(sequence.begin() + 5, sequence.end());
    CHECK(generate(model, {4, 9, 1, 7, 7}, g) == expected);
    g.use_cache = false;
    CHECK(generate(model, {4, 9, 1, 7, 7}, g) == expected);
  }
}

TEST_CASE("generate: the cache and full recomputation choose the same tokens, greedy and sampled", "[gpt]") {
  GPTOptions o = tiny();
  o.d_model = 32;
  o.nhead = 4;
  check_generate_with_and_without_cache(*eval_model<GPT<float>>(o, 6));
}

TEST_CASE("generate: the same seed gives the same sample, other seeds other samples", "[gpt]") {
  const auto owned = eval_model<GPT<float>>(tiny(), 8);
  const GPT<float>& model = *owned;
  GenerateOptions g;
  g.max_new_tokens = 25;
  g.sampling.temperature = 1.5;
  g.seed = 1;
  const auto a = generate(model, {1, 2}, g), b = generate(model, {1, 2}, g);
  CHECK(a == b);
  std::set<std::vector<std::int64_t>> others;
  for (std::uint64_t seed = 2; seed < 6; ++seed) {
    g.seed = seed;
    others.insert(generate(model, {1, 2}, g));
  }
  others.insert(a);
  CHECK(others.size() > 1);
  // Greedy draws nothing: every seed gives the same tokens.
  g.sampling.temperature = 0.0;
  g.seed = 1;
  const auto greedy = generate(model, {1, 2}, g);
  g.seed = 99;
  CHECK(generate(model, {1, 2}, g) == greedy);
  // on_token sees each new token as it is chosen, stop_token ends the text.
  std::vector<std::int64_t> seen;
  g.stop_token = greedy[3];
  const auto stopped = generate<float>(model, {1, 2}, g, [&](std::int64_t id) { seen.push_back(id); });
  CHECK(seen == stopped);
  CHECK(stopped.size() <= 4);
  CHECK(stopped.back() == greedy[3]);
}

TEST_CASE("sampling: top-k and top-p never emit a token outside the allowed set", "[gpt]") {
  Generator data(3);
  const std::size_t vocab = 50;
  std::vector<float> logits(vocab);
  for (auto& l : logits) l = static_cast<float>(3.0 * data.normal());
  logits[7] = logits[8];  // a tie, to exercise the lower-id-first rule
  std::vector<std::size_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  for (std::size_t top_k : {0, 1, 5, 20}) {
    for (double top_p : {1.0, 0.9, 0.5, 0.05}) {
      for (double temperature : {0.7, 1.0, 2.0}) {
        INFO("top_k " << top_k << ", top_p " << top_p << ", temperature " << temperature);
        SamplingOptions s;
        s.top_k = top_k;
        s.top_p = top_p;
        s.temperature = temperature;
        const auto allowed = allowed_tokens(logits.data(), vocab, s);
        // By hand: the k best, then the most probable prefix reaching top_p.
        const std::size_t k = top_k == 0 ? vocab : top_k;
        std::vector<double> w;
        double total = 0.0;
        for (std::size_t i = 0; i < k; ++i) {
          w.push_back(std::exp((logits[order[i]] - logits[order[0]]) / temperature));
          total += w.back();
        }
        std::size_t keep = 0;
        double mass = 0.0;
        while (keep < k && mass < top_p * total) mass += w[keep++];
        std::vector<std::int64_t> expected(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep));
        std::sort(expected.begin(), expected.end());
        CHECK(allowed == expected);
        if (top_k > 0) CHECK(allowed.size() <= top_k);
        const std::set<std::int64_t> ok(allowed.begin(), allowed.end());
        Generator gen(11);
        std::set<std::int64_t> drawn;
        for (int i = 0; i < 2000; ++i) drawn.insert(sample_token(logits.data(), vocab, s, gen));
        for (std::int64_t id : drawn) CHECK(ok.count(id) == 1);
        if (allowed.size() <= 5) CHECK(drawn.size() == allowed.size());  // and every allowed one appears
      }
    }
  }
  SamplingOptions greedy;
  greedy.temperature = 0.0;
  CHECK(allowed_tokens(logits.data(), vocab, greedy) == std::vector<std::int64_t>{std::int64_t(order[0])});
}

TEST_CASE("sampling: draws follow softmax(logits / temperature)", "[gpt]") {
  const std::vector<double> logits = {0.0, std::log(2.0), std::log(3.0), std::log(4.0)};
  SamplingOptions s;
  Generator gen(5);
  std::map<std::int64_t, int> counts;
  const int n = 40000;
  for (int i = 0; i < n; ++i) ++counts[sample_token(logits.data(), 4, s, gen)];
  for (int id = 0; id < 4; ++id) CHECK(std::abs(counts[id] / double(n) - (id + 1) / 10.0) < 0.01);
  s.temperature = 0.5;  // squares the odds: 1 : 4 : 9 : 16
  counts.clear();
  for (int i = 0; i < n; ++i) ++counts[sample_token(logits.data(), 4, s, gen)];
  for (int id = 0; id < 4; ++id) CHECK(std::abs(counts[id] / double(n) - (id + 1) * (id + 1) / 30.0) < 0.01);
}

// GPT-2's computation: unscaled embeddings, no padding row, no output bias, GELU's tanh form, its own lm_head.
GPTOptions gpt2_like(GPTOptions o) {
  o.scale_embeddings = false;
  o.padding_idx = std::nullopt;
  o.output_bias = false;
  o.activation = nn::Activation::GELUTanh;
  o.tie_embeddings = false;
  return o;
}

TEST_CASE("GPT: GPT-2's settings: untied lm_head, no output bias, unscaled embeddings, gradcheck and the cache",
          "[gpt]") {
  GPTOptions o = gpt2_like(tiny());
  o.d_model = 16;
  o.nhead = 4;
  Generator gen(5);
  GPT<double> model(o, gen);
  const auto state = model.state_dict();
  CHECK(state.count("lm_head.weight") == 1);
  CHECK(state.at("lm_head.weight").shape() == Shape{13, 16});
  CHECK(state.count("output_bias") == 0);
  // Unscaled: the logits are the final norm's output times lm_head, whatever the embedding's scale.
  model.eval();
  const xt::xarray<std::int64_t> ids = random_ids(2, 12, o.vocab_size, 3);
  const Tensor<double> full = model.forward(ids);
  {
    NoGradGuard no_grad;
    Tensor<double> x = model.embedding->forward(ids);
    x = model.learned->forward(x, 0);
    const Tensor<double> h = model.encoder->forward(x, {}, {}, /*is_causal=*/true);
    const Tensor<double> by_hand = linear(h, model.lm_head->weight);
    CHECK(xt::allclose(by_hand.data(), full.data(), 1e-12, 1e-12));
  }
  typename GPT<double>::Cache cache;
  const Tensor<double> first = model.forward_incremental(xt::view(ids, xt::all(), xt::range(0, 5)), cache);
  const Tensor<double> rest = model.forward_incremental(xt::view(ids, xt::all(), xt::range(5, 12)), cache);
  CHECK(xt::allclose(first.data(), xt::view(full.data(), xt::all(), xt::range(0, 5), xt::all()), 1e-9, 1e-9));
  CHECK(xt::allclose(rest.data(), xt::view(full.data(), xt::all(), xt::range(5, 12), xt::all()), 1e-9, 1e-9));

  GPTOptions small = gpt2_like(tiny());
  small.vocab_size = 7;
  small.max_len = 6;
  small.d_model = 4;
  small.dim_feedforward = 6;
  small.dropout = small.attention_dropout = 0.0;
  GPT<double> checked(small, gen);
  const xt::xarray<std::int64_t> few = {{0, 5, 1, 6, 2}, {4, 6, 2, 0, 3}};  // id 0 is a token like any other
  auto f = [&](const std::vector<Tensor<double>>&) { return checked.forward(few); };
  CHECK_GRADCHECK(f, checked.parameters());
}

TEST_CASE("GPT: gradcheck of a 2-layer decoder-only model, learned and sinusoidal positions", "[gpt]") {
  for (PositionalKind positional : {PositionalKind::Learned, PositionalKind::Sinusoidal}) {
    INFO("positions " << positional_name(positional));
    auto o = sized<GPTOptions>(7, 6, 4, 2, 2);
    o.dim_feedforward = 6;
    o.dropout = o.attention_dropout = 0.0;
    o.positional = positional;
    Generator gen(9);
    GPT<double> model(o, gen);
    const xt::xarray<std::int64_t> ids = {{3, 5, 1, 6, 2}, {4, 6, 2, 3, 3}};  // no padding id: see test_transformer
    auto f = [&](const std::vector<Tensor<double>>&) { return model.forward(ids); };
    CHECK_GRADCHECK(f, model.parameters());
  }
}

TEST_CASE("GPT: a tiny language model's loss falls", "[gpt]") {
  GPTOptions o = tiny();
  o.vocab_size = kPatternVocab;
  o.d_model = 16;
  o.max_len = kPatternLength;
  o.dropout = 0.0;
  o.attention_dropout = 0.0;
  Generator gen(0);
  GPT<float> model(o, gen);
  check_learns_pattern(model);
}

TEST_CASE("GPT: layout, names and errors", "[gpt]") {
  Generator gen(2);
  GPT<float> model(tiny(), gen);
  const auto state = model.state_dict();
  for (const char* name : {"embedding.weight", "pos_encoding.weight", "encoder.layers.1.self_attn.in_proj_weight",
                           "encoder.layers.1.linear2.bias", "encoder.norm.weight", "output_bias"}) {
    INFO(name);
    CHECK(state.count(name) == 1);
  }
  CHECK(state.count("output_projection.weight") == 0);  // tied to embedding.weight
  check_refused<GPT<float>>(
      tiny(), [](auto& o) { o.nhead = 3; }, "GPT: d_model (8) must be divisible by nhead (3)");
  check_refused<GPT<float>>(
      tiny(), [](auto& o) { o.dropout = 1.0; }, "GPT: dropout must be in [0, 1), got 1");
  check_refused<GPT<float>>(
      tiny(), [](auto& o) { o.embedding_dropout = -0.5; }, "GPT: embedding_dropout must be in [0, 1), got -0.5");
  model.eval();
  check_context_refused(model, "GPT");
  GenerateOptions g;
  g.max_new_tokens = 38;
  CHECK_THROWS_WITH(generate(model, {}, g), "generate: the prompt has no tokens");
  g.max_new_tokens = 2;
  g.sampling.top_p = 0.0;
  CHECK_THROWS_WITH(generate(model, {1}, g), "top_p must be in (0, 1], got 0");
}

TEST_CASE("TransformerMaskedLM: the encoder's names and shapes are the classifier's", "[mlm]") {
  for (bool norm_first : {false, true}) {
    for (PositionalKind positional : {PositionalKind::Sinusoidal, PositionalKind::Learned}) {
      INFO("norm_first " << norm_first << ", positions " << positional_name(positional));
      auto o = sized<TransformerClassifierOptions>(20, 12, 8, 2, 2);
      o.dim_feedforward = 10;
      o.norm_first = norm_first;
      o.positional = positional;
      Generator gen(1);
      TransformerMaskedLM<float> mlm(o, gen);
      TransformerClassifier<float> classifier(o, gen);
      const auto from = mlm.state_dict();
      std::size_t shared = 0;
      for (const auto& [name, tensor] : classifier.state_dict()) {
        if (name.rfind("classifier.", 0) == 0) continue;
        INFO(name);
        REQUIRE(from.count(name) == 1);
        CHECK(from.at(name).shape() == tensor.shape());
        ++shared;
      }
      CHECK(shared == classifier.state_dict().size() - 2);  // all but the head's weight and bias
    }
  }
}

TEST_CASE("TransformerMaskedLM: gradcheck, and the loss only sees the chosen positions", "[mlm]") {
  auto o = sized<TransformerClassifierOptions>(9, 6, 4, 2, 2);
  o.dim_feedforward = 6;
  o.dropout = o.attention_dropout = 0.0;
  for (bool norm_first : {false, true}) {
    INFO("norm_first " << norm_first);
    o.norm_first = norm_first;
    Generator gen(3);
    TransformerMaskedLM<double> model(o, gen);
    const xt::xarray<std::int64_t> ids = {{3, 8, 5, 2}, {4, 8, 6, 6}};
    const BoolArray pad = {{false, false, false, false}, {false, false, true, true}};
    const xt::xarray<std::int64_t> targets = {{-100, 7, -100, 2}, {-100, 5, -100, -100}};
    auto [logits, wanted] = model.predict(ids, pad, targets);
    CHECK(logits.shape() == Shape{3, 9});
    CHECK(bool(wanted == xt::xarray<std::int64_t>{7, 2, 5}));
    auto f = [&](const std::vector<Tensor<double>>&) { return model.loss(ids, pad, targets); };
    CHECK_GRADCHECK(f, model.parameters());
  }
}

TEST_CASE("load_pretrained_encoder: exactly the pretrained values, a fresh head, every mismatch reported", "[mlm]") {
  auto o = sized<TransformerClassifierOptions>(20, 12, 8, 2, 2);
  o.dim_feedforward = 10;
  o.positional = PositionalKind::Learned;
  testing::TempDir tmp;
  Generator gen(1);
  TransformerMaskedLM<float> mlm(o, gen);
  io::safetensors::save_state_dict(tmp.file("mlm.safetensors"), mlm.state_dict());
  TransformerClassifier<float> classifier(o, gen);
  const xt::xarray<float> head_before = classifier.classifier->weight.data();
  const auto loaded = load_pretrained_encoder(classifier, io::safetensors::File(tmp.file("mlm.safetensors")));
  const auto pretrained = mlm.state_dict();
  std::size_t compared = 0;
  for (const auto& [name, tensor] : classifier.state_dict()) {
    INFO(name);
    if (name.rfind("classifier.", 0) == 0) continue;
    CHECK(bool(tensor.data() == pretrained.at(name).data()));
    ++compared;
  }
  CHECK(loaded.size() == compared);
  CHECK(bool(classifier.classifier->weight.data() == head_before));

  // A classifier with hashed n-gram embeddings (narrower rows, projected) loads the same tensors; its
  // n-gram table and projection stay fresh.
  TransformerClassifierOptions with_ngrams = o;
  with_ngrams.ngram_buckets = 31;
  with_ngrams.ngram_dim = 2;
  TransformerClassifier<float> ngram_classifier(with_ngrams, gen);
  const xt::xarray<float> ngrams_before = ngram_classifier.ngrams->weight.data();
  const xt::xarray<float> proj_before = ngram_classifier.ngram_proj->weight.data();
  CHECK(load_pretrained_encoder(ngram_classifier, io::safetensors::File(tmp.file("mlm.safetensors"))) == loaded);
  CHECK(bool(ngram_classifier.ngrams->weight.data() == ngrams_before));
  CHECK(bool(ngram_classifier.ngram_proj->weight.data() == proj_before));
  CHECK(bool(ngram_classifier.embedding->weight.data() == pretrained.at("embedding.weight").data()));

  // Wider, post-LN vs pre-LN, sinusoidal vs learned: each difference is named, nothing changes.
  TransformerClassifierOptions other = o;
  other.d_model = 4;
  other.norm_first = true;
  TransformerMaskedLM<float> wrong(other, gen);
  io::safetensors::save_state_dict(tmp.file("wrong.safetensors"), wrong.state_dict());
  const xt::xarray<float> embedding_before = classifier.embedding->weight.data();
  try {
    load_pretrained_encoder(classifier, io::safetensors::File(tmp.file("wrong.safetensors")));
    FAIL("no error");
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    INFO(message);
    CHECK_THAT(message, Catch::Contains("wrong.safetensors"));
    CHECK_THAT(message, Catch::Contains("embedding.weight is [20, 4] in the file but [20, 8] in the classifier"));
    CHECK_THAT(message, Catch::Contains("encoder.layers.1.linear2.weight is [4, 10] in the file but [8, 10]"));
    CHECK_THAT(message, Catch::Contains("unexpected encoder.norm.weight [4]"));
  }
  CHECK(bool(classifier.embedding->weight.data() == embedding_before));
  other = o;
  other.positional = PositionalKind::Sinusoidal;
  TransformerMaskedLM<float> sinusoidal(other, gen);
  io::safetensors::save_state_dict(tmp.file("sin.safetensors"), sinusoidal.state_dict());
  CHECK_THROWS_WITH(load_pretrained_encoder(classifier, io::safetensors::File(tmp.file("sin.safetensors"))),
                    Catch::Contains("missing pos_encoding.weight [12, 8]"));
}

TEST_CASE("GPT: forward_rows gives forward's rows and their gradient", "[gpt]") {
  const GPTOptions o = tiny();
  const auto owned = eval_model<GPT<double>>(o, 3);
  GPT<double>& model = *owned;
  check_forward_rows(model);
  const xt::xarray<std::int64_t> ids = random_ids(2, 5, o.vocab_size, 4);
  const xt::xarray<std::int64_t> rows = {0, 3, 7, 9};  // (0, 0), (0, 3), (1, 2), (1, 4)
  const Tensor<double> all = model.forward(ids);
  const Tensor<double> some = model.forward_rows(ids, rows);
  // The gradient reaches the parameters as through forward: the same loss, the same gradients.
  const xt::xarray<std::int64_t> targets = {1, 2, 3, 4};
  cross_entropy(some, targets).backward();
  const xt::xarray<double> via_rows = model.embedding->weight.grad();
  model.zero_grad();
  const Tensor<double> picked = embedding(reshape(all, {-1, static_cast<std::int64_t>(o.vocab_size)}), rows);
  cross_entropy(picked, targets).backward();
  CHECK(xt::allclose(via_rows, model.embedding->weight.grad(), 1e-12, 1e-14));
  CHECK_THROWS_AS(model.forward_rows(ids, xt::xarray<std::int64_t>{10}), ShapeError);
}

TEST_CASE("GPT: activation checkpointing gives the plain gradients bit for bit, dropout on", "[gpt][checkpoint]") {
  GPTOptions o = tiny();
  o.dropout = 0.3;
  o.attention_dropout = 0.2;
  check_activation_checkpointing<GPT<double>>(o);
}
