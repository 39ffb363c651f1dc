// ClauseNegation: which clauses qualify, how they are negated (the verb or the subject), the labels
// flipped, the draws seeded per step, and errors.
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>
#include <xtensor/xarray.hpp>

#include "examples/imdb/features/clause_negation.hpp"
#include "tapegrad/datasets/text/vocab.hpp"

using namespace imdb::features;
using tapegrad::datasets::Vocabulary;
using Strings = std::vector<std::string>;

namespace {
// One text per row of a batch, tokenized with v, padded to cols.
std::pair<xt::xarray<std::int64_t>, xt::xarray<bool>> rows_of(const Vocabulary& v, const Strings& texts,
                                                              std::size_t cols) {
  xt::xarray<std::int64_t> ids = xt::zeros<std::int64_t>({texts.size(), cols});
  xt::xarray<bool> pad = xt::ones<bool>({texts.size(), cols});
  for (std::size_t r = 0; r < texts.size(); ++r) {
    const auto encoded = v.encode(texts[r]);
    for (std::size_t c = 0; c < encoded.size() && c < cols; ++c) {
      ids(r, c) = encoded[c];
      pad(r, c) = false;
    }
  }
  return {ids, pad};
}

std::string row_text(const Vocabulary& v, const xt::xarray<std::int64_t>& ids, const xt::xarray<bool>& pad,
                     std::size_t r) {
  std::string text;
  for (std::size_t c = 0; c < ids.shape(1) && !pad(r, c); ++c) text += (text.empty() ? "" : " ") + v.token(ids(r, c));
  return text;
}
}  // namespace

TEST_CASE("clause negation: a polar clause as written or negated with its label flipped, nothing else",
          "[imdb][features]") {
  const Strings texts = {
      "the acting was superb .",                                          // 0: qualifies (label 1)
      "i thought the film would be awful",                                // 1: "be" takes "not" before it (label 0)
      "the acting was superb .",                                          // 2: label 0: polarity disagrees
      "the acting was not superb , never .",                              // 3: already negated
      "the acting was superb and the plot awful .",                       // 4: a second polar word
      "it was awful , but the acting was truly a superb thing to see !",  // 5: the second clause only
      "the acting was so very truly superb .",                            // 6: three modifiers
      "one two three four five six seven the acting was superb a b c d e f g h i .",  // 7: cut
      "i would recommend it to anyone !"};                                            // 8: an auxiliary
  const auto v = Vocabulary::build(texts, 100);
  std::vector<double> polarity(v.size(), 0.1);
  polarity[static_cast<std::size_t>(v.id("superb"))] = 2.0;
  polarity[static_cast<std::size_t>(v.id("awful"))] = -2.0;
  polarity[static_cast<std::size_t>(v.id("recommend"))] = 2.0;
  const ClauseNegation negation(v, polarity, {1.0, 1.0});
  auto [ids, pad] = rows_of(v, texts, 24);
  const xt::xarray<std::int64_t> labels = {1, 0, 0, 1, 1, 1, 1, 1, 1};

  // Over many steps each qualifying row comes out as written or negated, about half and half.
  std::map<std::pair<std::string, std::int64_t>, int> seen[9];
  for (std::uint64_t step = 0; step < 200; ++step) {
    auto i = ids;
    auto p = pad;
    auto l = labels;
    const std::size_t rewritten = negation.apply(i, p, l, Vocabulary::pad_id, 5, step);
    CHECK(rewritten == 5);
    for (std::size_t r = 0; r < texts.size(); ++r) ++seen[r][{row_text(v, i, p, r), l(r)}];
  }
  using Seen = std::map<std::pair<std::string, std::int64_t>, int>;
  const auto outcomes = [](const Seen& s) {
    std::set<std::pair<std::string, std::int64_t>> keys;
    for (const auto& [key, count] : s) keys.insert(key);
    return keys;
  };
  using Outcomes = std::set<std::pair<std::string, std::int64_t>>;
  CHECK(outcomes(seen[0]) == Outcomes{{"the acting was superb .", 1},
                                      {"the acting was not superb .", 0},
                                      {"the acting was never superb .", 0}});
  CHECK(seen[0][{"the acting was superb .", 1}] > 70);
  CHECK(seen[0][{"the acting was superb .", 1}] < 130);
  CHECK(seen[0][{"the acting was never superb .", 0}] > 10);
  CHECK(seen[0][{"the acting was never superb .", 0}] < seen[0][{"the acting was not superb .", 0}]);
  CHECK(outcomes(seen[1]) == Outcomes{{"i thought the film would be awful", 0},
                                      {"i thought the film would not be awful", 1},
                                      {"i thought the film would never be awful", 1}});
  for (std::size_t r : {2, 3, 4, 6}) {
    CHECK(outcomes(seen[r]) == Outcomes{{texts[r], labels(r)}});
  }
  CHECK(outcomes(seen[5]) == Outcomes{{"the acting was truly a superb thing to see !", 1},
                                      {"the acting was not truly a superb thing to see !", 0},
                                      {"the acting was never truly a superb thing to see !", 0}});
  // Five tokens before the copula, six after the polar word, no closing "." when cut before it.
  CHECK(outcomes(seen[7]) == Outcomes{{"five six seven the acting was superb a b c d e f", 1},
                                      {"five six seven the acting was not superb a b c d e f", 0},
                                      {"five six seven the acting was never superb a b c d e f", 0}});
  CHECK(outcomes(seen[8]) == Outcomes{{"i would recommend it to anyone !", 1},
                                      {"i would not recommend it to anyone !", 0},
                                      {"i would never recommend it to anyone !", 0}});

  // Reproducible by (seed, step); p = 0 changes nothing.
  auto a = ids, b = ids;
  auto pa = pad, pb = pad;
  auto la = labels, lb = labels;
  negation.apply(a, pa, la, Vocabulary::pad_id, 5, 9);
  negation.apply(b, pb, lb, Vocabulary::pad_id, 5, 9);
  CHECK(bool(a == b));
  CHECK(bool(la == lb));
  auto untouched = ids;
  auto untouched_pad = pad;
  auto untouched_labels = labels;
  CHECK(ClauseNegation(v, polarity, {0.0, 1.0}).apply(untouched, untouched_pad, untouched_labels, 0, 5, 9) == 0);
  CHECK(bool(untouched == ids));
  CHECK(bool(untouched_labels == labels));
  // A negated row that would not fit its batch's width is left alone.
  auto [narrow, narrow_pad] = rows_of(v, {"the acting was superb"}, 4);
  xt::xarray<std::int64_t> one = {1};
  for (std::uint64_t step = 0; step < 20; ++step) {
    auto n = narrow;
    auto np = narrow_pad;
    auto l = one;
    negation.apply(n, np, l, 0, 5, step);
    CHECK(row_text(v, n, np, 0) == "the acting was superb");
    CHECK(l(0) == 1);
  }

  CHECK_THROWS_WITH(ClauseNegation(v, {0.5}, {0.5, 1.0}),
                    Catch::Contains("ClauseNegation: 1 polarities for a vocabulary of"));
  CHECK_THROWS_WITH(ClauseNegation(v, polarity, {1.5, 1.0}), "ClauseNegation: p must be in [0, 1], got 1.5");
  CHECK_THROWS_WITH(ClauseNegation(v, polarity, {0.5, 0.0}), "ClauseNegation: polarity_margin must be > 0, got 0");
  const auto no_not = Vocabulary::build(Strings{"the acting was superb"}, 100);
  CHECK_THROWS_WITH(ClauseNegation(no_not, std::vector<double>(no_not.size()), {0.5, 1.0}),
                    "ClauseNegation: the vocabulary has no \"not\"");
  xt::xarray<std::int64_t> wrong_labels = {1, 0};
  CHECK_THROWS_WITH(negation.apply(a, pa, wrong_labels, 0, 5, 9),
                    "ClauseNegation::apply: ids [9, 24] and padding_mask [9, 24] must share one [B, L] shape, "
                    "labels [2] must be [B]");
}

