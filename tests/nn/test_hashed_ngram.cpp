// HashedNgramEmbedding: the documented hash (values from an independent Python implementation of the
// header's sentence), which n-grams exist around padding, the sum of rows, gradients, errors.
#include <catch2/catch.hpp>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/nn/hashed_ngram_embedding.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;

TEST_CASE("ngram_hash follows its documented FNV-1a recipe", "[nn][ngram]") {
  const std::int64_t bigram[] = {5, 7}, trigram[] = {5, 7, 9}, negative[] = {-1, 2};
  CHECK(ngram_hash(bigram, 2) == 4147209733407347239ULL);
  CHECK(ngram_hash(trigram, 3) == 11266077568879577497ULL);
  CHECK(ngram_hash(negative, 2) == 2053876561981935679ULL);
}

TEST_CASE("ngram_buckets: n-grams of real tokens only, bucket 0 elsewhere", "[nn][ngram]") {
  const xt::xarray<std::int64_t> ids = {{5, 7, 9, 0}, {4, 0, 6, 8}};
  const BoolArray pad = {{false, false, false, true}, {false, true, false, false}};
  const auto b = ngram_buckets(ids, pad, 100, 3);
  REQUIRE(shape_of(b) == Shape{2, 4, 2});
  // Row 0: "5 7" ends at 1, "7 9" and "5 7 9" end at 2; position 0 and the padding have none.
  CHECK(b(0, 0, 0) == 0);
  CHECK(b(0, 0, 1) == 0);
  CHECK(b(0, 1, 0) == 62);
  CHECK(b(0, 1, 1) == 0);
  CHECK(b(0, 2, 0) == 98);
  CHECK(b(0, 2, 1) == 32);
  CHECK(b(0, 3, 0) == 0);
  // Row 1: padding in the middle breaks the window: only "6 8" exists.
  CHECK(b(1, 1, 0) == 0);
  CHECK(b(1, 2, 0) == 0);
  CHECK(b(1, 3, 0) != 0);
  CHECK(b(1, 3, 1) == 0);
  CHECK_THROWS_WITH(ngram_buckets(ids, pad, 1, 3), Catch::Contains("num_buckets 1 < 2"));
  CHECK_THROWS_WITH(ngram_buckets(ids, pad, 100, 1), Catch::Contains("max_n 1 < 2"));
  CHECK_THROWS_WITH(ngram_buckets(ids, BoolArray(xt::zeros<bool>({2, 3})), 100, 2),
                    Catch::Contains("must both be [batch, length]"));
}

TEST_CASE("HashedNgramEmbedding sums the rows of the n-grams ending at each position", "[nn][ngram]") {
  Generator gen(3);
  HashedNgramEmbedding<double> emb(100, 4, 3, gen);
  CHECK(emb.named_parameters().size() == 1);
  CHECK(emb.named_parameters()[0].first == "weight");
  CHECK(xt::all(xt::equal(xt::view(emb.weight.data(), 0), 0.0)));
  const xt::xarray<std::int64_t> ids = {{5, 7, 9, 0}};
  const BoolArray pad = {{false, false, false, true}};
  const auto out = emb.forward(ids, pad);
  REQUIRE(out.shape() == Shape{1, 4, 4});
  const auto& w = emb.weight.data();
  for (std::size_t k = 0; k < 4; ++k) {
    CHECK(out.data()(0, 0, k) == 0.0);
    CHECK(out.data()(0, 1, k) == w(62, k));
    CHECK(out.data()(0, 2, k) == Approx(w(98, k) + w(32, k)));
    CHECK(out.data()(0, 3, k) == 0.0);
  }
  CHECK(emb.to_string() == "HashedNgramEmbedding(100, 4, max_n=3)");
  CHECK_THROWS_WITH(HashedNgramEmbedding<double>(1, 4, 2, gen), Catch::Contains("num_buckets 1 must be at least 2"));
}

