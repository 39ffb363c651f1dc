// NegationScope: which tokens a negation marks, and negated_word_buckets, the plain words it marked.
#include <catch2/catch.hpp>

#include "examples/imdb/features/negation_scope.hpp"
#include "tapegrad/autograd/shape.hpp"
#include "tapegrad/nn/ngram_hash.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using namespace imdb::features;

TEST_CASE("NegationScope: a negator marks the tokens up to the next scope end as ~id", "[imdb][features]") {
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

TEST_CASE("negated_word_buckets: the plain words of the marked tokens, each once", "[imdb][features]") {
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