TEST_CASE("clause negation: the subject negated, where the clause has one and the vocabulary the words",
          "[imdb][features]") {
  const Strings texts = {"the acting was superb .", "it was awful !", "and this lead actor is superb", "i was superb",
                         "the words no none of nothing about not never"};
  const auto v = Vocabulary::build(texts, 100);
  std::vector<double> polarity(v.size(), 0.1);
  polarity[static_cast<std::size_t>(v.id("superb"))] = 2.0;
  polarity[static_cast<std::size_t>(v.id("awful"))] = -2.0;
  const ClauseNegation negation(v, polarity, {1.0, 1.0});
  auto [ids, pad] = rows_of(v, {texts[0], texts[1], texts[2], texts[3]}, 12);
  const xt::xarray<std::int64_t> labels = {1, 0, 1, 1};
  std::map<std::pair<std::string, std::int64_t>, int> seen[4];
  for (std::uint64_t step = 0; step < 400; ++step) {
    auto i = ids;
    auto p = pad;
    auto l = labels;
    CHECK(negation.apply(i, p, l, Vocabulary::pad_id, 7, step) == 4);
    for (std::size_t r = 0; r < 4; ++r) ++seen[r][{row_text(v, i, p, r), l(r)}];
  }
  using Key = std::pair<std::string, std::int64_t>;
  const auto keys = [](const std::map<Key, int>& s) {
    std::set<Key> out;
    for (const auto& kv : s) out.insert(kv.first);
    return out;
  };
  CHECK(keys(seen[0]) == std::set<Key>{{"the acting was superb .", 1},
                                       {"the acting was not superb .", 0},
                                       {"the acting was never superb .", 0},
                                       {"no acting was superb .", 0},
                                       {"none of the acting was superb .", 0}});
  // About a quarter of the negations negate the subject, split between "no" and "none of the".
  const int subject = seen[0][{"no acting was superb .", 0}] + seen[0][{"none of the acting was superb .", 0}];
  CHECK(subject > 25);
  CHECK(subject < 75);
  CHECK(seen[0][{"no acting was superb .", 0}] > 5);
  CHECK(seen[0][{"none of the acting was superb .", 0}] > 5);
  CHECK(keys(seen[1]) == std::set<Key>{{"it was awful !", 0},
                                       {"it was not awful !", 1},
                                       {"it was never awful !", 1},
                                       {"nothing about it was awful !", 1}});
  // "this" three words before the copula; the words before the clause's piece stay.
  CHECK(keys(seen[2]) == std::set<Key>{{"and this lead actor is superb", 1},
                                       {"and this lead actor is not superb", 0},
                                       {"and this lead actor is never superb", 0},
                                       {"and no lead actor is superb", 0},
                                       {"and none of the lead actor is superb", 0}});
  // No subject to negate: the verb only.
  CHECK(keys(seen[3]) == std::set<Key>{{"i was superb", 1}, {"i was not superb", 0}, {"i was never superb", 0}});
}

// ---- the real data ----
