// embedding and the embedding bags: rows picked, scatter-added gradients, padding, modes and errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <type_traits>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/ops.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::testing;

TEST_CASE("embedding picks rows for ids of any shape", "[embedding]") {
  auto w = Tensor<double>::from_vector({0, 1, 10, 11, 20, 21, 30, 31}, {4, 2});
  auto y = embedding(w, ids({1, 3, 0, 1}, {2, 2}));
  CHECK(y.shape() == Shape{2, 2, 2});
  CHECK(allclose(y.data(), values({10, 11, 30, 31, 0, 1, 10, 11}, {2, 2, 2})));
  auto single = embedding(w, ids({2}, {}));
  CHECK(single.shape() == Shape{2});
  CHECK(allclose(single.data(), values({20, 21}, {2})));
  // The padding row is looked up as it is (only its gradient is suppressed), as in torch.
  CHECK(allclose(embedding(w, ids({3}, {1}), 3).data(), values({30, 31}, {1, 2})));
  CHECK(embedding(w, ids({}, {0})).shape() == Shape{0, 2});
}

TEST_CASE("embedding's backward scatter-adds repeated ids and skips padding_idx", "[embedding]") {
  // torch: ids [[1, 1], [3, 0]], padding_idx -1 (= 3), loss = sum -> rows [1, 1], [2, 2], [0, 0], [0, 0].
  auto w = Tensor<double>::from_vector({0, 1, 10, 11, 20, 21, 30, 31}, {4, 2}, true);
  auto y = embedding(w, ids({1, 1, 3, 0}, {2, 2}), -1);
  y.backward(xt::xarray<double>(xt::ones<double>({2, 2, 2})));
  CHECK(allclose(w.grad(), values({1, 1, 2, 2, 0, 0, 0, 0}, {4, 2})));
  CHECK(y.grad_fn_name() == "embedding");
}

TEST_CASE("embedding passes gradcheck with repeated ids and padding_idx", "[embedding][gradcheck]") {
  const IndexArray batch = ids({0, 2, 2, 4, 1, 2}, {2, 3});
  CHECK_GRADCHECK([&](const Inputs& in) { return embedding(in[0], batch); }, (Inputs{rand_input({5, 3}, 71)}));
  // The padding row is read in the forward but, by definition, gets no gradient; finite differences
  // see it, so the check zeroes the outputs that read it and compares every other row. That the
  // padding row's gradient is exactly zero is checked directly below.
  for (std::int64_t padding_idx : {2, -3, 0, -5}) {
    INFO("padding_idx " << padding_idx);
    const std::int64_t pad = padding_idx < 0 ? padding_idx + 5 : padding_idx;
    BoolArray reads_pad = BoolArray::from_shape({2, 3, 1});
    for (std::size_t i = 0; i < batch.size(); ++i) reads_pad.data()[i] = batch.data()[i] == pad;
    CHECK_GRADCHECK([&](const Inputs& in) { return masked_fill(embedding(in[0], batch, padding_idx), reads_pad, 0.0); },
                    (Inputs{rand_input({5, 3}, 72)}));
    auto w = rand_input({5, 3}, 73);
    embedding(w, batch, padding_idx).backward(xt::xarray<double>(xt::ones<double>({2, 3, 3})));
    for (std::size_t j = 0; j < 3; ++j) CHECK(w.grad()(pad, j) == 0.0);
    CHECK(w.grad()(3, 0) == 0.0);                // never used
    if (pad != 2) CHECK(w.grad()(2, 1) == 3.0);  // used three times
  }
}

TEST_CASE("embedding errors name the id, its position and the table size", "[embedding][errors]") {
  auto w = Tensor<double>::zeros({4, 2});
  CHECK_THROWS_AS(embedding(w, ids({0, 4}, {2})), ShapeError);
  CHECK_THROWS_AS(embedding(w, ids({0, 4}, {2})), std::invalid_argument);
  CHECK_THROWS_WITH(embedding(w, ids({0, 1, 2, 7}, {2, 2})),
                    Catch::Contains("id 7") && Catch::Contains("position [1, 1]") && Catch::Contains("4 embeddings"));
  CHECK_THROWS_WITH(embedding(w, ids({-1}, {1})), Catch::Contains("id -1") && Catch::Contains("position [0]"));
  CHECK_THROWS_WITH(embedding(w, ids({0}, {1}), 4),
                    Catch::Contains("padding_idx 4") && Catch::Contains("4 embeddings"));
  CHECK_THROWS_WITH(embedding(w, ids({0}, {1}), -5), Catch::Contains("padding_idx -5"));
  CHECK_THROWS_WITH(embedding(Tensor<double>::zeros({4}), ids({0}, {1})),
                    Catch::Contains("embedding") && Catch::Contains("[4]"));
}