TEST_CASE("HashedNgramEmbedding: gradcheck, and the 'no n-gram' row gets no gradient", "[nn][ngram]") {
  Generator gen(4);
  HashedNgramEmbedding<double> emb(7, 3, 3, gen);
  const xt::xarray<std::int64_t> ids = {{1, 2, 3, 4, 5}, {6, 2, 3, 0, 0}};
  const BoolArray pad = {{false, false, false, false, false}, {false, false, false, true, true}};
  const auto f = [&](const std::vector<Tensor<double>>& in) { return sum(mul(emb.forward(ids, pad), in[0])); };
  const std::vector<Tensor<double>> inputs = {testing::rand_input({2, 5, 3}, 1)};
  CHECK_GRADCHECK(f, inputs);
  emb.zero_grad();  // gradcheck's passes accumulated into weight.grad
  auto loss = sum(emb.forward(ids, pad));
  loss.backward();
  CHECK(xt::all(xt::equal(xt::view(emb.weight.grad(), 0), 0.0)));
  // Every real bigram and trigram adds 1 to its bucket's row: 4 + 3 + 2 + 1 = 10 n-grams in all.
  CHECK(xt::sum(emb.weight.grad())() == Approx(10.0 * 3));
}

TEST_CASE("document_ngram_buckets: each row's distinct n-grams, sorted, padded with 0", "[nn][ngram]") {
  // Buckets from the same independent implementation: [5] 39, [7] 31, [9] 23, [5 7] 62, [7 9] 98;
  // [4] 35, [6] 27, [8] 19, [6 8] 17; [3] 47 and [3 3] 47 (a collision across orders).
  const xt::xarray<std::int64_t> ids = {{5, 7, 9, 0}, {4, 0, 6, 8}, {3, 3, 3, 3}};
  const BoolArray pad = {{false, false, false, true}, {false, true, false, false}, {false, false, false, false}};
  const auto b = document_ngram_buckets(ids, pad, 100, 2);
  const xt::xarray<std::int64_t> expected = {{23, 31, 39, 62, 98}, {17, 19, 27, 35, 0}, {47, 0, 0, 0, 0}};
  CHECK(bool(b == expected));
  // Words only, and a batch without a real token.
  const xt::xarray<std::int64_t> words = {{23, 31, 39}, {19, 27, 35}, {47, 0, 0}};
  CHECK(bool(document_ngram_buckets(ids, pad, 100, 1) == words));
  const BoolArray all_pad = xt::ones<bool>({3, 4});
  CHECK(document_ngram_buckets(ids, all_pad, 100, 3).shape(1) == 0);
  CHECK_THROWS_WITH(document_ngram_buckets(ids, pad, 1, 2), Catch::Contains("num_buckets 1 < 2"));
  CHECK_THROWS_WITH(document_ngram_buckets(ids, pad, 100, 0), Catch::Contains("max_n 0 < 1"));
  CHECK_THROWS_WITH(document_ngram_buckets(ids, BoolArray(xt::zeros<bool>({3, 3})), 100, 2),
                    Catch::Contains("must both be [batch, length]"));
}

