// Incremental decoding in nn: MultiheadAttention::forward_incremental and the encoder stack's, against a
// full causal pass, for both layouts; positions at an offset.
#include <catch2/catch.hpp>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/nn/positional_encoding.hpp"
#include "tapegrad/nn/transformer.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;

TEST_CASE("MultiheadAttention: forward_incremental equals the causal forward, either layout", "[nn]") {
  for (bool batch_first : {true, false}) {
    INFO("batch_first " << batch_first);
    Generator gen(3);
    MultiheadAttentionOptions o(8, 2);
    o.batch_first = batch_first;
    MultiheadAttention<double> mha(o, gen);
    const Tensor<double> x = testing::rand_input(batch_first ? Shape{2, 7, 8} : Shape{7, 2, 8}, 4);
    const Tensor<double> full = mha.forward(x, x, x, {}, false, {}, true, /*is_causal=*/true).first;
    KVCache<double> cache;
    const std::int64_t seq = batch_first ? 1 : 0;
    std::vector<Tensor<double>> parts;
    for (auto [start, n] : {std::pair{0, 3}, std::pair{3, 1}, std::pair{4, 3}}) {
      parts.push_back(mha.forward_incremental(narrow(x, seq, start, n), cache));
      CHECK(cache.length() == std::size_t(start + n));
    }
    CHECK(testing::allclose(cat(parts, seq).data(), full.data(), 1e-12, 1e-12));
    CHECK_THROWS_WITH(
        mha.forward_incremental(testing::rand_input(batch_first ? Shape{3, 1, 8} : Shape{1, 3, 8}, 5), cache),
        "MultiheadAttention.forward_incremental: x has batch 3 but the cache holds batch 2");
  }
}

TEST_CASE("TransformerEncoder: forward_incremental equals the causal forward, pre-LN and post-LN", "[nn]") {
  for (bool norm_first : {true, false}) {
    INFO("norm_first " << norm_first);
    Generator gen(5);
    TransformerLayerOptions o(8, 2);
    o.dim_feedforward = 16;
    o.batch_first = true;
    o.norm_first = norm_first;
    o.activation = Activation::GELU;
    TransformerEncoder<double> encoder(o, 2, gen, std::make_shared<LayerNorm<double>>(8));
    encoder.eval();
    const Tensor<double> x = testing::rand_input({2, 6, 8}, 6);
    const Tensor<double> full = encoder.forward(x, {}, {}, /*is_causal=*/true);
    std::vector<KVCache<double>> caches;
    std::vector<Tensor<double>> parts;
    for (std::int64_t t = 0; t < 6; ++t) parts.push_back(encoder.forward_incremental(narrow(x, 1, t, 1), caches));
    CHECK(caches.size() == 2);
    CHECK(testing::allclose(cat(parts, 1).data(), full.data(), 1e-12, 1e-12));
  }
}

TEST_CASE("positional encodings: an offset adds the rows from there on", "[nn]") {
  Generator gen(1);
  SinusoidalPositionalEncoding<double> sinusoidal(4, 10, /*batch_first=*/true);
  LearnedPositionalEmbedding<double> learned(10, 4, gen, /*batch_first=*/true);
  const Tensor<double> zeros = Tensor<double>::zeros({1, 3, 4});
  const Tensor<double> all = Tensor<double>::zeros({1, 10, 4});
  CHECK(testing::allclose(sinusoidal.forward(zeros, 7).data(), narrow(sinusoidal.forward(all), 1, 7, 3).data()));
  CHECK(testing::allclose(learned.forward(zeros, 7).data(), narrow(learned.forward(all), 1, 7, 3).data()));
  CHECK_THROWS_WITH(learned.forward(zeros, 8),
                    "LearnedPositionalEmbedding: positions 8..10 exceed max_len 10 (input [1, 3, 4] at offset 8)");
}
