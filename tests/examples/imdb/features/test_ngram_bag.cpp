// HashedNgramBag: the sum of a document's distinct n-gram rows, its feature scale, negation marking and
// the learned negation factor, gradients and errors.
#include <catch2/catch.hpp>
#include <xtensor/xview.hpp>

#include "examples/imdb/features/log_count_ratio.hpp"
#include "examples/imdb/features/negation_scope.hpp"
#include "examples/imdb/features/ngram_bag.hpp"
#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/nn/ngram_hash.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace imdb::features;

TEST_CASE("HashedNgramBag: the sum of a document's distinct n-gram rows, zero at first", "[imdb][features]") {
  HashedNgramBag<double> bag(100, 2, 2);
  CHECK(bag.named_parameters().size() == 1);
  CHECK(xt::all(xt::equal(bag.weight.data(), 0.0)));
  CHECK(bag.to_string() == "HashedNgramBag(100, 2, max_n=2)");
  Generator gen(8);
  bag.weight.mutable_data() = Tensor<double>::normal({100, 2}, 0.0, 1.0, gen).data();
  const xt::xarray<std::int64_t> ids = {{5, 7, 9, 0}, {5, 7, 5, 7}};
  const BoolArray pad = {{false, false, false, true}, {false, false, false, false}};
  const auto out = bag.forward(ids, pad);
  REQUIRE(out.shape() == Shape{2, 2});
  const auto& w = bag.weight.data();
  for (std::size_t k = 0; k < 2; ++k) {
    CHECK(out.data()(0, k) == Approx(w(23, k) + w(31, k) + w(39, k) + w(62, k) + w(98, k)));
    // "5 7 5 7": the words 5 and 7 and the bigram "5 7" count once each; "7 5" is new.
    const std::int64_t seven_five[] = {7, 5};
    const auto b75 = static_cast<std::size_t>(1 + ngram_hash(seven_five, 2) % 99);
    CHECK(out.data()(1, k) == Approx(w(31, k) + w(39, k) + w(62, k) + w(b75, k)));
  }
  CHECK_THROWS_WITH(HashedNgramBag<double>(100, 2, 0), Catch::Contains("and max_n 0 at least 1"));
}

TEST_CASE("HashedNgramBag: gradcheck, and the padding row gets no gradient", "[imdb][features]") {
  HashedNgramBag<double> bag(7, 3, 3);
  Generator gen(9);
  bag.weight.mutable_data() = Tensor<double>::normal({7, 3}, 0.0, 1.0, gen).data();
  const xt::xarray<std::int64_t> ids = {{1, 2, 3, 4, 5}, {6, 2, 3, 0, 0}};
  const BoolArray pad = {{false, false, false, false, false}, {false, false, false, true, true}};
  const Tensor<double> projection = testing::rand_input({2, 3}, 2);
  // Through the table itself: gradcheck perturbs bag.weight, which the module reads.
  const auto f = [&](const std::vector<Tensor<double>>&) { return sum(mul(bag.forward(ids, pad), projection)); };
  CHECK_GRADCHECK(f, bag.parameters());
  bag.zero_grad();
  auto loss = sum(bag.forward(ids, pad));
  loss.backward();
  CHECK(xt::all(xt::equal(xt::view(bag.weight.grad(), 0), 0.0)));
}

TEST_CASE("HashedNgramBag with a feature scale: each n-gram's row counts its bucket's scale times",
          "[imdb][features]") {
  // Words only, 100 buckets: 5 -> 39, 7 -> 31, 9 -> 23; the scale is NgramLogCountRatio's of these documents.
  NgramLogCountRatio counts(100, 1);
  const xt::xarray<std::int64_t> ids = {{5, 7}, {5, 9}, {9, 0}};
  const BoolArray pad = {{false, false}, {false, false}, {false, true}};
  counts.add(ids, pad, xt::xarray<std::int64_t>{1, 0, 0});
  const auto r = counts.ratio(1.0);
  // The ratios as a bag's feature scale: each n-gram's row counts r times.
  HashedNgramBag<double> bag(100, 2, 1, /*feature_scale=*/true);
  CHECK(bag.state_dict().at("scale").shape() == Shape{100, 1});
  CHECK(xt::all(xt::equal(bag.scale.data(), 1.0)));
  bag.set_feature_scale(r);
  Generator gen(11);
  bag.weight.mutable_data() = Tensor<double>::normal({100, 2}, 0.0, 1.0, gen).data();
  const auto out = bag.forward(ids, pad);
  const auto& w = bag.weight.data();
  for (std::size_t k = 0; k < 2; ++k) CHECK(out.data()(0, k) == Approx(r(39) * w(39, k) + r(31) * w(31, k)));
  const auto f = [&](const std::vector<Tensor<double>>&) { return bag.forward(ids, pad); };
  CHECK_GRADCHECK(f, bag.parameters());
  CHECK(bag.to_string() == "HashedNgramBag(100, 2, max_n=1, feature_scale)");
  CHECK_THROWS_WITH(bag.set_feature_scale(xt::zeros<double>({99})), Catch::Contains("must be [100]"));
  auto bad = r;
  bad(7) = std::nan("");
  CHECK_THROWS_WITH(bag.set_feature_scale(bad), Catch::Contains("bucket 7 is nan"));
  HashedNgramBag<double> plain(100, 2, 1);
  CHECK_THROWS_WITH(plain.set_feature_scale(r), Catch::Contains("built without feature_scale"));
}