TEST_CASE("HashedNgramBag: the sum of a document's distinct n-gram rows, zero at first", "[nn][ngram]") {
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

TEST_CASE("HashedNgramBag: gradcheck, and the padding row gets no gradient", "[nn][ngram]") {
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

TEST_CASE("NgramLogCountRatio: naive Bayes' log-count ratios per bucket", "[nn][ngram]") {
  // Words only, 100 buckets: 5 -> 39, 7 -> 31, 9 -> 23. Class 1 has "5 7", class 0 has "5 9" and "9".
  NgramLogCountRatio counts(100, 1);
  const xt::xarray<std::int64_t> ids = {{5, 7}, {5, 9}, {9, 0}};
  const BoolArray pad = {{false, false}, {false, false}, {false, true}};
  counts.add(ids, pad, xt::xarray<std::int64_t>{1, 0, 0});
  CHECK(counts.documents(1) == 1);
  CHECK(counts.documents(0) == 2);
  const auto r = counts.ratio(1.0);
  REQUIRE(r.size() == 100);
  // |p|_1 = 99 + 2, |q|_1 = 99 + 3 over buckets 1..99.
  const double p1 = 101.0, q1 = 102.0;
  CHECK(r(0) == 0.0);
  CHECK(r(31) == Approx(std::log((2.0 / p1) / (1.0 / q1))));
  CHECK(r(23) == Approx(std::log((1.0 / p1) / (3.0 / q1))));
  CHECK(r(39) == Approx(std::log((2.0 / p1) / (2.0 / q1))));
  CHECK(r(50) == Approx(std::log(q1 / p1)));
  CHECK_THROWS_WITH(counts.add(ids, pad, xt::xarray<std::int64_t>{1, 2, 0}),
                    Catch::Contains("label 2 of document 1 is not 0 or 1"));
  CHECK_THROWS_WITH(counts.add(ids, pad, xt::xarray<std::int64_t>{1, 0}), Catch::Contains("must be [batch]"));
  CHECK_THROWS_WITH(counts.ratio(0.0), Catch::Contains("alpha 0 must be a finite number > 0"));

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

TEST_CASE("NegationScope: a negator marks the tokens up to the next scope end as ~id", "[nn][ngram]") {
  // 2 = "not", 3 = ",", 4 = "never"; the rest are words.
  const NegationScope scope({4, 2}, {3});
  CHECK(scope.negators() == std::vector<std::int64_t>{2, 4});
  const xt::xarray<std::int64_t> ids = {{7, 2, 8, 9, 3, 8, 0}, {2, 8, 4, 9, 2, 9, 0}, {2, 8, 0, 9, 5, 6, 7}};
  const BoolArray pad = {{false, false, false, false, false, false, true},
                         {false, false, false, false, false, false, true},
                         {false, false, true, false, false, false, false}};
  const xt::xarray<std::int64_t> expected = {
      {7, 2, ~8, ~9, 3, 8, 0},   // the comma closes the scope; the word after it is plain
      {2, ~8, 4, ~9, 2, ~9, 0},  // a negator inside a scope is not marked and opens a new one
      {2, ~8, 0, 9, 5, 6, 7}};   // padding closes it too
  CHECK(bool(scope.mark(ids, pad) == expected));
  CHECK(bool(NegationScope().mark(ids, pad) == ids));
  CHECK(NegationScope().empty());
  CHECK_THROWS_WITH(NegationScope({2}, {2, 3}), Catch::Contains("id 2 is both a negator and a scope end"));
  CHECK_THROWS_WITH(NegationScope({-1}, {}), Catch::Contains("negator id -1 is negative"));
  CHECK_THROWS_WITH(scope.mark(xt::xarray<std::int64_t>{{2, -5}}, BoolArray{{false, false}}),
                    Catch::Contains("token 1 of row 0 has the negative id -5"));
  CHECK_THROWS_WITH(scope.mark(ids, BoolArray(xt::zeros<bool>({3, 2}))),
                    Catch::Contains("must both be [batch, length]"));
}

TEST_CASE("HashedNgramBag with negation: the n-grams of the marked ids", "[nn][ngram]") {
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

TEST_CASE("negated_word_buckets: the plain words of the marked tokens, each once", "[nn][ngram]") {
  // Row 0: "not 8 9 , 8" marked; row 1 negates 9 twice and has padding where a marked id would be.
  const xt::xarray<std::int64_t> marked = {{2, ~8, ~9, 3, 8}, {2, ~9, 2, ~9, ~7}};
  const BoolArray pad = {{false, false, false, false, false}, {false, false, false, false, true}};
  const auto b = negated_word_buckets(marked, pad, 100);
  const std::int64_t eight = 8, nine = 9;
  const std::int64_t b8 = ngram_bucket(&eight, 1, 100), b9 = ngram_bucket(&nine, 1, 100);
  REQUIRE(shape_of(b) == Shape{2, 2});
  CHECK(b(0, 0) == std::min(b8, b9));
  CHECK(b(0, 1) == std::max(b8, b9));
  CHECK(b(1, 0) == b9);  // 9 once; the padded ~7 is no word
  CHECK(b(1, 1) == 0);
  CHECK(negated_word_buckets(xt::xarray<std::int64_t>{{4, 5}}, BoolArray{{false, false}}, 100).shape(1) == 0);
  CHECK_THROWS_WITH(negated_word_buckets(marked, BoolArray(xt::zeros<bool>({2, 4})), 100),
                    Catch::Contains("must both be [batch, length]"));
}

TEST_CASE("HashedNgramBag with a negation factor: a negated word also counts as itself times the factor",
          "[nn][ngram]") {
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