TEST_CASE("embedding_bag_sum sums each bag's rows, and padding ids add nothing, not even their row", "[embedding]") {
  // torch: F.embedding_bag(ids.view(-1, 3), w, mode="sum", padding_idx=0) on the rows below.
  auto w = Tensor<double>::from_vector({5, 6, 10, 11, 20, 21, 30, 31}, {4, 2}, true);
  auto y = embedding_bag_sum(w, ids({1, 1, 3, 0, 2, 0}, {2, 3}), 0);
  CHECK(y.shape() == Shape{2, 2});
  CHECK(allclose(y.data(), values({50, 53, 20, 21}, {2, 2})));
  y.backward(xt::xarray<double>(xt::ones<double>({2, 2})));
  CHECK(allclose(w.grad(), values({0, 0, 2, 2, 1, 1, 1, 1}, {4, 2})));
  CHECK(y.grad_fn_name() == "embedding_bag_sum");
  // Without padding_idx row 0 counts like any other; bags of zero members give zeros.
  CHECK(allclose(embedding_bag_sum(w, ids({0, 1}, {1, 2})).data(), values({15, 17}, {1, 2})));
  CHECK(embedding_bag_sum(w, ids({}, {3, 0})).data() == xt::xarray<double>(xt::zeros<double>({3, 2})));
  // Every row, padding included, is checked by gradcheck: padding really does not reach the output.
  const IndexArray bags = ids({0, 2, 2, 4, 1, 0, 3, 3, 0}, {3, 3});
  CHECK_GRADCHECK([&](const Inputs& in) { return embedding_bag_sum(in[0], bags, 0); },
                  (Inputs{rand_input({5, 3}, 74)}));
  CHECK_GRADCHECK([&](const Inputs& in) { return embedding_bag_sum(in[0], bags); }, (Inputs{rand_input({5, 3}, 75)}));
  CHECK_THROWS_WITH(embedding_bag_sum(w, ids({0, 9}, {1, 2})),
                    Catch::Contains("embedding_bag_sum: id 9") && Catch::Contains("position [0, 1]"));
  CHECK_THROWS_WITH(embedding_bag_sum(w, ids({1}, {})), Catch::Contains("at least one dimension"));
}

TEST_CASE("embedding_bag_sum with per_sample_weights: each member's row times its weight, both with gradients",
          "[embedding]") {
  // torch 1.13: F.embedding_bag(ids.view(-1), w, offsets=[0, 3], mode="sum", per_sample_weights=s.view(-1),
  // padding_idx=0), backward with the upstream gradient below.
  auto w = Tensor<double>::from_vector({5, 6, 10, 11, 20, 21, 30, 31}, {4, 2}, true);
  auto s = Tensor<double>::from_vector({0.5, 2.0, -1.0, 7.0, 3.0, 9.0}, {2, 3}, true);
  auto y = embedding_bag_sum(w, ids({1, 1, 3, 0, 2, 0}, {2, 3}), 0, s);
  // Bag 0: 0.5 * row 1 + 2 * row 1 - row 3; bag 1: 3 * row 2 (the padding members add nothing).
  CHECK(allclose(y.data(), values({-5, -3.5, 60, 63}, {2, 2})));
  y.backward(values({1, 2, 3, -1}, {2, 2}));
  CHECK(allclose(w.grad(), values({0, 0, 2.5, 5, 9, -3, -1, -2}, {4, 2})));
  // Each weight: its bag's gradient times its row ((1, 2) . (10, 11) = 32, ...); padding members 0.
  CHECK(allclose(s.grad(), values({32, 32, 92, 0, 39, 0}, {2, 3})));
  // Weights of 1 are the plain sum; gradcheck through the table and through the weights.
  const IndexArray bags = ids({0, 2, 2, 4, 1, 0, 3, 3, 0}, {3, 3});
  const Tensor<double> table = rand_input({5, 3}, 76);
  CHECK(allclose(embedding_bag_sum(table, bags, 0, Tensor<double>::ones({3, 3})).data(),
                 embedding_bag_sum(table, bags, 0).data()));
  CHECK_GRADCHECK([&](const Inputs& in) { return embedding_bag_sum(in[0], bags, 0, in[1]); },
                  (Inputs{rand_input({5, 3}, 78), rand_input({3, 3}, 77)}));
  CHECK_GRADCHECK([&](const Inputs& in) { return embedding_bag_sum(in[0], bags, std::nullopt, in[1]); },
                  (Inputs{rand_input({5, 3}, 79), rand_input({3, 3}, 80)}));
  // Constant weights (no grad) scale the table's gradient alone; a table without grad still gives
  // the weights theirs.
  const Tensor<double> fixed(rand_input({3, 3}, 77).data());
  CHECK_GRADCHECK([&](const Inputs& in) { return embedding_bag_sum(in[0], bags, 0, fixed); },
                  (Inputs{rand_input({5, 3}, 78)}));
  const Tensor<double> frozen(rand_input({5, 3}, 78).data());
  CHECK_GRADCHECK([&](const Inputs& in) { return embedding_bag_sum(frozen, bags, 0, in[0]); },
                  (Inputs{rand_input({3, 3}, 77)}));
  CHECK_THROWS_WITH(embedding_bag_sum(w, ids({1, 2}, {1, 2}), 0, Tensor<double>::ones({2})),
                    Catch::Contains("per_sample_weights [2] must have the shape of ids [1, 2]"));
}

