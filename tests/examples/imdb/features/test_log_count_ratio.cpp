// Naive Bayes' log-count ratios: per hashed n-gram bucket (NgramLogCountRatio) and per token of a
// vocabulary (token_log_count_ratios), by hand, with errors named.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "examples/imdb/features/log_count_ratio.hpp"
#include "tapegrad/datasets/text/encode.hpp"
#include "tapegrad/datasets/text/vocab.hpp"

using namespace imdb::features;
using tapegrad::BoolArray;
using tapegrad::datasets::EncodedDataset;
using tapegrad::datasets::Vocabulary;
using Strings = std::vector<std::string>;

TEST_CASE("NgramLogCountRatio: naive Bayes' log-count ratios per bucket", "[imdb][features]") {
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
  // With min_documents 2 only bucket 39 ("5", in two documents) and 23 ("9", in two) keep a ratio; the
  // totals still count every bucket.
  const auto common = counts.ratio(1.0, 2);
  CHECK(common(39) == r(39));
  CHECK(common(23) == r(23));
  CHECK(common(31) == 0.0);
  CHECK(common(50) == 0.0);
  CHECK_THROWS_WITH(counts.add(ids, pad, xt::xarray<std::int64_t>{1, 2, 0}),
                    Catch::Contains("label 2 of document 1 is not 0 or 1"));
  CHECK_THROWS_WITH(counts.add(ids, pad, xt::xarray<std::int64_t>{1, 0}), Catch::Contains("must be [batch]"));
  CHECK_THROWS_WITH(counts.ratio(0.0), Catch::Contains("alpha 0 must be a finite number > 0"));
}

TEST_CASE("token log-count ratios: binarized naive Bayes, smoothed, with errors named", "[imdb][features]") {
  const Strings texts = {"good good film", "good plot", "bad film", "bad bad bad plot"};
  const auto v = Vocabulary::build(texts, 100);
  const auto data = EncodedDataset::encode_texts(
      texts.size(), [&](std::size_t i) -> std::string_view { return texts[i]; },
      [](std::size_t i) -> std::int64_t { return i < 2 ? 1 : 0; }, {0, 1, 2, 3}, v, 16);
  const auto r = token_log_count_ratios(data, v.size(), 1.0);
  REQUIRE(r.size() == v.size());
  // Per label, each token counted once per example, plus alpha = 1 for each of the 6 ids:
  // positive counts good 2, film 1, plot 1 (total 4 + 6), negative bad 2, film 1, plot 1 (total 4 + 6).
  CHECK(r[static_cast<std::size_t>(v.id("good"))] == Approx(std::log(3.0 / 10) - std::log(1.0 / 10)));
  CHECK(r[static_cast<std::size_t>(v.id("bad"))] == Approx(std::log(1.0 / 10) - std::log(3.0 / 10)));
  CHECK(r[static_cast<std::size_t>(v.id("film"))] == Approx(0.0).margin(1e-12));
  // A stronger prior pulls every ratio towards 0.
  CHECK(token_log_count_ratios(data, v.size(), 10.0)[static_cast<std::size_t>(v.id("good"))] <
        r[static_cast<std::size_t>(v.id("good"))]);
  CHECK_THROWS_WITH(token_log_count_ratios(data, v.size(), 0.0), "token_log_count_ratios: alpha 0 must be > 0");
  CHECK_THROWS_WITH(token_log_count_ratios(data, 3, 1.0),
                    Catch::Contains("token_log_count_ratios: example 0 holds id") && Catch::Contains("outside [0, 3)"));
  const auto three = EncodedDataset::encode_texts(
      1, [&](std::size_t) -> std::string_view { return "good"; }, [](std::size_t) -> std::int64_t { return 2; }, {0}, v,
      4);
  CHECK_THROWS_WITH(token_log_count_ratios(three, v.size()),
                    "token_log_count_ratios: example 0 has label 2, not 0 or 1");
}
