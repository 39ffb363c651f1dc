// WideAndDeep: the encoder classifier and the n-gram bag, their logits summed with the wide part's
// weight (one number or by length), the parameters' names, gradients and errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "examples/imdb/wide_and_deep.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::models;
using imdb::WideAndDeep;
using imdb::WideAndDeepOptions;

namespace {
TransformerClassifierOptions tiny() {
  auto o = tapegrad::testing::sized<TransformerClassifierOptions>(11, 8, 4, 2, 1);
  o.dim_feedforward = 6;
  o.dropout = 0.0;
  o.attention_dropout = 0.0;
  return o;
}
// Two reviews: 4 real tokens, and 2 real tokens then padding.
const xt::xarray<std::int64_t> kIds = {{3, 5, 7, 2}, {4, 9, 0, 0}};
const BoolArray kPad = {{false, false, false, false}, {false, false, true, true}};
}  // namespace

TEST_CASE("WideAndDeep: the parts' logits add up, gradcheck, names, errors", "[imdb][wide]") {
  WideAndDeepOptions o;
  o.deep = tiny();
  o.wide_buckets = 19;
  o.wide_max_n = 2;
  Generator gen(10);
  WideAndDeep<double> model(o, gen);
  REQUIRE(model.wide);
  const auto state = model.state_dict();
  CHECK(state.at("wide.weight").shape() == Shape{19, 2});  // one column per class, zero at first
  CHECK(state.count("deep.classifier.weight") == 1);       // the encoder classifier's tensors under "deep."
  CHECK(xt::all(xt::equal(model.wide->weight.data(), 0.0)));
  model.wide->weight.mutable_data() = Tensor<double>::normal({19, 2}, 0.0, 1.0, gen).data();
  const auto f = [&](const std::vector<Tensor<double>>&) { return model.forward(kIds, kPad); };
  CHECK_GRADCHECK(f, model.parameters());
  model.eval();
  const auto parts = model.forward_parts(kIds, kPad);
  CHECK(parts.wide.data() == model.wide->forward(kIds, kPad).data());
  CHECK(parts.deep.data() == model.deep->forward(kIds, kPad).data());
  CHECK(xt::allclose(model.forward(kIds, kPad).data(), parts.deep.data() + parts.wide.data()));
  CHECK(model(kIds, kPad).data() == model.forward(kIds, kPad).data());
  // The buffer wide_weight (saved with the model) weighs the wide part in the sum.
  CHECK(state.at("wide_weight").shape() == Shape{1});
  model.wide_weight.mutable_data()(0) = 0.25;
  const auto weighted = model.forward_parts(kIds, kPad);
  CHECK(weighted.wide.data() == parts.wide.data());
  CHECK(xt::allclose(weighted.total().data(), parts.deep.data() + 0.25 * parts.wide.data()));
  CHECK(xt::allclose(model.forward(kIds, kPad).data(), weighted.total().data()));
  model.wide_weight.mutable_data()(0) = 1.0;
  // Padding changes neither part, and the encoder's logits are those of the same classifier alone,
  // drawn from the same generator in the same order.
  auto ids2 = kIds;
  ids2(1, 3) = 9;
  CHECK(model.forward(kIds, kPad).data() == model.forward(ids2, kPad).data());
  Generator same(10);
  TransformerClassifier<double> alone(o.deep, same);
  alone.eval();
  CHECK(alone.forward(kIds, kPad).data() == parts.deep.data());
  auto plain_options = o;
  plain_options.wide_buckets = 0;
  Generator same_again(10);
  WideAndDeep<double> plain(plain_options, same_again);
  plain.eval();
  CHECK_FALSE(plain.forward_parts(kIds, kPad).wide.defined());
  CHECK(plain.forward(kIds, kPad).data() == parts.deep.data());
  CHECK(plain.state_dict().count("wide_weight") == 0);
  // The wide part's negation factor is a parameter of the model ("wide.negation_factor").
  auto factor_options = o;
  factor_options.wide_negation_factor = -1.0;
  WideAndDeep<double> with_factor(factor_options, gen);
  CHECK(with_factor.state_dict().at("wide.negation_factor").shape() == Shape{1});
  CHECK(with_factor.wide->negation_factor.data()(0) == -1.0);
  CHECK(with_factor.parameters().size() == model.parameters().size() + 1);
  plain_options.wide_negation_factor = -1.0;
  CHECK_THROWS_WITH(WideAndDeep<double>(plain_options, gen), Catch::Contains("wide_negation_factor needs a wide part"));
  // By length: wide_weight [4] = (a, b, shortest, longest), each row weighted a + b ln(clamped length).
  auto length_options = o;
  length_options.wide_weight_by_length = true;
  WideAndDeep<double> by_length(length_options, gen);
  CHECK(by_length.state_dict().at("wide_weight").shape() == Shape{4});
  CHECK(by_length.wide_weight_at(7) == 1.0);  // (1, 0, 1, 1) at first: the plain sum
  by_length.wide->weight.mutable_data() = model.wide->weight.data();
  by_length.set_wide_weight(2.0, -0.25, 2.0, 3.0);
  CHECK(by_length.wide_weight_at(1) == Approx(2.0 - 0.25 * std::log(2.0)));
  CHECK(by_length.wide_weight_at(0) == Approx(2.0 - 0.25 * std::log(2.0)));
  CHECK(by_length.wide_weight_at(9) == Approx(2.0 - 0.25 * std::log(3.0)));
  by_length.eval();
  const auto rows = by_length.forward_parts(kIds, kPad);
  for (std::size_t b = 0; b < kIds.shape(0); ++b) {
    std::size_t real = 0;
    for (std::size_t t = 0; t < kIds.shape(1); ++t) real += kPad(b, t) ? 0 : 1;
    CHECK(rows.wide_weight(b) == Approx(by_length.wide_weight_at(real)));
    for (std::size_t c = 0; c < 2; ++c) {
      CHECK(rows.total().data()(b, c) == Approx(rows.deep.data()(b, c) + rows.wide_weight(b) * rows.wide.data()(b, c)));
    }
  }
  CHECK(rows.wide_weight(0) != rows.wide_weight(1));  // the fixture's rows differ in length
  CHECK_THROWS_WITH(by_length.set_wide_weight(1.0, 0.0, 5.0, 4.0), Catch::Contains("1 <= shortest 5 <= longest 4"));
  CHECK_THROWS_WITH(model.set_wide_weight(1.0, 0.5), Catch::Contains("b 0.5 needs a classifier built with"));
  model.set_wide_weight(0.5);
  CHECK(model.wide_weight_at(100) == 0.5);
  model.set_wide_weight(1.0);
  CHECK_THROWS_WITH(plain.set_wide_weight(1.0), Catch::Contains("has no wide part"));
  plain_options.wide_negation_factor.reset();
  plain_options.wide_weight_by_length = true;
  CHECK_THROWS_WITH(WideAndDeep<double>(plain_options, gen),
                    Catch::Contains("wide_weight_by_length needs a wide part"));
  auto scaled = plain_options;
  scaled.wide_weight_by_length = false;
  scaled.wide_feature_scale = true;
  CHECK_THROWS_WITH(WideAndDeep<double>(scaled, gen), Catch::Contains("wide_feature_scale needs a wide part"));
  o.wide_buckets = 1;
  CHECK_THROWS_WITH(WideAndDeep<double>(o, gen), Catch::Contains("wide_buckets must be 0 (none) or at least 2"));
  o.wide_buckets = 5;
  o.wide_max_n = 0;
  CHECK_THROWS_WITH(WideAndDeep<double>(o, gen), Catch::Contains("wide_max_n must be at least 1, got 0"));
  o.wide_max_n = 2;
  o.deep.d_model = 5;  // the encoder classifier's own options are checked too
  CHECK_THROWS_WITH(WideAndDeep<double>(o, gen), Catch::Contains("d_model (5) must be divisible by nhead (2)"));
}
