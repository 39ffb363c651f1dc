// The encoder-decoder Transformer, its decoding, and the numbers translation task: the causal and
// padding masks, gradients, greedy vs beam search, the data generator's wording and splits, and a
// smoke training run.
#include <catch2/catch.hpp>
#include <set>
#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/datasets/numbers/numbers.hpp"
#include "tapegrad/models/seq2seq_search.hpp"
#include "tapegrad/models/transformer.hpp"
#include "tapegrad/optim/adam.hpp"
#include "tests/helpers.hpp"
#include "tests/models/refusals.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::models;

namespace {

TransformerOptions tiny(bool norm_first, bool tie_output) {
  TransformerOptions o;
  o.src_vocab_size = 9;
  o.tgt_vocab_size = 7;
  o.d_model = 4;
  o.nhead = 2;
  o.num_encoder_layers = 2;
  o.num_decoder_layers = 2;
  o.dim_feedforward = 6;
  o.dropout = 0.0;
  o.max_len = 16;
  o.norm_first = norm_first;
  o.tie_output = tie_output;
  return o;
}

// Two sources: 4 real tokens, and 2 real tokens then padding; targets of 5 tokens starting with bos.
const xt::xarray<std::int64_t> kSrc = {{3, 5, 7, 2}, {4, 8, 0, 0}};
const BoolArray kSrcPad = {{false, false, false, false}, {false, false, true, true}};
const xt::xarray<std::int64_t> kTgt = {{1, 3, 4, 6, 5}, {1, 6, 2, 0, 0}};
const BoolArray kTgtPad = {{false, false, false, false, false}, {false, false, false, true, true}};

}  // namespace

TEST_CASE("Transformer: the causal mask hides later target tokens bit for bit", "[translate]") {
  for (bool norm_first : {false, true}) {
    INFO("norm_first " << norm_first);
    Generator gen(11);
    TransformerOptions o = tiny(norm_first, false);
    o.d_model = 8;
    o.dropout = 0.1;
    Transformer<float> model(o, gen);
    model.eval();
    const xt::xarray<float> before = model.forward(kSrc, kTgt, kSrcPad).data();
    for (std::size_t changed = 1; changed < kTgt.shape(1); ++changed) {
      xt::xarray<std::int64_t> tgt = kTgt;
      tgt(0, changed) = tgt(0, changed) == 3 ? 4 : 3;
      tgt(1, changed) = tgt(1, changed) == 3 ? 4 : 3;
      const xt::xarray<float> after = model.forward(kSrc, tgt, kSrcPad).data();
      const std::size_t vocab = before.shape(2);
      for (std::size_t b = 0; b < 2; ++b) {
        for (std::size_t t = 0; t < kTgt.shape(1); ++t) {
          bool same = true;
          for (std::size_t v = 0; v < vocab; ++v) same = same && before(b, t, v) == after(b, t, v);
          INFO("changed position " << changed << ", row " << b << ", output position " << t);
          CHECK(same == (t < changed));  // earlier outputs identical, the changed one differs
        }
      }
    }
  }
}

TEST_CASE("Transformer: source padding changes nothing for the real tokens", "[translate]") {
  for (bool norm_first : {false, true}) {
    INFO("norm_first " << norm_first);
    Generator gen(5);
    Transformer<double> model(tiny(norm_first, true), gen);
    const xt::xarray<std::int64_t> src = {{3, 5, 7}};
    const xt::xarray<std::int64_t> tgt = {{1, 3, 4}};
    const BoolArray none = {{false, false, false}};
    const xt::xarray<double> memory = model.encode(src, none).data();
    const xt::xarray<double> logits = model.forward(src, tgt, none).data();
    // The same source with padding appended, holding arbitrary tokens that the mask must hide.
    const xt::xarray<std::int64_t> padded = {{3, 5, 7, 8, 0, 2}};
    const BoolArray pad = {{false, false, false, true, true, true}};
    const xt::xarray<double> padded_memory = model.encode(padded, pad).data();
    CHECK(testing::allclose<double>(xt::view(padded_memory, xt::all(), xt::range(0, 3)), memory, 1e-12, 1e-12));
    CHECK(testing::allclose<double>(model.forward(padded, tgt, pad).data(), logits, 1e-12, 1e-12));
    // Without the mask the extra tokens are seen: the check above can fail.
    CHECK_FALSE(testing::allclose<double>(model.forward(padded, tgt, {}).data(), logits, 1e-6, 1e-6));
  }
}

