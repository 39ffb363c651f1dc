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

  TransformerOptions bad = tiny(false, false);
  bad.nhead = 3;
  CHECK_THROWS_WITH(Transformer<float>(bad, gen), Catch::Contains("d_model (4) must be divisible by nhead (3)"));
  bad = tiny(false, false);
  bad.padding_idx = 8;
  CHECK_THROWS_WITH(Transformer<float>(bad, gen), Catch::Contains("padding_idx 8 is outside tgt_vocab_size = 7"));
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

TEST_CASE("numbers: English wording of chosen numbers", "[translate]") {
  using datasets::number_to_words;
  CHECK(number_to_words(0) == "zero");
  CHECK(number_to_words(7) == "seven");
  CHECK(number_to_words(13) == "thirteen");
  CHECK(number_to_words(40) == "forty");
  CHECK(number_to_words(42) == "forty-two");
  CHECK(number_to_words(101) == "one hundred and one");
  CHECK(number_to_words(110) == "one hundred and ten");
  CHECK(number_to_words(999) == "nine hundred and ninety-nine");
  CHECK(number_to_words(1000) == "one thousand");
  CHECK(number_to_words(1001) == "one thousand and one");
  CHECK(number_to_words(1100) == "one thousand one hundred");
  CHECK(number_to_words(3412) == "three thousand four hundred and twelve");
  CHECK(number_to_words(100000) == "one hundred thousand");
  CHECK(number_to_words(1000000) == "one million");
  CHECK(number_to_words(1000100) == "one million one hundred");
  CHECK(number_to_words(2000042) == "two million and forty-two");
  CHECK(number_to_words(999999999) ==
        "nine hundred and ninety-nine million nine hundred and ninety-nine thousand nine hundred and ninety-nine");
  CHECK_THROWS_WITH(number_to_words(1000000000), Catch::Contains("1000000000 is outside 0..999999999"));
}

TEST_CASE("numbers: tokens round-trip and unknown words become <unk>", "[translate]") {
  using namespace datasets;
  CHECK(number_tokens().size() == 47);
  for (std::uint64_t n : {0ULL, 21ULL, 3412ULL, 2000042ULL, 999999999ULL}) {
    const std::string words = number_to_words(n);
    CHECK(decode_words(encode_words(words)) == words);
    CHECK(decode_digits(encode_digits(std::to_string(n))) == std::to_string(n));
  }
  CHECK(encode_words("Forty-Two").size() == 3);
  CHECK(encode_words("forty-two") ==
        std::vector<std::int64_t>{number_token_id("forty"), number_token_id("-"), number_token_id("two")});
  CHECK(encode_words("twelve apples") == std::vector<std::int64_t>{number_token_id("twelve"), kNumberUnk});
  CHECK(encode_digits("1,234") == encode_digits("1234"));
  CHECK(decode_digits({kNumberBos, number_token_id("4"), kNumberUnk, kNumberEos}) == "4<unk>");
  CHECK(encode_words(number_to_words(777777777)).size() == 20);
}

TEST_CASE("numbers: the sets are disjoint, distinct, reproducible and follow number_split", "[translate]") {
  using namespace datasets;
  const auto a = make_numbers_dataset(20000, 2000, 2000, 42);
  const auto b = make_numbers_dataset(20000, 2000, 2000, 42);
  CHECK(a.train == b.train);
  CHECK(a.valid == b.valid);
  CHECK(a.test == b.test);
  CHECK(a.test != make_numbers_dataset(20000, 2000, 2000, 43).test);
  std::set<std::uint64_t> all;
  const std::pair<const std::vector<std::uint64_t>*, NumberSplit> sets[] = {
      {&a.train, NumberSplit::Train}, {&a.valid, NumberSplit::Valid}, {&a.test, NumberSplit::Test}};
  std::size_t total = 0, short_ones = 0;
  for (const auto& [set, split] : sets) {
    total += set->size();
    for (auto v : *set) {
      all.insert(v);
      CHECK(v <= kMaxNumber);
      if (number_split(v, 42) != split) FAIL("value " << v << " is in the wrong set");
      short_ones += v < 1000;
    }
  }
  CHECK(all.size() == total);  // no value twice, within or across sets
  CHECK(a.train.size() == 20000);
  CHECK(short_ones > 500);  // every digit count is drawn: short numbers are present
  // Round numbers are common: among the values of 7 digits or more, a zero thousands or units group
  // (one uniform value in 500) and at most two non-zero digits.
  std::size_t long_ones = 0, zero_group = 0, sparse = 0;
  for (auto v : a.train) {
    if (v < 1'000'000) continue;
    ++long_ones;
    zero_group += v / 1000 % 1000 == 0 || v % 1000 == 0;
    std::size_t nonzero = 0;
    for (auto x = v; x; x /= 10) nonzero += x % 10 != 0;
    sparse += nonzero <= 2;
  }
  CHECK(zero_group > long_ones / 10);
  CHECK(sparse > long_ones / 20);
  // The split function itself: about 5% / 5% / 90%.
  std::size_t counts[3] = {0, 0, 0};
  for (std::uint64_t v = 0; v < 100000; ++v) ++counts[static_cast<int>(number_split(v, 42))];
  CHECK(counts[1] == Approx(5000).margin(400));
  CHECK(counts[2] == Approx(5000).margin(400));
}

TEST_CASE("numbers: draw_number keeps to its split and draws round numbers often", "[translate]") {
  using namespace datasets;
  Generator gen(5);
  std::size_t round_millions = 0;  // 1000000, 2000000, ..., 9000000
  constexpr std::size_t kDraws = 20000;
  for (std::size_t i = 0; i < kDraws; ++i) {
    const std::uint64_t v = draw_number(gen, NumberSplit::Train, 42);
    if (number_split(v, 42) != NumberSplit::Train) FAIL("value " << v << " is not in the training split");
    round_millions += v >= 1'000'000 && v < 10'000'000 && v % 1'000'000 == 0;
  }
  // P = 1/9 (seven digits) * 1/2 (round) * 1/7 (six zeros, z uniform), times the training share of
  // those nine values: about 1 draw in 140, so ~140 here, where uniform draws would give 0.02.
  CHECK(round_millions > 60);
  CHECK(round_millions < 250);
  Generator a(9), b(9);
  for (int i = 0; i < 100; ++i) CHECK(draw_number(a) == draw_number(b));
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
