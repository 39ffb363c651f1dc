// HashedNgramEmbedding: the sum of the rows of the n-grams ending at each position, gradients, errors.
#include <catch2/catch.hpp>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/nn/hashed_ngram_embedding.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;

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