TEST_CASE("Transformer: gradcheck of a 2-layer encoder-decoder, post-LN and pre-LN, tied and untied", "[translate]") {
  for (bool norm_first : {false, true}) {
    for (bool tie : {false, true}) {
      INFO("norm_first " << norm_first << ", tie_output " << tie);
      Generator gen(7);
      Transformer<double> model(tiny(norm_first, tie), gen);
      // Padded positions hold real tokens here: the padding_idx row of an embedding deliberately gets
      // no gradient from lookups (as torch), which finite differences would see.
      const xt::xarray<std::int64_t> src = {{3, 5, 7, 2}, {4, 8, 6, 6}};
      const xt::xarray<std::int64_t> tgt = {{1, 3, 4, 6, 5}, {1, 6, 2, 3, 3}};
      auto f = [&](const std::vector<Tensor<double>>&) { return model.forward(src, tgt, kSrcPad, kTgtPad); };
      CHECK_GRADCHECK(f, model.parameters());
    }
  }
}

TEST_CASE("Transformer: activation checkpointing gives the plain gradients bit for bit, padding and dropout on",
          "[translate][checkpoint]") {
  for (bool norm_first : {false, true}) {
    INFO("norm_first " << norm_first);
    TransformerOptions o = tiny(norm_first, false);
    o.dropout = 0.3;
    Generator gen_plain(5), gen_checkpointed(5);
    Transformer<double> plain(o, gen_plain);
    o.activation_checkpointing = true;
    Transformer<double> checkpointed(o, gen_checkpointed);
    REQUIRE(checkpointed.encoder->activation_checkpointing);
    REQUIRE(checkpointed.decoder->activation_checkpointing);
    // Every parameter has a gradient, the encoder's too: the cross-attention's checkpoints pass memory's.
    for (int step = 0; step < 2; ++step) {
      testing::check_same_step(plain, checkpointed, [](const Transformer<double>& model) {
        return model.forward(kSrc, kTgt, kSrcPad, kTgtPad).pow(2).sum();
      });
    }
  }
}

TEST_CASE("Transformer: layout, names and option errors", "[translate]") {
  Generator gen(1);
  Transformer<float> tied(tiny(false, true), gen);
  Transformer<float> untied(tiny(false, false), gen);
  const auto names = [](const Transformer<float>& m) {
    std::set<std::string> s;
    for (const auto& [name, t] : m.named_parameters()) s.insert(name);
    return s;
  };
  CHECK(names(untied).count("encoder.layers.1.self_attn.in_proj_weight"));
  CHECK(names(untied).count("decoder.layers.0.multihead_attn.in_proj_weight"));
  CHECK(names(untied).count("decoder.norm.weight"));
  CHECK(names(untied).count("output_projection.weight"));
  CHECK(names(tied).count("output_bias"));
  CHECK_FALSE(names(tied).count("output_projection.weight"));
  CHECK(untied.num_parameters() - tied.num_parameters() == 4 * 7);  // the untied weight [7, 4]
  CHECK(tied.forward(kSrc, kTgt, kSrcPad).shape() == Shape{2, 5, 7});

  testing::check_refused<Transformer<float>>(
      tiny(false, false), [](auto& o) { o.nhead = 3; }, Catch::Contains("d_model (4) must be divisible by nhead (3)"));
  testing::check_refused<Transformer<float>>(
      tiny(false, false), [](auto& o) { o.padding_idx = 8; },
      Catch::Contains("padding_idx 8 is outside tgt_vocab_size = 7"));
  CHECK_THROWS_AS(tied.encode(xt::xarray<std::int64_t>{1, 2}, {}), ShapeError);
  CHECK_THROWS_WITH(tied.encode(kSrc, BoolArray{{false, false}}), Catch::Contains("padding mask of src is [1, 2]"));
}