TEST_CASE("HashedNgramBag with negation: the n-grams of the marked ids", "[imdb][features]") {
  HashedNgramBag<double> bag(1000, 2, 2);
  Generator gen(12);
  bag.weight.mutable_data() = Tensor<double>::normal({1000, 2}, 0.0, 1.0, gen).data();
  bag.negation = NegationScope({2}, {3});
  CHECK(bag.to_string() == "HashedNgramBag(1000, 2, max_n=2, negation)");
  // "not bad , good" and "not good , bad": the same words, now told apart.
  const xt::xarray<std::int64_t> ids = {{2, 8, 3, 9}, {2, 9, 3, 8}};
  const BoolArray pad = xt::zeros<bool>({2, 4});
  const auto out = bag.forward(ids, pad);
  HashedNgramBag<double> plain(1000, 2, 2);
  plain.weight = bag.weight;
  const xt::xarray<std::int64_t> marked = {{2, ~8, 3, 9}, {2, ~9, 3, 8}};
  CHECK(xt::allclose(out.data(), plain.forward(marked, pad).data()));
  CHECK_FALSE(xt::allclose(out.data(), plain.forward(ids, pad).data()));
  const auto f = [&](const std::vector<Tensor<double>>&) { return bag.forward(ids, pad); };
  CHECK_GRADCHECK(f, bag.parameters());
}

TEST_CASE("HashedNgramBag with a negation factor: a negated word also counts as itself times the factor",
          "[imdb][features]") {
  HashedNgramBag<double> bag(1000, 2, 2, /*feature_scale=*/true, /*negation_factor=*/0.0);
  CHECK(bag.state_dict().at("negation_factor").shape() == Shape{1});
  CHECK(bag.negation_factor.data()(0) == 0.0);  // from 0 it starts as the bag without it
  CHECK(HashedNgramBag<double>(10, 2, 1, false, -1.0).negation_factor.data()(0) == -1.0);
  CHECK_THROWS_WITH(HashedNgramBag<double>(10, 2, 1, false, std::nan("")),
                    Catch::Contains("initial negation factor nan is not finite"));
  Generator gen(13);
  bag.weight.mutable_data() = Tensor<double>::normal({1000, 2}, 0.0, 1.0, gen).data();
  xt::xarray<double> ratios = Tensor<double>::normal({1000}, 0.0, 1.0, gen).data();
  ratios(0) = 0.0;
  bag.set_feature_scale(ratios);
  bag.negation = NegationScope({2}, {3});
  CHECK(bag.to_string() == "HashedNgramBag(1000, 2, max_n=2, feature_scale, negation, negation_factor)");
  HashedNgramBag<double> without(1000, 2, 2, true);
  without.weight = bag.weight;
  without.scale = bag.scale;
  without.negation = bag.negation;
  // "not bad , good" and "good bad": only the first has a negated word.
  const xt::xarray<std::int64_t> ids = {{2, 8, 3, 9}, {9, 8, 0, 0}};
  const BoolArray pad = {{false, false, false, false}, {false, false, true, true}};
  CHECK(xt::allclose(bag.forward(ids, pad).data(), without.forward(ids, pad).data()));
  bag.negation_factor.mutable_data()(0) = -0.7;
  const auto out = bag.forward(ids, pad).data();
  const auto ref = without.forward(ids, pad).data();
  const std::int64_t bad = 8;
  const auto b8 = static_cast<std::size_t>(ngram_bucket(&bad, 1, 1000));
  const auto& w = bag.weight.data();
  for (std::size_t k = 0; k < 2; ++k) {
    CHECK(out(0, k) == Approx(ref(0, k) - 0.7 * ratios(b8) * w(b8, k)));
    CHECK(out(1, k) == Approx(ref(1, k)));
  }
  // The factor and the table both learn: gradcheck over every parameter.
  const auto f = [&](const std::vector<Tensor<double>>&) { return bag.forward(ids, pad); };
  CHECK_GRADCHECK(f, bag.parameters());
  // Without a negation scope there is nothing to count twice.
  HashedNgramBag<double> unscoped(1000, 2, 2, false, 5.0);
  unscoped.weight = bag.weight;
  HashedNgramBag<double> plain(1000, 2, 2);
  plain.weight = bag.weight;
  CHECK(xt::allclose(unscoped.forward(ids, pad).data(), plain.forward(ids, pad).data()));
}
