// The count-based bigram baselines: hand-computed probabilities, normalization, scores and errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "tapegrad/models/ngram.hpp"

using namespace tapegrad::models;

namespace {
// Pairs: (2,3) x2, (3,2), (3,4), (4,2); vocabulary of 6 (ids 0, 1 and 5 never seen).
const std::vector<std::int64_t> kA = {2, 3, 2, 3, 4};
const std::vector<std::int64_t> kB = {4, 2};
}  // namespace

TEST_CASE("BigramLM: add-one and Kneser-Ney by hand, and every row sums to 1", "[ngram]") {
  BigramLM add_one(6, BigramSmoothing::AddOne);
  BigramLM kn(6, BigramSmoothing::KneserNey, 0.5);
  for (BigramLM* m : {&add_one, &kn}) {
    m->add_sequence(kA.data(), kA.size());
    m->add_sequence(kB.data(), kB.size());
  }
  CHECK(kn.distinct_pairs() == 4);
  // c(3) = 2: (3,2) and (3,4).
  CHECK(add_one.log_prob(3, 2) == Approx(std::log(2.0 / 8.0)));
  CHECK(add_one.log_prob(5, 0) == Approx(std::log(1.0 / 6.0)));
  // Continuations: N1+(.2) = 2 (after 3 and 4), N1+(.3) = 1, N1+(.4) = 1; 4 distinct pairs, 3 types.
  const auto pc = [](double n) { return std::max(n - 0.5, 0.0) / 4.0 + 0.5 * 3.0 / 4.0 / 6.0; };
  // P(2 | 3) = (1 - 0.5) / 2 + 0.5 * 2 / 2 * Pc(2).
  CHECK(kn.log_prob(3, 2) == Approx(std::log(0.25 + 0.5 * pc(2))));
  CHECK(kn.log_prob(3, 5) == Approx(std::log(0.5 * pc(0))));
  // An unseen context falls back to the continuation distribution.
  CHECK(kn.log_prob(0, 2) == Approx(std::log(pc(2))));
  for (const BigramLM* m : {&add_one, &kn}) {
    for (std::int64_t v = 0; v < 6; ++v) {
      double total = 0.0;
      for (std::int64_t w = 0; w < 6; ++w) total += std::exp(m->log_prob(v, w));
      CHECK(total == Approx(1.0).epsilon(1e-12));
    }
  }
  const auto s = kn.score_sequence(kA.data(), kA.size());
  CHECK(s.count == 4);
  CHECK(s.nll == Approx(-(2 * kn.log_prob(2, 3) + kn.log_prob(3, 2) + kn.log_prob(3, 4))));
  CHECK(kn.score_sequence(kA.data(), 1).count == 0);
}

TEST_CASE("BigramLM: errors name the value", "[ngram]") {
  CHECK_THROWS_WITH(BigramLM(0, BigramSmoothing::AddOne), "BigramLM: vocab_size must be positive");
  CHECK_THROWS_WITH(BigramLM(5, BigramSmoothing::KneserNey, 1.0), "BigramLM: discount must be in (0, 1), got 1");
  BigramLM m(5, BigramSmoothing::KneserNey);
  const std::vector<std::int64_t> bad = {1, 5};
  CHECK_THROWS_WITH(m.add_sequence(bad.data(), bad.size()), "BigramLM: id 5 is outside the vocabulary of 5 tokens");
  CHECK_THROWS_WITH(m.log_prob(-1, 2), "BigramLM: id -1 is outside the vocabulary of 5 tokens");
}