TEST_CASE("embedding_bag with offsets: bags of any length, empty ones zero, as torch 1.13", "[embedding]") {
  // torch 1.13: F.embedding_bag(input, w, offsets, mode=..., padding_idx=0) with these rows; bags [1 2],
  // [], [3 1 0], [4 4].
  auto w = Tensor<double>::from_vector({9, 9, 1, -2, 3, 0.5, -1, 4, 2, 2}, {5, 2}, true);
  const IndexArray input = ids({1, 2, 3, 1, 0, 4, 4}, {7});
  const IndexArray offsets = ids({0, 2, 2, 5}, {4});
  auto sum = embedding_bag(w, input, offsets, EmbeddingBagMode::Sum, 0);
  CHECK(sum.data() == values({4, -1.5, 0, 0, 0, 2, 4, 4}, {4, 2}));
  CHECK(sum.grad_fn_name() == "embedding_bag");
  sum.backward(values({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}));
  CHECK(w.grad() == values({0, 0, 6, 8, 1, 2, 5, 6, 14, 16}, {5, 2}));
  w.zero_grad();
  auto mean = embedding_bag(w, input, offsets, EmbeddingBagMode::Mean, 0);
  CHECK(mean.data() == values({2, -0.75, 0, 0, 0, 1, 2, 2}, {4, 2}));
  mean.backward(values({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}));
  CHECK(w.grad() == values({0, 0, 3, 4, 0.5, 1, 2.5, 3, 7, 8}, {5, 2}));
  // include_last_offset: the same bags, the last one ending at the input's length.
  CHECK(embedding_bag(w, input, ids({0, 2, 2, 5, 7}, {5}), EmbeddingBagMode::Sum, 0, true).data() == sum.data());
  // Bags of equal length are the fixed-length form.
  const IndexArray fixed = ids({1, 2, 3, 1, 0, 4}, {3, 2});
  for (auto mode : {EmbeddingBagMode::Sum, EmbeddingBagMode::Mean, EmbeddingBagMode::Max})
    CHECK(embedding_bag(w, ids({1, 2, 3, 1, 0, 4}, {6}), ids({0, 2, 4}, {3}), mode).data() ==
          embedding_bag(w, fixed, mode).data());
  // No offsets: no bags.
  CHECK(embedding_bag(w, input, ids({}, {0}), EmbeddingBagMode::Sum).shape() == Shape{0, 2});
}

