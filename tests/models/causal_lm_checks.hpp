// What every models::CausalLM must do, checked the same way for GPT and Llama: the causal property bit for
// bit, the KV cache against full recomputation, forward_rows as forward's rows, generate() choosing the same tokens
// with the cache and without, learning a tiny pattern, and activation checkpointing changing no gradient.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/models/causal_lm.hpp"
#include "tapegrad/models/generate.hpp"
#include "tapegrad/optim/adam.hpp"
#include "tests/helpers.hpp"

namespace tapegrad::testing {

// A Model of options in eval mode (no dropout), its weights drawn from Generator(seed).
template <typename Model, typename Options>
std::unique_ptr<Model> eval_model(const Options& options, std::uint64_t seed) {
  Generator gen(seed);
  auto model = std::make_unique<Model>(options, gen);
  model->eval();
  return model;
}

// Changing token t of a [2, 9] batch changes no logit before t and every position from t on.
inline void check_causal_bit_for_bit(const models::CausalLM<float>& model) {
  const std::size_t vocab = model.vocab_size();
  const xt::xarray<std::int64_t> ids = random_ids(2, 9, vocab, 2);
  const xt::xarray<float> before = model.forward(ids).data();
  for (std::size_t changed = 0; changed < ids.shape(1); ++changed) {
    xt::xarray<std::int64_t> other = ids;
    for (std::size_t b = 0; b < 2; ++b) other(b, changed) = ids(b, changed) % static_cast<std::int64_t>(vocab - 1) + 1;
    const xt::xarray<float> after = model.forward(other).data();
    for (std::size_t b = 0; b < 2; ++b) {
      for (std::size_t t = 0; t < ids.shape(1); ++t) {
        bool same = true;
        for (std::size_t v = 0; v < vocab; ++v) same = same && before(b, t, v) == after(b, t, v);
        INFO("changed position " << changed << ", row " << b << ", output position " << t);
        CHECK(same == (t < changed));
      }
    }
  }
}

// A [2, 30] batch fed as a prompt of 6 tokens in one call, then 3 at once (the shifted causal mask and
// positions at offset 6), then one by one: forward_incremental gives forward's logits within 1e-5 at every
// position, and next_token_logits on a second cache fed the same pieces gives each piece's last row.
// Model in eval mode, no grad.
template <typename T>
void check_cache_matches_full(const models::CausalLM<T>& model) {
  const std::size_t vocab = model.vocab_size();
  const xt::xarray<std::int64_t> ids = random_ids(2, 30, vocab, 5);
  const Tensor<T> full = model.forward(ids);
  typename models::CausalLM<T>::Cache cache, next_cache;
  double worst = 0.0;
  std::size_t at = 0;
  std::vector<std::size_t> chunks = {6, 3};
  chunks.resize(chunks.size() + ids.shape(1) - 9, 1);
  for (std::size_t n : chunks) {
    const xt::xarray<std::int64_t> chunk = xt::view(ids, xt::all(), xt::range(at, at + n));
    const Tensor<T> step = model.forward_incremental(chunk, cache);
    const Tensor<T> next = model.next_token_logits(chunk, next_cache);
    REQUIRE(step.shape() == Shape{2, n, vocab});
    REQUIRE(next.shape() == Shape{2, vocab});
    for (std::size_t b = 0; b < 2; ++b) {
      for (std::size_t v = 0; v < vocab; ++v) {
        for (std::size_t i = 0; i < n; ++i)
          worst = std::max(worst, std::abs(double(step.data()(b, i, v)) - double(full.data()(b, at + i, v))));
        worst = std::max(worst, std::abs(double(next.data()(b, v)) - double(full.data()(b, at + n - 1, v))));
      }
    }
    at += n;
    CHECK(cache.length() == at);
    CHECK(next_cache.length() == at);
  }
  INFO("largest difference " << worst);
  CHECK(worst <= 1e-5);
}

// A model named `name` ("GPT", "Llama") of max_len 40 and 13 tokens refuses, naming the positions or the
// batch: a forward of 41 positions; with 39 in its cache, 2 more by forward_incremental or
// next_token_logits, and ids of another batch than the cache's; and generate() asked for 3 + 38 tokens.
inline void check_context_refused(const models::CausalLM<float>& model, const std::string& name) {
  CHECK_THROWS_WITH(model.forward(random_ids(1, 41, 13, 0)),
                    name + ".forward: positions 0..40 exceed the context of max_len = 40 positions");
  models::CausalLM<float>::Cache cache;
  model.forward_incremental(random_ids(1, 39, 13, 0), cache);
  for (const char* op : {"forward_incremental", "next_token_logits"}) {
    const auto call = [&](const xt::xarray<std::int64_t>& ids) {
      return std::string(op) == "forward_incremental" ? model.forward_incremental(ids, cache)
                                                      : model.next_token_logits(ids, cache);
    };
    CHECK_THROWS_WITH(call(random_ids(1, 2, 13, 0)),
                      name + "." + op + ": positions 39..40 exceed the context of max_len = 40 positions");
    CHECK_THROWS_WITH(call(random_ids(2, 1, 13, 0)),
                      name + "." + op + ": ids have batch 2 but the cache holds batch 1");
  }
  models::GenerateOptions g;
  g.max_new_tokens = 38;
  CHECK_THROWS_WITH(models::generate(model, {1, 2, 3}, g),
                    "generate: the prompt's 3 tokens plus 38 new ones exceed the model's context of 40 positions");
}

// forward_rows(ids, rows) of a [2, 5] batch equals those rows of forward(ids), exactly.
inline void check_forward_rows(const models::CausalLM<double>& model) {
  const std::size_t vocab = model.vocab_size();
  const xt::xarray<std::int64_t> ids = random_ids(2, 5, vocab, 4);
  const xt::xarray<std::int64_t> rows = {0, 3, 7, 9};  // (0, 0), (0, 3), (1, 2), (1, 4)
  const Tensor<double> all = model.forward(ids);
  const Tensor<double> some = model.forward_rows(ids, rows);
  REQUIRE(some.shape() == Shape{4, vocab});
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const auto r = static_cast<std::size_t>(rows(k));
    for (std::size_t v = 0; v < vocab; ++v) CHECK(some.data()(k, v) == all.data()(r / 5, r % 5, v));
  }
}