TEST_CASE("Transformer: cross-attention maps are distributions over the real source tokens", "[translate]") {
  Generator gen(3);
  Transformer<double> model(tiny(false, false), gen);
  model.eval();
  const auto maps = model.cross_attention(kTgt, model.encode(kSrc, kSrcPad), kSrcPad);
  REQUIRE(maps.size() == 2);
  for (const auto& m : maps) {
    REQUIRE(m.shape(0) == 2);
    REQUIRE(m.shape(1) == 5);
    REQUIRE(m.shape(2) == 4);
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t t = 0; t < 5; ++t) {
        double total = 0;
        for (std::size_t s = 0; s < 4; ++s) total += m(b, t, s);
        CHECK(total == Approx(1.0).epsilon(1e-12));
        if (b == 1) CHECK(m(b, t, 2) + m(b, t, 3) == 0.0);
      }
  }
}

TEST_CASE("greedy_decode equals beam_search with beam 1", "[translate]") {
  for (std::uint64_t seed : {1, 2, 3, 4}) {
    INFO("seed " << seed);
    Generator gen(seed);
    TransformerOptions o = tiny(seed % 2 == 0, seed > 2);
    o.d_model = 8;
    Transformer<float> model(o, gen);
    model.eval();
    if (!o.tie_output) model.output_projection->bias.mutable_data()(2) += 1.0f;  // some hypotheses end early
    SearchOptions search;
    search.bos = 1;
    search.eos = 2;
    search.max_len = 9;
    const auto greedy = greedy_decode(model, kSrc, kSrcPad, search);
    const auto beam = beam_search(model, kSrc, kSrcPad, search);
    CHECK(greedy == beam);
    CHECK(greedy.size() == 2);
    search.beam_size = 3;
    for (const auto& out : beam_search(model, kSrc, kSrcPad, search)) CHECK(out.size() <= 9);
  }
  Generator gen(1);
  Transformer<float> model(tiny(false, false), gen);
  SearchOptions zero;
  zero.beam_size = 0;
  CHECK_THROWS_WITH(beam_search(model, kSrc, kSrcPad, zero), Catch::Contains("beam_size must be positive"));
}

TEST_CASE("beam_search finds a sequence at least as likely as greedy's", "[translate]") {
  // Score a decoded sequence (with its eos when it has one) by the model's log-probabilities.
  Generator gen(9);
  TransformerOptions o = tiny(false, false);
  o.d_model = 8;
  Transformer<double> model(o, gen);
  model.eval();
  model.output_projection->bias.mutable_data()(2) += 1.0;
  SearchOptions search;
  search.max_len = 6;
  const auto score = [&](std::size_t row, const std::vector<std::int64_t>& out) {
    std::vector<std::int64_t> tokens = out;
    if (tokens.size() < search.max_len) tokens.push_back(search.eos);
    xt::xarray<std::int64_t> tgt = xt::xarray<std::int64_t>::from_shape({std::size_t{1}, tokens.size()});
    tgt(0, 0) = search.bos;
    for (std::size_t i = 0; i + 1 < tokens.size(); ++i) tgt(0, i + 1) = tokens[i];
    const xt::xarray<std::int64_t> src = xt::view(kSrc, xt::range(row, row + 1));
    const BoolArray pad = xt::view(kSrcPad, xt::range(row, row + 1));
    const xt::xarray<double> lp = log_softmax(model.forward(src, tgt, pad), -1).data();
    double total = 0;
    for (std::size_t i = 0; i < tokens.size(); ++i) total += lp(0, i, tokens[i]);
    return total;
  };
  const auto greedy = greedy_decode(model, kSrc, kSrcPad, search);
  search.beam_size = 4;
  const auto beam = beam_search(model, kSrc, kSrcPad, search);
  for (std::size_t row = 0; row < 2; ++row) CHECK(score(row, beam[row]) >= score(row, greedy[row]) - 1e-9);
}

