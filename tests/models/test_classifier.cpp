// TransformerClassifier: gradients for every pooling and norm placement, padding handling, options.
#include <catch2/catch.hpp>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/models/classifier.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace tapegrad::models;

namespace {
TransformerClassifierOptions tiny(Pooling pooling, bool norm_first) {
  auto o = testing::sized<TransformerClassifierOptions>(11, 8, 4, 2, 2);
  o.dim_feedforward = 6;
  o.dropout = 0.0;
  o.attention_dropout = 0.0;
  o.pooling = pooling;
  o.norm_first = norm_first;
  return o;
}
// Two reviews: 4 real tokens, and 2 real tokens then padding.
const xt::xarray<std::int64_t> kIds = {{3, 5, 7, 2}, {4, 9, 0, 0}};
const BoolArray kPad = {{false, false, false, false}, {false, false, true, true}};

// tiny's mean-pooling classifier with one layer and hashed n-grams: buckets rows of width dim (0: d_model).
TransformerClassifierOptions with_ngrams(std::size_t buckets, std::size_t dim = 0) {
  auto o = tiny(Pooling::Mean, false);
  o.num_layers = 1;
  o.ngram_buckets = buckets;
  o.ngram_max = 3;
  o.ngram_dim = dim;
  return o;
}

// The logits of kIds, kPad pass gradcheck with respect to every parameter of model.
void check_gradients(const TransformerClassifier<double>& model) {
  const auto f = [&](const std::vector<Tensor<double>>&) { return model.forward(kIds, kPad); };
  CHECK_GRADCHECK(f, model.parameters());
}
}  // namespace

TEST_CASE("TransformerClassifier: gradcheck for each pooling, post-LN and pre-LN", "[classifier]") {
  for (Pooling pooling : {Pooling::Mean, Pooling::Max, Pooling::Cls}) {
    for (bool norm_first : {false, true}) {
      INFO("pooling " << pooling_name(pooling) << ", norm_first " << norm_first);
      Generator gen(3);
      TransformerClassifier<double> model(tiny(pooling, norm_first), gen);
      check_gradients(model);
    }
  }
}

TEST_CASE("TransformerClassifier: padding tokens change nothing", "[classifier]") {
  for (Pooling pooling : {Pooling::Mean, Pooling::Max, Pooling::Cls}) {
    Generator gen(5);
    TransformerClassifier<double> model(tiny(pooling, false), gen);
    model.eval();
    auto ids2 = kIds;
    ids2(1, 2) = 8;  // a different id under padding
    ids2(1, 3) = 6;
    CHECK(model.forward(kIds, kPad).data() == model.forward(ids2, kPad).data());
  }
}

TEST_CASE("TransformerClassifier: an empty review gives finite logits", "[classifier]") {
  for (Pooling pooling : {Pooling::Mean, Pooling::Max, Pooling::Cls}) {
    Generator gen(6);
    TransformerClassifier<float> model(tiny(pooling, true), gen);
    const xt::xarray<std::int64_t> ids = {{0, 0, 0}, {2, 3, 0}};
    const BoolArray pad = {{true, true, true}, {false, false, true}};
    auto logits = model.forward(ids, pad);
    for (float v : logits.data()) CHECK(std::isfinite(v));
  }
}

TEST_CASE("TransformerClassifier: parameter names and errors", "[classifier]") {
  Generator gen(0);
  TransformerClassifier<float> model(tiny(Pooling::Cls, true), gen);
  std::vector<std::string> names;
  for (const auto& [name, p] : model.named_parameters()) names.push_back(name);
  CHECK(names.front() == "cls_token");
  CHECK(std::find(names.begin(), names.end(), "embedding.weight") != names.end());
  CHECK(std::find(names.begin(), names.end(), "encoder.layers.1.self_attn.in_proj_weight") != names.end());
  CHECK(std::find(names.begin(), names.end(), "encoder.norm.weight") != names.end());
  CHECK(names.back() == "classifier.bias");

  auto o = tiny(Pooling::Mean, false);
  o.nhead = 3;
  CHECK_THROWS_WITH(TransformerClassifier<float>(o, gen),
                    Catch::Contains("d_model (4)") && Catch::Contains("nhead (3)"));
  o = tiny(Pooling::Mean, false);
  o.dropout = 1.0;
  CHECK_THROWS_WITH(TransformerClassifier<float>(o, gen), Catch::Contains("dropout must be in [0, 1), got 1"));
  const xt::xarray<std::int64_t> long_ids = xt::ones<std::int64_t>({1, 9});
  CHECK_THROWS_WITH(model.forward(long_ids, xt::zeros<bool>({1, 9})),
                    Catch::Contains("length 9") && Catch::Contains("max_len = 8"));
  CHECK_THROWS_AS(model.forward(kIds, xt::zeros<bool>({2, 3})), std::invalid_argument);
}