// 30 tokens after a prompt, greedy and sampled (seed 17): the same with the KV cache and without.
inline void check_generate_with_and_without_cache(const models::CausalLM<float>& model) {
  const std::vector<std::int64_t> prompt = {3, 7, 2, 9};
  for (double temperature : {0.0, 1.0}) {
    INFO("temperature " << temperature);
    models::GenerateOptions g;
    g.sampling.temperature = temperature;
    g.max_new_tokens = 30;
    g.seed = 17;
    const auto cached = models::generate(model, prompt, g);
    g.use_cache = false;
    const auto recomputed = models::generate(model, prompt, g);
    CHECK(cached.size() == 30);
    CHECK(cached == recomputed);
  }
}

// The pattern a model of kPatternVocab tokens and a context of kPatternLength learns in
// check_learns_pattern.
constexpr std::size_t kPatternVocab = 7, kPatternLength = 16;

// 60 Adam steps (lr 1e-2) on 8 rows of a repeating pattern with a long period, predictable from the
// context, not from the last token alone: the loss falls from above 1.5 to below 0.5 (the first
// positions of a row cannot be told apart: the optimum is above 0). Model: a CausalLM and a Module.
template <typename Model>
void check_learns_pattern(Model& model) {
  const std::vector<std::int64_t> pattern = {1, 2, 3, 1, 4, 5, 2, 3, 6, 1, 5, 4};
  const std::size_t rows = 8, length = kPatternLength;
  xt::xarray<std::int64_t> ids = xt::xarray<std::int64_t>::from_shape({rows, length + 1});
  for (std::size_t b = 0; b < rows; ++b)
    for (std::size_t t = 0; t <= length; ++t) ids(b, t) = pattern[(b + t) % pattern.size()];
  const xt::xarray<std::int64_t> input = xt::view(ids, xt::all(), xt::range(0, length));
  const xt::xarray<std::int64_t> target = xt::flatten(xt::eval(xt::view(ids, xt::all(), xt::range(1, length + 1))));
  optim::AdamOptions adam;
  adam.lr = 1e-2;
  optim::Adam<float> opt(model.parameters(), adam);
  const auto loss_now = [&] {
    return cross_entropy(reshape(model.forward(input), {-1, static_cast<std::int64_t>(kPatternVocab)}), target);
  };
  const float first = loss_now().item();
  for (int step = 0; step < 60; ++step) {
    opt.zero_grad();
    Tensor<float> loss = loss_now();
    loss.backward();
    opt.step();
  }
  const float last = loss_now().item();
  INFO("loss " << first << " -> " << last);
  CHECK(first > 1.5f);
  CHECK(last < 0.5f);
}

// Two training steps of a model built with `options` and of the same model with activation checkpointing,
// dropout on: every gradient (through forward and through forward_rows) and the dropout generator's state
// equal bit for bit.
template <typename Model, typename Options>
void check_activation_checkpointing(Options options) {
  options.activation_checkpointing = false;
  Generator gen_plain(4);
  Model plain(options, gen_plain);
  options.activation_checkpointing = true;
  Generator gen_checkpointed(4);
  Model checkpointed(options, gen_checkpointed);
  const xt::xarray<std::int64_t> ids = random_ids(3, 7, options.vocab_size, 5);
  const xt::xarray<std::int64_t> rows = {0, 4, 9, 20};
  for (int step = 0; step < 2; ++step) {
    INFO("step " << step);
    check_same_step(plain, checkpointed, [&](const Model& model) {
      const Tensor<double> logits = step == 0 ? model.forward(ids) : model.forward_rows(ids, rows);
      return (logits * logits).mean();
    });
    CHECK(plain.dropout_generator()->state().s == checkpointed.dropout_generator()->state().s);
  }
}

}  // namespace tapegrad::testing