TEST_CASE("Transformer: a smoke training on a tiny set lowers the loss", "[translate]") {
  using namespace datasets;
  const auto data = make_numbers_dataset(32, 0, 0, 3);
  std::vector<std::vector<std::int64_t>> src, tgt;
  std::size_t s_len = 0, t_len = 0;
  for (auto v : data.train) {
    src.push_back(encode_words(number_to_words(v)));
    tgt.push_back(encode_digits(std::to_string(v)));
    s_len = std::max(s_len, src.back().size());
    t_len = std::max(t_len, tgt.back().size() + 1);
  }
  const std::size_t n = src.size();
  xt::xarray<std::int64_t> s = xt::zeros<std::int64_t>({n, s_len}), ti = xt::zeros<std::int64_t>({n, t_len}),
                           to = xt::zeros<std::int64_t>({n, t_len});
  BoolArray sp = xt::ones<bool>({n, s_len});
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < src[i].size(); ++j) {
      s(i, j) = src[i][j];
      sp(i, j) = false;
    }
    ti(i, 0) = kNumberBos;
    for (std::size_t j = 0; j < tgt[i].size(); ++j) ti(i, j + 1) = to(i, j) = tgt[i][j];
    to(i, tgt[i].size()) = kNumberEos;
  }
  TransformerOptions o;
  o.src_vocab_size = o.tgt_vocab_size = number_tokens().size();
  o.d_model = 16;
  o.nhead = 2;
  o.num_encoder_layers = o.num_decoder_layers = 1;
  o.dim_feedforward = 32;
  o.dropout = 0.1;
  o.max_len = 32;
  o.tie_output = true;
  Generator gen(0);
  Transformer<float> model(o, gen);
  optim::AdamOptions adam;
  adam.lr = 3e-3;
  adam.betas = {0.9, 0.98};
  adam.eps = 1e-9;
  optim::Adam<float> opt(model.parameters(), adam);
  CrossEntropyOptions ce;
  ce.ignore_index = kNumberPad;
  ce.label_smoothing = 0.1;
  const xt::xarray<std::int64_t> target = xt::flatten(to);
  const auto loss_now = [&] {
    const Tensor<float> logits = model.forward(s, ti, sp);
    return cross_entropy(reshape(logits, {-1, static_cast<std::int64_t>(o.tgt_vocab_size)}), target, ce);
  };
  model.eval();
  const float first = loss_now().item();
  model.train();
  for (int step = 0; step < 60; ++step) {
    const Tensor<float> loss = loss_now();
    model.zero_grad();
    loss.backward();
    opt.step();
  }
  model.eval();
  const float last = loss_now().item();
  INFO("loss " << first << " -> " << last);
  CHECK(last < 0.6f * first);
}

TEST_CASE("Transformer: calling the model runs forward", "[translate][call]") {
  Generator gen(2);
  Transformer<double> model(tiny(false, true), gen);
  const Tensor<double> logits = model(kSrc, kTgt, kSrcPad, kTgtPad);
  CHECK(logits.shape() == Shape{2, 5, 7});
  CHECK(logits.data() == model.forward(kSrc, kTgt, kSrcPad, kTgtPad).data());
  auto ptr = std::make_shared<Transformer<double>>(tiny(true, false), gen);
  CHECK((*ptr)(kSrc, kTgt, kSrcPad).data() == ptr->forward(kSrc, kTgt, kSrcPad).data());
}