TEST_CASE("TransformerClassifier: a trace collects each layer's attention without changing the logits",
          "[classifier][explain]") {
  for (Pooling pooling : {Pooling::Mean, Pooling::Cls}) {
    INFO("pooling " << pooling_name(pooling));
    Generator gen(5);
    auto options = tiny(pooling, false);
    options.attention_dropout = 0.3;  // eval mode: no dropout on the weights returned
    TransformerClassifier<double> model(options, gen);
    model.eval();
    const auto plain = model.forward(kIds, kPad);
    ClassifierTrace<double> trace;
    const auto traced = model.forward(kIds, kPad, &trace);
    CHECK(xt::allclose(plain.data(), traced.data(), 0.0, 0.0));

    const std::size_t positions = pooling == Pooling::Cls ? 5 : 4, offset = positions - 4;
    REQUIRE(trace.attention.size() == 2);
    for (const auto& w : trace.attention) {
      REQUIRE(w.shape() == Shape{2, 2, positions, positions});
      for (std::size_t b = 0; b < 2; ++b)
        for (std::size_t h = 0; h < 2; ++h)
          for (std::size_t q = 0; q < positions; ++q) {
            double sum = 0.0;
            for (std::size_t k = 0; k < positions; ++k) sum += w.data()(b, h, q, k);
            CHECK(sum == Approx(1.0).margin(1e-12));
            // The second review's two padding keys get nothing.
            if (b == 1) {
              CHECK(w.data()(b, h, q, offset + 2) == 0.0);
              CHECK(w.data()(b, h, q, offset + 3) == 0.0);
            }
          }
    }
    REQUIRE(trace.embeddings.shape() == Shape{2, 4, 4});
    CHECK(trace.embeddings.retains_grad());
    // The embedding table's rows, before the sqrt(d_model) scale.
    for (std::size_t k = 0; k < 4; ++k) CHECK(trace.embeddings.data()(0, 1, k) == model.embedding->weight.data()(5, k));
  }
}

TEST_CASE("TransformerClassifier with hashed n-grams: gradcheck, names, order matters, errors", "[classifier][ngram]") {
  auto o = with_ngrams(13);
  Generator gen(8);
  TransformerClassifier<double> model(o, gen);
  check_gradients(model);
  const auto state = model.state_dict();
  REQUIRE(state.count("ngrams.weight") == 1);
  CHECK(state.at("ngrams.weight").shape() == Shape{13, 4});
  // Padding still changes nothing: no n-gram reaches into it.
  model.eval();
  auto ids2 = kIds;
  ids2(1, 2) = 8;
  CHECK(model.forward(kIds, kPad).data() == model.forward(ids2, kPad).data());
  // Without the n-grams, mean pooling with one layer and no positions would still see order through
  // the positional encoding; with them, swapping two tokens changes which n-gram rows are added.
  const xt::xarray<std::int64_t> ab = {{3, 5, 7}}, ba = {{5, 3, 7}};
  const BoolArray none = xt::zeros<bool>({1, 3});
  CHECK(model.ngrams->forward(ab, none).data() != model.ngrams->forward(ba, none).data());
  o.ngram_buckets = 1;
  CHECK_THROWS_WITH(TransformerClassifier<double>(o, gen),
                    Catch::Contains("ngram_buckets must be 0 (none) or at least 2"));
  o.ngram_buckets = 5;
  o.ngram_max = 1;
  CHECK_THROWS_WITH(TransformerClassifier<double>(o, gen), Catch::Contains("ngram_max must be at least 2, got 1"));
}

TEST_CASE("TransformerClassifier with narrower n-gram rows: projected to d_model, gradcheck, errors",
          "[classifier][ngram]") {
  auto o = with_ngrams(11, 2);
  Generator gen(9);
  TransformerClassifier<double> model(o, gen);
  check_gradients(model);
  const auto state = model.state_dict();
  CHECK(state.at("ngrams.weight").shape() == Shape{11, 2});
  CHECK(state.at("ngram_proj.weight").shape() == Shape{4, 2});  // torch's Linear(2, 4, bias=False)
  CHECK(state.count("ngram_proj.bias") == 0);
  // The table reaches the logits through the projection, and only through it.
  model.eval();
  const xt::xarray<double> before = model.forward(kIds, kPad).data();
  model.ngrams->weight.mutable_data() += 1.0;
  const xt::xarray<double> moved = model.forward(kIds, kPad).data();
  CHECK(xt::amax(xt::abs(moved - before))() > 1e-6);
  model.ngram_proj->weight.mutable_data().fill(0.0);
  const xt::xarray<double> cut = model.forward(kIds, kPad).data();
  model.ngrams->weight.mutable_data() -= 3.0;
  CHECK(bool(model.forward(kIds, kPad).data() == cut));
  o.ngram_dim = 5;
  CHECK_THROWS_WITH(TransformerClassifier<double>(o, gen),
                    Catch::Contains("ngram_dim (5) must not exceed d_model (4)"));
}

TEST_CASE("TransformerClassifier: calling the model runs forward", "[classifier][call]") {
  Generator gen(4);
  TransformerClassifier<double> model(tiny(Pooling::Mean, false), gen);
  const Tensor<double> logits = model(kIds, kPad);
  CHECK(logits.shape() == Shape{2, model.options.num_classes});
  CHECK(logits.data() == model.forward(kIds, kPad).data());
  auto ptr = std::make_shared<TransformerClassifier<float>>(tiny(Pooling::Cls, true), gen);
  CHECK((*ptr)(kIds, kPad).data() == ptr->forward(kIds, kPad).data());
}

TEST_CASE(
    "TransformerClassifier: activation checkpointing gives the plain gradients bit for bit, padding and "
    "dropout on",
    "[classifier][checkpoint]") {
  for (bool norm_first : {false, true}) {
    INFO("norm_first " << norm_first);
    TransformerClassifierOptions o = tiny(Pooling::Mean, norm_first);
    o.dropout = 0.3;
    o.attention_dropout = 0.2;
    Generator gen_plain(5), gen_checkpointed(5);
    TransformerClassifier<double> plain(o, gen_plain);
    o.activation_checkpointing = true;
    TransformerClassifier<double> checkpointed(o, gen_checkpointed);
    REQUIRE(checkpointed.encoder->activation_checkpointing);
    for (int step = 0; step < 2; ++step) {
      testing::check_same_step(plain, checkpointed, [](const TransformerClassifier<double>& model) {
        return model.forward(kIds, kPad).pow(2).sum();
      });
    }
  }
}
