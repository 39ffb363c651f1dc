// The n-gram hashing of nn/ngram_hash.hpp: the documented hash (values from an independent Python
// implementation of the header's sentence), which n-grams exist around padding, each row's distinct
// n-grams, errors.
#include <catch2/catch.hpp>

#include "tapegrad/autograd/shape.hpp"
#include "tapegrad/nn/ngram_hash.hpp"

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