TEST_CASE("embedding_bag mode max: each column's maximum, its gradient to the row it came from", "[embedding]") {
  // Rows 1 and 2 are equal: in bag [1 2] every column ties and, as in torch 1.13, the earlier member (row 1)
  // takes the gradient; bag [3 1 0] with padding_idx 0 takes column 0 from row 1, column 1 from row 3.
  auto w = Tensor<double>::from_vector({9, 9, 1, -2, 1, -2, 0.5, 4, 2, 2}, {5, 2}, true);
  auto y = embedding_bag(w, ids({1, 2, 3, 1, 0, 4, 4, 0}, {8}), ids({0, 2, 2, 5, 7}, {5}), EmbeddingBagMode::Max, 0);
  CHECK(y.data() == values({1, -2, 0, 0, 1, 4, 2, 2, 0, 0}, {5, 2}));
  y.backward(values({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {5, 2}));
  // Row 4 twice in a bag gets the bag's gradient once; the empty bag and the bag of padding give none.
  CHECK(w.grad() == values({0, 0, 6, 2, 0, 0, 0, 6, 7, 8}, {5, 2}));
  // gradcheck where no column ties (ties are not differentiable).
  const IndexArray input = ids({0, 2, 2, 4, 1, 0, 3, 3, 1}, {9});
  const IndexArray offsets = ids({0, 3, 3, 5}, {4});
  CHECK_GRADCHECK([&](const Inputs& in) { return embedding_bag(in[0], input, offsets, EmbeddingBagMode::Max, 1); },
                  (Inputs{rand_input({5, 3}, 81)}));
  CHECK_GRADCHECK([&](const Inputs& in) { return embedding_bag(in[0], input, offsets, EmbeddingBagMode::Mean, 0); },
                  (Inputs{rand_input({5, 3}, 82)}));
  CHECK_GRADCHECK(
      [&](const Inputs& in) {
        return embedding_bag(in[0], ids({0, 2, 4, 1}, {2, 2}), EmbeddingBagMode::Max);
      },
      (Inputs{rand_input({5, 3}, 83)}));
  CHECK_GRADCHECK(
      [&](const Inputs& in) { return embedding_bag(in[0], input, offsets, EmbeddingBagMode::Sum, 0, false, in[1]); },
      (Inputs{rand_input({5, 3}, 85), rand_input({9}, 84)}));
  CHECK_GRADCHECK(
      [&](const Inputs& in) {
        return embedding_bag(in[0], ids({0, 2, 4, 1}, {2, 2}), EmbeddingBagMode::Sum, 2, in[1]);
      },
      (Inputs{rand_input({5, 3}, 86), rand_input({2, 2}, 87)}));
}

TEST_CASE("embedding_bag errors name the offsets, the lengths and the mode", "[embedding][errors]") {
  auto w = Tensor<double>::zeros({5, 2});
  const IndexArray input = ids({1, 2, 3, 4}, {4});
  const auto sum = EmbeddingBagMode::Sum;
  CHECK_THROWS_WITH(embedding_bag(w, ids({1, 2, 3, 4}, {2, 2}), ids({0}, {1}), sum),
                    Catch::Contains("input must be 1-D") && Catch::Contains("[2, 2]"));
  CHECK_THROWS_WITH(embedding_bag(w, input, ids({0, 1}, {1, 2}), sum),
                    Catch::Contains("offsets must be 1-D") && Catch::Contains("[1, 2]"));
  CHECK_THROWS_WITH(embedding_bag(w, input, ids({1, 2}, {2}), sum),
                    Catch::Contains("offsets[0] must be 0") && Catch::Contains("got 1"));
  CHECK_THROWS_WITH(embedding_bag(w, input, ids({0, 3, 2}, {3}), sum),
                    Catch::Contains("offsets[2] = 2 after offsets[1] = 3"));
  CHECK_THROWS_WITH(embedding_bag(w, input, ids({0, 5}, {2}), sum),
                    Catch::Contains("offsets[1] = 5") && Catch::Contains("4 ids"));
  CHECK_THROWS_WITH(embedding_bag(w, input, ids({0, 2, 3}, {3}), sum, std::nullopt, true),
                    Catch::Contains("include_last_offset") && Catch::Contains("length 4, got 3"));
  CHECK_THROWS_WITH(embedding_bag(w, input, ids({}, {0}), sum, std::nullopt, true),
                    Catch::Contains("include_last_offset") && Catch::Contains("got none"));
  CHECK_THROWS_WITH(embedding_bag(w, ids({1, 7}, {2}), ids({0}, {1}), sum),
                    Catch::Contains("id 7") && Catch::Contains("5 embeddings"));
  CHECK_THROWS_WITH(
      embedding_bag(w, input, ids({0}, {1}), EmbeddingBagMode::Max, std::nullopt, false, Tensor<double>::ones({4})),
      Catch::Contains("mode Sum") && Catch::Contains("got mode max"));
  CHECK_THROWS_WITH(embedding_bag(w, input, ids({0}, {1}), sum, std::nullopt, false, Tensor<double>::ones({3})),
                    Catch::Contains("per_sample_weights [3] must have the shape of ids [4]"));
}
