// Functional ops: softmax, losses, layer_norm and rms_norm, dropout, embedding and embedding bags, rotary
// embeddings, gather and index_select, topk, sort, one_hot, normalize, cosine_similarity, masking and tril / triu.
// Reference numbers come from torch 1.13 (float64) or are computed by hand in the test.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <type_traits>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/autograd/vector_math.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::allclose;
using tapegrad::testing::rand_input;

namespace {
using Inputs = std::vector<Tensor<double>>;

xt::xarray<double> values(const std::vector<double>& v, const Shape& shape) {
  return Tensor<double>::from_vector(v, shape).data();
}
// sin(0.37 * i) for i = 0..23 as [2, 3, 4]: the input of the torch reference values below.
Tensor<double> wave_2x3x4(bool requires_grad = false) {
  std::vector<double> v(24);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37 * static_cast<double>(i));
  return Tensor<double>::from_vector(v, {2, 3, 4}, requires_grad);
}
IndexArray ids(const std::vector<std::int64_t>& v, const Shape& shape) {
  IndexArray a = IndexArray::from_shape(shape);
  std::copy(v.begin(), v.end(), a.begin());
  return a;
}
BoolArray mask(const std::vector<bool>& v, const Shape& shape) {
  BoolArray a = BoolArray::from_shape(shape);
  std::copy(v.begin(), v.end(), a.begin());
  return a;
}
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

// ---------------------------------------------------------------------------------------------- softmax

TEST_CASE("softmax and log_softmax of [1, 2, 3] match the known values", "[softmax]") {
  auto x = Tensor<double>::from_vector({1, 2, 3}, {3});
  CHECK(allclose(softmax(x, 0).data(), values({0.09003057317038046, 0.24472847105479764, 0.6652409557748219}, {3}),
                 1e-12));
  CHECK(allclose(log_softmax(x, -1).data(), values({-2.40760596444438, -1.40760596444438, -0.40760596444438}, {3}),
                 1e-12));
  // Along dim 0 of a matrix: each column is normalized. 1 / (1 + e^2) and 1 / (1 + e^3).
  auto m = Tensor<double>::from_vector({1, 2, 3, 5}, {2, 2});
  const double a = 1 / (1 + std::exp(2.0)), b = 1 / (1 + std::exp(3.0));
  CHECK(allclose(softmax(m, 0).data(), values({a, b, 1 - a, 1 - b}, {2, 2}), 1e-12));
  // A 0-d tensor is a slice of one element.
  CHECK(softmax(Tensor<double>::scalar(3.0), -1).item() == 1.0);
}

TEST_CASE("softmax along a middle and a leading dim matches torch", "[softmax]") {
  const auto x = wave_2x3x4();
  const auto expected_softmax_dim1 =
      values({0.20387196611325123, 0.29419743153561767, 0.41151884887124385, 0.5339195729209903,  0.5519033962984332,
              0.5358803179893432,  0.4650441675022357,  0.36818696680406365, 0.24422463758831567, 0.16992225047503912,
              0.12343698362652042, 0.09789346027494604, 0.10785054875273939, 0.09048163852677286, 0.09174091727948196,
              0.10911123749329603, 0.19807065916796035, 0.24646041855058382, 0.32362216497141955, 0.42027631958504436,
              0.6940787920793002,  0.6630579429226433,  0.5846369177490985,  0.4706124429216595},
             {2, 3, 4});
  CHECK(allclose(softmax(x, 1).data(), expected_softmax_dim1, 1e-12));
  CHECK(allclose(softmax(x, -2).data(), expected_softmax_dim1, 1e-12));
  const auto expected_log_softmax_dim0 = values(
      {-0.3233116936671358, -0.229101113259404,   -0.1895319126782515,  -0.189876995364802,  -0.23027513625304577,
       -0.325714422929965,  -0.5016338363035874,  -0.7737875346447326,  -1.1153244418132755, -1.4508330210462035,
       -1.6926011467463773, -1.7781581200628482,  -1.2864426242404523,  -1.5859563709935287, -1.7564675037346313,
       -1.7548155383211117, -1.5814095407787285,  -1.2801749858304947,  -0.9302387979672895, -0.6185272241871939,
       -0.3972126138958816, -0.26706274276269965, -0.20339017194501982, -0.18506416797850214},
      {2, 3, 4});
  CHECK(allclose(log_softmax(x, 0).data(), expected_log_softmax_dim0, 1e-12));
}

TEST_CASE("softmax subtracts the max: huge logits do not overflow, in float too", "[softmax]") {
  auto x = Tensor<float>::from_vector({1000.f, 1000.f, -1000.f, 2000.f, 2001.f, 1999.f}, {2, 3});
  const auto y = softmax(x, 1).data();
  CHECK(y(0, 0) == Approx(0.5f));
  CHECK(y(0, 1) == Approx(0.5f));
  CHECK(y(0, 2) == 0.f);
  CHECK(y(1, 1) == Approx(1 / (1 + std::exp(-1.f) + std::exp(-2.f))));
  const auto ly = log_softmax(x, 1).data();
  CHECK(std::isfinite(ly(0, 2)));
  CHECK(ly(0, 2) == Approx(-2000.f - std::log(2.f)));
}

TEST_CASE("log-probabilities near 0 keep their precision for logits far from 0, in float", "[softmax][loss]") {
  // log p = -log(1 + e^-10) = -4.54e-5. Folding the max into the log-sum first, 1000 + 4.54e-5,
  // would round it to a multiple of ulp(1000) = 6.1e-5, i.e. 34% or 100% off. What remains is the
  // rounding of 1 + e^-10 in the sum (0.13% at most).
  const float expected = -std::log1p(std::exp(-10.f));
  const auto rows = Tensor<float>::from_vector({1000.f, 990.f}, {1, 2});
  CHECK(log_softmax(rows, 1).data()(0, 0) == Approx(expected).epsilon(1e-2));
  const auto strided = Tensor<float>::from_vector({1000.f, 1000.f, 990.f, 990.f}, {2, 2});
  CHECK(log_softmax(strided, 0).data()(0, 1) == Approx(expected).epsilon(1e-2));
  CHECK(cross_entropy(rows, ids({0}, {1})).item() == Approx(-expected).epsilon(1e-2));
}

TEST_CASE("a fully masked (all -inf) softmax row gives NaN as in torch, and other rows are unaffected", "[softmax]") {
  auto x = Tensor<double>::from_vector({1, 2, 3, -kInf, -kInf, -kInf, 0, -kInf, 0}, {3, 3}, true);
  auto y = softmax(x, 1);
  for (std::size_t j = 0; j < 3; ++j) CHECK(std::isnan(y.data()(1, j)));
  CHECK(y.data()(0, 2) == Approx(0.6652409557748219));
  CHECK(y.data()(2, 0) == 0.5);
  CHECK(y.data()(2, 1) == 0.0);  // a partly masked row is fine
  y.backward(values({1, 2, 3, 1, 2, 3, 1, 2, 3}, {3, 3}));
  for (std::size_t j = 0; j < 3; ++j) {
    CHECK(std::isnan(x.grad()(1, j)));
    CHECK(std::isfinite(x.grad()(0, j)));
  }
  // torch: softmax backward of [1, 2, 3] with g = [1, 2, 3] is [-0.1418, -0.1408, 0.2826].
  CHECK(x.grad()(0, 0) == Approx(0.09003057317038046 * (1 - 2.5752103826044214)));
  // log_softmax of a masked row is NaN too, even for one-element slices (torch gives NaN as well).
  auto lx = Tensor<double>::from_vector({-kInf, -kInf}, {1, 2});
  for (std::int64_t dim : {0, 1}) {
    const auto ly = log_softmax(lx, dim).data();
    CHECK(std::isnan(ly(0, 0)));
    CHECK(std::isnan(ly(0, 1)));
  }
}

// The float conversion and the shift inside fast_exp were undefined for NaN (NaN -> int32, then a
// negative value shifted); the sanitizer stage of .ci/run (float-cast-overflow, shift) catches a relapse.
TEST_CASE("fast_exp: NaN in gives NaN out, infinities and huge inputs saturate", "[softmax]") {
  using tapegrad::detail::fast_exp;
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(fast_exp(nan)));
  CHECK(std::isnan(fast_exp(-nan)));
  CHECK(fast_exp(inf) == inf);
  CHECK(fast_exp(-inf) == 0.0f);
  CHECK(fast_exp(1e30f) == inf);
  CHECK(fast_exp(std::numeric_limits<float>::max()) == inf);
  CHECK(fast_exp(-1e30f) == 0.0f);
  CHECK(fast_exp(-std::numeric_limits<float>::max()) == 0.0f);
  CHECK(fast_exp(0.0f) == 1.0f);
  for (float x : {-86.9f, -50.0f, -1.0f, 0.5f, 10.0f, 87.9f}) {
    INFO(x);
    CHECK(std::abs(fast_exp(x) - std::exp(x)) <= 4e-7f * std::exp(x));
  }
  // What reaches it in practice: a softmax row holding a NaN is NaN, the other rows are unaffected.
  const auto x = Tensor<float>::from_vector({1.0f, nan, 2.0f, 0.0f, 1.0f, 2.0f}, {2, 3});
  const auto y = softmax(x, -1).data();
  for (std::size_t j = 0; j < 3; ++j) CHECK(std::isnan(y(0, j)));
  CHECK(y(1, 2) == Approx(0.66524096).epsilon(1e-6));
}

TEST_CASE("softmax and log_softmax pass gradcheck along every dim", "[softmax][gradcheck]") {
  for (std::int64_t dim : {0, 1, 2, -1, -2, -3}) {
    INFO("dim " << dim);
    CHECK_GRADCHECK([dim](const Inputs& in) { return softmax(in[0], dim); },
                    (Inputs{rand_input({2, 3, 4}, 11, -2, 2)}));
    CHECK_GRADCHECK([dim](const Inputs& in) { return log_softmax(in[0], dim); },
                    (Inputs{rand_input({2, 3, 4}, 12, -2, 2)}));
  }
  CHECK_GRADCHECK([](const Inputs& in) { return softmax(in[0], 0); }, (Inputs{rand_input({5}, 13)}));
  CHECK_GRADCHECK([](const Inputs& in) { return log_softmax(in[0], -1); }, (Inputs{rand_input({4, 7}, 14)}));
  CHECK_GRADCHECK([](const Inputs& in) { return softmax(in[0], 1); }, (Inputs{rand_input({3, 1, 2}, 15)}));
}

TEST_CASE("softmax errors name the dim and the rank", "[softmax][errors]") {
  auto x = Tensor<double>::zeros({2, 3});
  CHECK_THROWS_AS(softmax(x, 2), std::invalid_argument);
  CHECK_THROWS_WITH(softmax(x, 2), Catch::Contains("softmax") && Catch::Contains("dim 2") && Catch::Contains("rank 2"));
  CHECK_THROWS_WITH(log_softmax(x, -3), Catch::Contains("log_softmax") && Catch::Contains("dim -3"));
  CHECK_THROWS_WITH(softmax(Tensor<double>::scalar(1.0), 1), Catch::Contains("dim 1"));
}

// ------------------------------------------------------------------------------------------------- loss

TEST_CASE("cross_entropy with label smoothing matches a hand computation for each reduction", "[loss]") {
  // Row 0: logits [1, 2, 3], target 2; row 1: logits [0, 0, 0], target 0; eps = 0.2.
  auto x = Tensor<double>::from_vector({1, 2, 3, 0, 0, 0}, {2, 3});
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  const double eps = 0.2;
  const double row0 = (1 - eps) * (lse - 3) + eps * ((lse - 1) + (lse - 2) + (lse - 3)) / 3;
  const double row1 = std::log(3.0);                         // uniform: every -log p_c is log 3
  CHECK(row0 == Approx(0.6076059644443805).epsilon(1e-12));  // torch's value
  CrossEntropyOptions o;
  o.label_smoothing = eps;
  o.reduction = Reduction::None;
  CHECK(allclose(cross_entropy(x, ids({2, 0}, {2}), o).data(), values({row0, row1}, {2}), 1e-12));
  o.reduction = Reduction::Sum;
  CHECK(cross_entropy(x, ids({2, 0}, {2}), o).item() == Approx(1.7062182531124903).epsilon(1e-12));
  o.reduction = Reduction::Mean;
  CHECK(cross_entropy(x, ids({2, 0}, {2}), o).item() == Approx(0.8531091265562452).epsilon(1e-12));
  // Without smoothing it is -log softmax at the target.
  CHECK(cross_entropy(x, ids({2, 0}, {2})).item() == Approx(((lse - 3) + row1) / 2).epsilon(1e-12));
  // An unbatched [C] input with a 0-d target gives a 0-d loss for every reduction.
  o.reduction = Reduction::None;
  auto single = cross_entropy(Tensor<double>::from_vector({1, 2, 3}, {3}), ids({2}, {}), o);
  CHECK(single.shape().empty());
  CHECK(single.item() == Approx(0.6076059644443805).epsilon(1e-12));
}

TEST_CASE("cross_entropy ignore_index: ignored samples add nothing and are not counted", "[loss]") {
  auto x = Tensor<double>::from_vector({1, 2, 3, 0, 0, 0}, {2, 3});
  CrossEntropyOptions o;
  o.label_smoothing = 0.2;
  CHECK(cross_entropy(x, ids({2, -100}, {2}), o).item() == Approx(0.6076059644443805).epsilon(1e-12));
  o.ignore_index = 1;
  o.reduction = Reduction::None;
  CHECK(allclose(cross_entropy(x, ids({2, 1}, {2}), o).data(), values({0.6076059644443805, 0.0}, {2}), 1e-12));
  // Everything ignored: Mean is 0/0 = NaN and Sum is 0, as in torch; no gradient flows.
  auto y = Tensor<double>::from_vector({0.5, -1, 2, 1.5}, {2, 2}, true);
  CrossEntropyOptions all;
  all.label_smoothing = 0.1;
  auto mean_loss = cross_entropy(y, ids({-100, -100}, {2}), all);
  CHECK(std::isnan(mean_loss.item()));
  mean_loss.backward();
  CHECK(allclose(y.grad(), values({0, 0, 0, 0}, {2, 2})));
  all.reduction = Reduction::Sum;
  CHECK(cross_entropy(y, ids({-100, -100}, {2}), all).item() == 0.0);
  CHECK(std::isnan(cross_entropy(Tensor<double>::from_vector({1, 2}, {2}), ids({-100}, {})).item()));
  CHECK(std::isnan(nll_loss(y, ids({-100, -100}, {2})).item()));
}

TEST_CASE("cross_entropy edge cases: empty batch, -inf logits, recording or not", "[loss]") {
  // torch: an empty batch has Mean NaN and Sum 0.
  auto empty = Tensor<double>::zeros({0, 3});
  CHECK(std::isnan(cross_entropy(empty, IndexArray::from_shape({0})).item()));
  CrossEntropyOptions sum;
  sum.reduction = Reduction::Sum;
  CHECK(cross_entropy(empty, IndexArray::from_shape({0}), sum).item() == 0.0);
  // A -inf logit off the target is probability 0; without smoothing the loss stays finite (torch: 0).
  auto x = Tensor<double>::from_vector({0, -kInf}, {1, 2}, true);
  auto loss = cross_entropy(x, ids({0}, {1}));
  CHECK(loss.item() == 0.0);
  loss.backward();
  CHECK(allclose(x.grad(), values({0, 0}, {1, 2})));
  // The value does not depend on whether the backward is recorded.
  auto logits = rand_input({4, 5}, 24, -3, 3);
  CrossEntropyOptions o;
  o.label_smoothing = 0.3;
  const double recorded = cross_entropy(logits, ids({0, 4, 2, 1}, {4}), o).item();
  NoGradGuard no_grad;
  CHECK(cross_entropy(logits, ids({0, 4, 2, 1}, {4}), o).item() == recorded);
}

TEST_CASE("cross_entropy's fused gradient matches torch (softmax minus the smoothed one-hot)", "[loss]") {
  auto x = Tensor<double>::from_vector({0.5, -1.0, 2.0, 0.0, 1.5, 0.3, -0.7, 0.2, 0.0, 0.0, 1.0, -2.0}, {3, 4}, true);
  CrossEntropyOptions o;
  o.label_smoothing = 0.1;
  auto loss = cross_entropy(x, ids({2, -100, 3}, {3}), o);
  CHECK(loss.item() == Approx(1.954786902798657).epsilon(1e-12));
  loss.backward();
  CHECK(allclose(x.grad(),
                 values({0.06672235475748987, 0.005176896704374434, -0.10745003855691287, 0.03555078709504861, 0, 0, 0,
                         0, 0.09051595459500929, 0.09051595459500929, 0.2675263974169758, -0.4485583066069944},
                        {3, 4}),
                 1e-10, 1e-14));
  CHECK(loss.grad_fn_name() == "cross_entropy");
}

TEST_CASE("cross_entropy passes gradcheck for each reduction, ignore_index and label smoothing", "[loss][gradcheck]") {
  const IndexArray target = ids({1, 3, -100, 0, 3}, {5});
  for (auto reduction : {Reduction::None, Reduction::Mean, Reduction::Sum})
    for (double eps : {0.0, 0.25, 1.0}) {
      INFO("reduction " << static_cast<int>(reduction) << ", label_smoothing " << eps);
      CrossEntropyOptions o;
      o.reduction = reduction;
      o.label_smoothing = eps;
      CHECK_GRADCHECK([&](const Inputs& in) { return cross_entropy(in[0], target, o); },
                      (Inputs{rand_input({5, 4}, 21, -3, 3)}));
      CHECK_GRADCHECK([&](const Inputs& in) { return cross_entropy(in[0], ids({2}, {}), o); },
                      (Inputs{rand_input({6}, 22, -3, 3)}));
    }
  CrossEntropyOptions custom;
  custom.ignore_index = 3;
  custom.label_smoothing = 0.3;
  CHECK_GRADCHECK(
      [&](const Inputs& in) {
        return cross_entropy(in[0], ids({1, 3, 2, 0, 3}, {5}), custom);
      },
      (Inputs{rand_input({5, 4}, 23, -3, 3)}));
}

TEST_CASE("nll_loss picks -input at the target with torch's reductions", "[loss]") {
  auto lp = Tensor<double>::from_vector({-1, -2, -3, -0.5, -0.25, -4}, {2, 3}, true);
  CHECK(nll_loss(lp, ids({1, 2}, {2})).item() == Approx((2 + 4) / 2.0));
  CHECK(nll_loss(lp, ids({1, 2}, {2}), Reduction::Sum).item() == Approx(6.0));
  CHECK(allclose(nll_loss(lp, ids({1, 2}, {2}), Reduction::None).data(), values({2, 4}, {2})));
  CHECK(nll_loss(lp, ids({1, 2}, {2}), Reduction::Mean, 2).item() == Approx(2.0));  // 1 counted target
  CHECK(allclose(nll_loss(lp, ids({0, 2}, {2}), Reduction::None, 2).data(), values({1, 0}, {2})));
  CHECK(nll_loss(Tensor<double>::from_vector({-1, -2, -3}, {3}), ids({1}, {})).item() == 2.0);
  auto loss = nll_loss(lp, ids({1, 2}, {2}));
  loss.backward();
  CHECK(allclose(lp.grad(), values({0, -0.5, 0, 0, 0, -0.5}, {2, 3})));
  // log_softmax then nll_loss is cross_entropy.
  auto x = Tensor<double>::from_vector({0.5, -1.0, 2.0, 1.5, 0.3, -0.7}, {2, 3});
  CHECK(nll_loss(log_softmax(x, 1), ids({0, 2}, {2})).item() ==
        Approx(cross_entropy(x, ids({0, 2}, {2})).item()).epsilon(1e-12));
}

TEST_CASE("nll_loss passes gradcheck", "[loss][gradcheck]") {
  const IndexArray target = ids({2, -100, 0, 2}, {4});
  for (auto reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    CHECK_GRADCHECK([&](const Inputs& in) { return nll_loss(in[0], target, reduction); },
                    (Inputs{rand_input({4, 3}, 31)}));
    CHECK_GRADCHECK([&](const Inputs& in) { return nll_loss(in[0], ids({1}, {}), reduction); },
                    (Inputs{rand_input({3}, 32)}));
  }
}

TEST_CASE("cross_entropy works in float", "[loss]") {
  auto x = Tensor<float>::from_vector({1, 2, 3, 0, 0, 0}, {2, 3}, true);
  CrossEntropyOptions o;
  o.label_smoothing = 0.2;
  auto loss = cross_entropy(x, ids({2, 0}, {2}), o);
  CHECK(loss.item() == Approx(0.8531091265562452f));
  loss.backward();
  CHECK(x.grad()(1, 0) == Approx((1.f / 3 - (0.8f + 0.2f / 3)) / 2));
}

TEST_CASE("loss errors name the target, its position, the class count and the shapes", "[loss][errors]") {
  auto x = Tensor<double>::zeros({3, 4});
  CHECK_THROWS_AS(cross_entropy(x, ids({0, 5, 1}, {3})), std::invalid_argument);
  CHECK_THROWS_WITH(cross_entropy(x, ids({0, 5, 1}, {3})),
                    Catch::Contains("cross_entropy") && Catch::Contains("target 5") && Catch::Contains("position 1") &&
                        Catch::Contains("4 classes"));
  CHECK_THROWS_WITH(cross_entropy(x, ids({0, 1, -1}, {3})),
                    Catch::Contains("target -1") && Catch::Contains("position 2"));
  CHECK_THROWS_WITH(cross_entropy(x, ids({0, 1}, {2})),
                    Catch::Contains("[2]") && Catch::Contains("[3, 4]") && Catch::Contains("expected target [3]"));
  CHECK_THROWS_WITH(cross_entropy(Tensor<double>::zeros({4}), ids({1}, {1})),
                    Catch::Contains("0-d target") && Catch::Contains("[1]"));
  CHECK_THROWS_WITH(cross_entropy(Tensor<double>::zeros({2, 3, 4}), ids({0, 1}, {2})),
                    Catch::Contains("[N, C] or [C]") && Catch::Contains("[2, 3, 4]"));
  for (double bad : {1.5, -0.1, std::nan("")}) {
    CrossEntropyOptions o;
    o.label_smoothing = bad;
    CHECK_THROWS_AS(cross_entropy(x, ids({0, 1, 2}, {3}), o), std::invalid_argument);
    CHECK_THROWS_WITH(cross_entropy(x, ids({0, 1, 2}, {3}), o), Catch::Contains("label_smoothing"));
  }
  CrossEntropyOptions o;
  o.label_smoothing = 1.5;
  CHECK_THROWS_WITH(cross_entropy(x, ids({0, 1, 2}, {3}), o), Catch::Contains("got 1.5"));
  CHECK_THROWS_WITH(nll_loss(x, ids({0, 4, 1}, {3})),
                    Catch::Contains("nll_loss") && Catch::Contains("target 4") && Catch::Contains("position 1"));
  CHECK_THROWS_WITH(nll_loss(x, ids({0, 1, 2, 3}, {4})), Catch::Contains("nll_loss") && Catch::Contains("[4]"));
}

// ------------------------------------------------------------------------------------------- layer_norm

TEST_CASE("layer_norm of [1, 2, 4] matches a hand computation with the biased variance", "[layer_norm]") {
  auto x = Tensor<double>::from_vector({1, 2, 4}, {1, 3});
  const double mean = 7.0 / 3, var = 14.0 / 9;  // ((4/3)^2 + (1/3)^2 + (5/3)^2) / 3
  const double s = 1 / std::sqrt(var + 1e-5);
  CHECK(allclose(layer_norm(x, {3}).data(), values({(1 - mean) * s, (2 - mean) * s, (4 - mean) * s}, {1, 3}), 1e-12));
  CHECK(layer_norm(x, {3}).data()(0, 0) == Approx(-1.069041531450298).epsilon(1e-12));  // torch
  CHECK(layer_norm(x, {3}, {}, {}, 0.5).data()(0, 2) == Approx((4 - mean) / std::sqrt(var + 0.5)));
}

TEST_CASE("layer_norm with weight and bias matches torch, values and gradients", "[layer_norm]") {
  auto x = Tensor<double>::from_vector({1, 2, 4, -1, 0.5, 0.25}, {2, 3}, true);
  auto w = Tensor<double>::from_vector({0.5, 2, -1}, {3}, true);
  auto b = Tensor<double>::from_vector({0.1, 0, -0.2}, {3}, true);
  auto y = layer_norm(x, {3}, w, b);
  CHECK(allclose(y.data(),
                 values({-0.43452076572514897, -0.5345207657251492, -1.5363019143128718, -0.5984925870213293,
                         1.7779811305997475, -0.7079946087427851},
                        {2, 3}),
                 1e-10));
  y.backward(values({1, 0, 2, -1, 1, 0.5}, {2, 3}));
  CHECK(allclose(x.grad(),
                 values({-0.11453427348481893, 0.17181171877572599, -0.0572774452909075, 0.30721817182412114,
                         1.5362973295532356, -1.8435155013773565},
                        {2, 3}),
                 1e-8, 1e-12));
  CHECK(allclose(w.grad(), values({0.32794364259236075, 0.8889905652998737, 2.926601132997136}, {3}), 1e-8));
  CHECK(allclose(b.grad(), values({0, 1, 2.5}, {3})));
}

TEST_CASE("layer_norm output rows have zero mean and unit variance, in float", "[layer_norm]") {
  Generator gen(5);
  auto x = Tensor<float>::normal({4, 64}, 3.f, 10.f, gen);
  const auto y = layer_norm(x, {64}).data();
  for (std::size_t r = 0; r < 4; ++r) {
    double m = 0, v = 0;
    for (std::size_t j = 0; j < 64; ++j) m += y(r, j);
    m /= 64;
    for (std::size_t j = 0; j < 64; ++j) v += (y(r, j) - m) * (y(r, j) - m);
    CHECK(std::abs(m) < 1e-5);
    CHECK(v / 64 == Approx(1.0).epsilon(1e-4));
  }
}

TEST_CASE("layer_norm passes gradcheck with and without weight and bias, over 1 and 2 trailing dims",
          "[layer_norm][gradcheck]") {
  CHECK_GRADCHECK([](const Inputs& in) { return layer_norm(in[0], {4}); }, (Inputs{rand_input({3, 4}, 41, -2, 2)}));
  CHECK_GRADCHECK([](const Inputs& in) { return layer_norm(in[0], {5}, in[1], in[2]); },
                  (Inputs{rand_input({2, 3, 5}, 42, -2, 2), rand_input({5}, 43), rand_input({5}, 44)}));
  CHECK_GRADCHECK([](const Inputs& in) { return layer_norm(in[0], {5}, in[1]); },
                  (Inputs{rand_input({3, 5}, 45, -2, 2), rand_input({5}, 46)}));
  CHECK_GRADCHECK([](const Inputs& in) { return layer_norm(in[0], {5}, Tensor<double>(), in[1]); },
                  (Inputs{rand_input({3, 5}, 47, -2, 2), rand_input({5}, 48)}));
  CHECK_GRADCHECK(
      [](const Inputs& in) {
        return layer_norm(in[0], {3, 4}, in[1], in[2], 1e-3);
      },
      (Inputs{rand_input({2, 3, 4}, 49, -2, 2), rand_input({3, 4}, 50), rand_input({3, 4}, 51)}));
  CHECK_GRADCHECK([](const Inputs& in) { return layer_norm(in[0], {2, 3}); }, (Inputs{rand_input({2, 3}, 52, -2, 2)}));
  // Only the affine parameters require grad.
  auto x = Tensor<double>(rand_input({4, 3}, 53).data());
  CHECK_GRADCHECK([x](const Inputs& in) { return layer_norm(x, {3}, in[0], in[1]); },
                  (Inputs{rand_input({3}, 54), rand_input({3}, 55)}));
}

TEST_CASE("layer_norm errors name both shapes", "[layer_norm][errors]") {
  auto x = Tensor<double>::zeros({2, 3});
  CHECK_THROWS_AS(layer_norm(x, {4}), std::invalid_argument);
  CHECK_THROWS_WITH(layer_norm(x, {4}),
                    Catch::Contains("layer_norm") && Catch::Contains("[2, 3]") && Catch::Contains("[4]"));
  CHECK_THROWS_WITH(layer_norm(x, {1, 2, 3}), Catch::Contains("[2, 3]") && Catch::Contains("[1, 2, 3]"));
  CHECK_THROWS_WITH(layer_norm(x, {}), Catch::Contains("normalized_shape") && Catch::Contains("[2, 3]"));
  CHECK_THROWS_WITH(layer_norm(x, {3}, Tensor<double>::ones({4})),
                    Catch::Contains("weight") && Catch::Contains("[4]") && Catch::Contains("[3]"));
  CHECK_THROWS_WITH(layer_norm(x, {3}, Tensor<double>::ones({3}), Tensor<double>::zeros({1, 3})),
                    Catch::Contains("bias") && Catch::Contains("[1, 3]") && Catch::Contains("[3]"));
}

// ---------------------------------------------------------------------------------------------- rms_norm

TEST_CASE("rms_norm of [1, 2, 4] matches a hand computation, eps defaulting to the dtype's epsilon", "[rms_norm]") {
  auto x = Tensor<double>::from_vector({1, 2, 4, -3, 0, 0}, {2, 3});
  const double eps = std::numeric_limits<double>::epsilon();
  const double s0 = 1 / std::sqrt(21.0 / 3 + eps), s1 = 1 / std::sqrt(9.0 / 3 + eps);
  CHECK(allclose(rms_norm(x, {3}).data(), values({s0, 2 * s0, 4 * s0, -3 * s1, 0, 0}, {2, 3}), 1e-15, 0));
  CHECK(rms_norm(x, {3}, {}, 0.5).data()(0, 2) == Approx(4 / std::sqrt(7.5)).epsilon(1e-14));
  auto w = Tensor<double>::from_vector({0.5, 2, -1}, {3});
  CHECK(rms_norm(x, {3}, w).data()(0, 1) == Approx(4 * s0).epsilon(1e-14));
  // In float the default eps is float's: a zero row gives zeros, its gradient g * w / sqrt(eps).
  auto zero = Tensor<float>::zeros({1, 4}, true);
  auto y = rms_norm(zero, {4});
  CHECK(y.data() == xt::xarray<float>(xt::zeros<float>({1, 4})));
  y.backward(xt::xarray<float>{{1, 2, 3, 4}});
  const float inv = 1 / std::sqrt(std::numeric_limits<float>::epsilon());
  CHECK(allclose(zero.grad(), xt::xarray<float>{{inv, 2 * inv, 3 * inv, 4 * inv}}, 1e-6, 0));
  CHECK(y.grad_fn_name() == "rms_norm");
}

TEST_CASE("rms_norm passes gradcheck with and without weight, over 1 and 2 trailing dims, at a zero row",
          "[rms_norm][gradcheck]") {
  CHECK_GRADCHECK([](const Inputs& in) { return rms_norm(in[0], {4}); }, (Inputs{rand_input({3, 4}, 141, -2, 2)}));
  CHECK_GRADCHECK([](const Inputs& in) { return rms_norm(in[0], {5}, in[1], 1e-5); },
                  (Inputs{rand_input({2, 3, 5}, 142, -2, 2), rand_input({5}, 143)}));
  CHECK_GRADCHECK(
      [](const Inputs& in) {
        return rms_norm(in[0], {3, 4}, in[1], 1e-3);
      },
      (Inputs{rand_input({2, 3, 4}, 144, -2, 2), rand_input({3, 4}, 145)}));
  // A row of zeros (eps keeps it finite and differentiable) beside ordinary rows.
  Tensor<double> with_zero(values({0, 0, 0, 0.5, -1, 2}, {2, 3}), true);
  CHECK_GRADCHECK([](const Inputs& in) { return rms_norm(in[0], {3}, in[1], 1e-2); },
                  (Inputs{with_zero, rand_input({3}, 146)}));
  // Only the weight requires grad.
  auto x = Tensor<double>(rand_input({4, 3}, 147).data());
  CHECK_GRADCHECK([x](const Inputs& in) { return rms_norm(x, {3}, in[0]); }, (Inputs{rand_input({3}, 148)}));
}

TEMPLATE_TEST_CASE("rms_norm: the same values and gradients at 1 and 2 threads", "[rms_norm]", float, double) {
  using T = TestType;
  Generator gen(149);
  // 3000 rows of 64: many row blocks for the weight's gradient, and a ragged last one.
  const auto run = [&](int threads) {
    const int before = get_num_threads();
    set_num_threads(threads);
    Generator g(150);
    auto x = Tensor<T>::normal({3000, 64}, T(0), T(2), g, true);
    auto w = Tensor<T>::normal({64}, T(1), T(0.1), g, true);
    auto y = rms_norm(x, {64}, w);
    y.backward(Tensor<T>::normal({3000, 64}, T(0), T(1), g).data());
    set_num_threads(before);
    return std::vector<xt::xarray<T>>{y.data(), x.grad(), w.grad()};
  };
  const auto one = run(1), two = run(2);
  for (std::size_t i = 0; i < one.size(); ++i) CHECK(one[i] == two[i]);
}

TEST_CASE("rms_norm errors name the shapes and eps", "[rms_norm][errors]") {
  auto x = Tensor<double>::zeros({2, 3});
  CHECK_THROWS_AS(rms_norm(x, {4}), ShapeError);
  CHECK_THROWS_WITH(rms_norm(x, {4}),
                    Catch::Contains("rms_norm") && Catch::Contains("[2, 3]") && Catch::Contains("[4]"));
  CHECK_THROWS_WITH(rms_norm(x, {}), Catch::Contains("normalized_shape") && Catch::Contains("[2, 3]"));
  CHECK_THROWS_WITH(rms_norm(x, {3}, Tensor<double>::ones({2, 3})),
                    Catch::Contains("weight") && Catch::Contains("[2, 3]") && Catch::Contains("[3]"));
  CHECK_THROWS_WITH(rms_norm(x, {3}, {}, -1e-5), Catch::Contains("eps") && Catch::Contains("-1e-05"));
}

// ---------------------------------------------------------------------------------------------- dropout

TEST_CASE("dropout in eval or with p = 0 is the identity and draws nothing", "[dropout]") {
  Generator gen(3);
  const auto before = gen.state();
  auto x = Tensor<double>::from_vector({1, 2, 3}, {3}, true);
  auto eval = dropout(x, 0.5, /*training=*/false, gen);
  CHECK(eval.same_as(x));
  auto zero = dropout(x, 0.0, /*training=*/true, gen);
  CHECK(zero.same_as(x));
  CHECK(gen.state().s == before.s);
  (zero * 2.0).backward(values({1, 1, 1}, {3}));
  CHECK(allclose(x.grad(), values({2, 2, 2}, {3})));
}

TEST_CASE("dropout zeroes about p of the elements and scales the rest by 1 / (1 - p)", "[dropout]") {
  Generator gen(17);
  const double p = 0.3;
  const std::size_t n = 100000;
  auto x = Tensor<double>::ones({n}, true);
  auto y = dropout(x, p, true, gen);
  std::size_t zeros = 0, badly_scaled = 0;
  double total = 0;
  for (double v : y.data()) {
    if (v == 0)
      ++zeros;
    else if (std::abs(v - 1 / (1 - p)) > 1e-12)
      ++badly_scaled;
    total += v;
  }
  CHECK(badly_scaled == 0);
  // Binomial(100000, 0.3) has standard deviation ~145: 0.3 +- 0.006 is ~4 sigma.
  CHECK(std::abs(static_cast<double>(zeros) / n - p) < 0.006);
  CHECK(std::abs(total / n - 1.0) < 0.01);
  // The backward applies the same scaled mask: with x = 1 and g = 1, the gradient equals y.
  y.backward(xt::xarray<double>(xt::ones<double>({n})));
  CHECK(x.grad() == y.data());
}

TEST_CASE("dropout is reproducible from a seed and differs across seeds", "[dropout]") {
  auto x = Tensor<float>::ones({64});
  Generator a(99), b(99), c(100);
  const auto ya = dropout(x, 0.5, true, a).data();
  CHECK(ya == dropout(x, 0.5, true, b).data());
  CHECK_FALSE(ya == dropout(x, 0.5, true, c).data());
  // The next call continues the stream: a new mask.
  CHECK_FALSE(ya == dropout(x, 0.5, true, a).data());
}

TEST_CASE("dropout follows the documented mask rule: one seed per call, element i by DropoutMask", "[dropout]") {
  Generator gen(21), copy(21);
  const double p = 0.25;
  auto x = Tensor<float>::arange(1, 1001);
  const auto y = dropout(x, p, true, gen).data();
  const detail::DropoutMask mask(copy.next_u64(), p);
  CHECK(gen.state().s == copy.state().s);  // exactly one draw
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < 1000; ++i) {
    const float expected = mask.keep(i) ? x.data()(i) * static_cast<float>(1 / (1 - p)) : 0.0f;
    mismatches += y(i) != expected;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("dropout passes gradcheck with a fixed mask", "[dropout][gradcheck]") {
  CHECK_GRADCHECK(
      [](const Inputs& in) {
        Generator gen(7);  // the same mask on every evaluation
        return dropout(in[0], 0.4, true, gen);
      },
      (Inputs{rand_input({3, 5}, 61)}));
}

TEST_CASE("dropout with p = 1 passes gradcheck", "[dropout][gradcheck]") {
  CHECK_GRADCHECK(
      [](const Inputs& in) {
        Generator gen(7);
        return dropout(in[0], 1.0, true, gen);
      },
      (Inputs{rand_input({3, 5}, 62)}));
}

TEST_CASE("dropout with p = 1 is x * 0 as in torch: zeros, NaN where x is not finite, no draw", "[dropout]") {
  Generator gen(5);
  const auto before = gen.state();
  auto x = Tensor<double>::from_vector({1, -2, std::numeric_limits<double>::infinity()}, {3}, true);
  auto y = dropout(x, 1.0, /*training=*/true, gen);
  CHECK(y.data()(0) == 0.0);
  CHECK(y.data()(1) == 0.0);
  CHECK(std::isnan(y.data()(2)));
  CHECK(gen.state().s == before.s);
  y.backward(values({1, 1, 1}, {3}));
  CHECK(x.grad() == values({0, 0, 0}, {3}));
  CHECK(dropout(x, 1.0, /*training=*/false, gen).same_as(x));
}

TEST_CASE("dropout rejects p outside 0 <= p <= 1, naming p", "[dropout][errors]") {
  Generator gen(0);
  auto x = Tensor<double>::ones({2});
  for (double p : {-0.1, 1.0000001, 1.5, std::nan("")}) {
    CHECK_THROWS_AS(dropout(x, p, true, gen), std::invalid_argument);
    CHECK_THROWS_AS(dropout(x, p, false, gen), std::invalid_argument);
  }
  CHECK_THROWS_WITH(dropout(x, 1.5, true, gen), Catch::Contains("dropout") && Catch::Contains("got 1.5"));
  CHECK_THROWS_WITH(dropout(x, -0.1, true, gen), Catch::Contains("got -0.1"));
}

// -------------------------------------------------------------------------------------------- embedding

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

// ------------------------------------------------------------------------------------- rotary embedding

namespace {
// The rows of x [B, H, L, D] rotated by the formula, with angles from rotary_tables' definition.
xt::xarray<double> rotated_by_formula(const xt::xarray<double>& x, std::size_t offset, double base) {
  xt::xarray<double> y = x;
  const std::size_t rows = x.size() / x.shape()[3], length = x.shape()[2], d = x.shape()[3], h = d / 2;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < h; ++j) {
      const double angle = static_cast<double>(offset + r % length) * std::pow(base, -2.0 * j / d);
      const double a = x.data()[r * d + j], b = x.data()[r * d + j + h];
      y.data()[r * d + j] = a * std::cos(angle) - b * std::sin(angle);
      y.data()[r * d + j + h] = b * std::cos(angle) + a * std::sin(angle);
    }
  return y;
}
}  // namespace

TEST_CASE("rotary_embedding rotates each pair (j, j + D/2) by position times base^(-2j/D)", "[rotary]") {
  const auto [cos, sin] = rotary_tables<double>(8, 50, 100.0);
  CHECK(cos.shape()[0] == 50);
  CHECK(cos.shape()[1] == 4);
  CHECK(cos(0, 3) == 1.0);
  CHECK(sin(7, 0) == std::sin(7.0));
  CHECK(sin(7, 2) == Approx(std::sin(7.0 / 10.0)).epsilon(1e-15));  // 100^(-4/8) = 1/10
  const Tensor<double> c(cos), s(sin);
  const auto x = rand_input({2, 3, 5, 8}, 90);
  CHECK(allclose(rotary_embedding(x, c, s).data(), rotated_by_formula(x.data(), 0, 100.0), 1e-14, 1e-15));
  CHECK(allclose(rotary_embedding(x, c, s, 40).data(), rotated_by_formula(x.data(), 40, 100.0), 1e-14, 1e-15));
  // A rotation keeps each pair's length, so each row's norm.
  const auto y = rotary_embedding(x, c, s, 13).data();
  CHECK(
      allclose(xt::xarray<double>(xt::sum(y * y, {3})), xt::xarray<double>(xt::sum(x.data() * x.data(), {3})), 1e-13));
  // offset = the positions already cached: rotating the last rows alone equals the rows of the whole.
  const auto whole = rotary_embedding(x, c, s).data();
  const xt::xarray<double> tail = xt::view(x.data(), xt::all(), xt::all(), xt::range(3, 5), xt::all());
  const xt::xarray<double> whole_tail = xt::view(whole, xt::all(), xt::all(), xt::range(3, 5), xt::all());
  CHECK(rotary_embedding(Tensor<double>(tail), c, s, 3).data() == whole_tail);
}

TEST_CASE("rotary_embedding: the dot product of q at m and k at n depends on m - n only", "[rotary]") {
  const auto [cos, sin] = rotary_tables<double>(16, 300);
  const Tensor<double> c(cos), s(sin);
  const auto q = rand_input({1, 1, 1, 16}, 91), k = rand_input({1, 1, 1, 16}, 92);
  const auto dot = [&](std::size_t m, std::size_t n) {
    return xt::sum(rotary_embedding(q, c, s, m).data() * rotary_embedding(k, c, s, n).data())();
  };
  for (std::size_t shift : {0, 1, 5, 100, 250}) {
    INFO("m - n = 3 at n = " << shift);
    CHECK(dot(3 + shift, shift) == Approx(dot(3, 0)).epsilon(1e-12));
    INFO("m - n = -7 at n = " << 7 + shift);
    CHECK(dot(shift, 7 + shift) == Approx(dot(0, 7)).epsilon(1e-12));
  }
  // ... and does depend on it.
  CHECK(std::abs(dot(3, 0) - dot(4, 0)) > 1e-3);
}

TEST_CASE("rotary_embedding passes gradcheck, its backward the inverse rotation", "[rotary][gradcheck]") {
  const auto [cos, sin] = rotary_tables<double>(6, 20, 10.0);
  const Tensor<double> c(cos), s(sin);
  CHECK_GRADCHECK([&](const Inputs& in) { return rotary_embedding(in[0], c, s); },
                  (Inputs{rand_input({2, 2, 3, 6}, 93)}));
  CHECK_GRADCHECK([&](const Inputs& in) { return rotary_embedding(in[0], c, s, 17); },
                  (Inputs{rand_input({1, 3, 3, 6}, 94)}));
  // Rotating the gradient back: the backward of a rotation by the angle is a rotation by minus the angle,
  // so the gradient of sum(g * rope(x)) is the inverse rotation of g, which undoes rope.
  auto x = rand_input({1, 2, 4, 6}, 95);
  const auto g = rand_input({1, 2, 4, 6}, 96).data();
  rotary_embedding(x, c, s, 5).backward(g);
  CHECK(allclose(rotary_embedding(Tensor<double>(x.grad()), c, s, 5).data(), g, 1e-13, 1e-15));
  NoGradGuard no_grad;
  CHECK_FALSE(rotary_embedding(x, c, s).requires_grad());
}

TEST_CASE("rotary_embedding errors name the shapes and the positions", "[rotary][errors]") {
  const auto [cos, sin] = rotary_tables<double>(8, 10);
  const Tensor<double> c(cos), s(sin);
  CHECK_THROWS_WITH(rotary_embedding(Tensor<double>::zeros({2, 5, 8}), c, s),
                    Catch::Contains("[batch, heads, length, head_dim]") && Catch::Contains("[2, 5, 8]"));
  CHECK_THROWS_WITH(rotary_embedding(Tensor<double>::zeros({1, 1, 2, 7}), c, s),
                    Catch::Contains("head_dim must be even") && Catch::Contains("got 7"));
  CHECK_THROWS_WITH(rotary_embedding(Tensor<double>::zeros({1, 1, 2, 6}), c, s),
                    Catch::Contains("head_dim / 2 = 3") && Catch::Contains("cos [10, 4]"));
  CHECK_THROWS_WITH(rotary_embedding(Tensor<double>::zeros({1, 1, 4, 8}), c, s, 7),
                    Catch::Contains("positions 7 to 10") && Catch::Contains("10 positions"));
  CHECK_THROWS_WITH(rotary_embedding(Tensor<double>::zeros({1, 1, 11, 8}), c, s),
                    Catch::Contains("positions 0 to 10") && Catch::Contains("10 positions"));
  CHECK_THROWS_WITH(rotary_embedding(Tensor<double>::zeros({1, 1, 2, 8}), Tensor<double>(cos, true), s),
                    Catch::Contains("constants"));
  CHECK_THROWS_WITH(rotary_tables<float>(7, 10), Catch::Contains("head_dim") && Catch::Contains("got 7"));
  CHECK_THROWS_WITH(rotary_tables<float>(8, 10, 0.0), Catch::Contains("base") && Catch::Contains("got 0"));
}

// --------------------------------------------------------------------------------------------- indexing

namespace {
// 0, 1, ..., 11 as [3, 4].
Tensor<double> count_3x4(bool requires_grad = false) {
  return Tensor<double>::from_vector({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4}, requires_grad);
}
}  // namespace

TEST_CASE("gather reads along dim at index's positions, with index's shape, as torch.gather", "[indexing]") {
  // torch 1.13 on x = torch.arange(12.).reshape(3, 4).
  auto x = count_3x4(true);
  auto y = gather(x, 1, ids({0, 0, 1, 3, 2, 2}, {3, 2}));
  CHECK(y.data() == values({0, 0, 5, 7, 10, 10}, {3, 2}));
  CHECK(y.grad_fn_name() == "gather");
  y.backward(xt::xarray<double>(xt::ones<double>({3, 2})));
  CHECK(x.grad() == values({2, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 0}, {3, 4}));  // repeated positions add up
  // index may be smaller than x in the other dims, and larger along dim; dim may be negative.
  CHECK(gather(x, 0, ids({0, 2}, {1, 2})).data() == values({0, 9}, {1, 2}));
  CHECK(gather(x, -1, ids({3}, {1, 1})).data() == values({3}, {1, 1}));
  CHECK(gather(x, 1, ids({0, 1, 2, 3, 0, 1}, {1, 6})).data() == values({0, 1, 2, 3, 0, 1}, {1, 6}));
  auto z = Tensor<double>::from_vector({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  CHECK(gather(z, 1, ids({1, 0, 0, 0}, {2, 1, 2})).data() == values({2, 1, 4, 5}, {2, 1, 2}));
  // A 0-d tensor counts as one dim: torch.gather(tensor(5.), 0, tensor([0, 0])) = [5, 5].
  auto five = Tensor<double>::scalar(5);
  CHECK(gather(five, 0, ids({0}, {})).shape() == Shape{});
  CHECK(gather(five, 0, ids({0, 0}, {2})).data() == values({5, 5}, {2}));
  CHECK(gather(Tensor<double>::from_vector({5, 6}, {2}), 0, ids({1}, {})).item() == 6);
  // An empty index gives an empty result, whatever its other sizes (torch checks them only when non-empty).
  CHECK(gather(x, 1, IndexArray::from_shape({3, 0})).shape() == Shape{3, 0});
  CHECK(gather(x, 0, IndexArray::from_shape({0, 5})).shape() == Shape{0, 5});
  CHECK(gather(Tensor<float>::from_vector({1, 2, 3}, {3}), 0, ids({2, 2, 0}, {3})).to_vector() ==
        std::vector<float>{3, 3, 1});
}

TEST_CASE("index_select picks whole slices in index's order, as torch.index_select", "[indexing]") {
  auto x = count_3x4(true);
  auto y = index_select(x, 0, ids({2, 0, 2}, {3}));
  CHECK(y.data() == values({8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}, {3, 4}));
  CHECK(y.grad_fn_name() == "index_select");
  y.backward(xt::xarray<double>(xt::ones<double>({3, 4})));
  CHECK(x.grad() == values({1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 2, 2}, {3, 4}));  // row 2 picked twice
  CHECK(index_select(x, -1, ids({3, 3, 0}, {3})).data() == values({3, 3, 0, 7, 7, 4, 11, 11, 8}, {3, 3}));
  auto z = Tensor<double>::from_vector({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  CHECK(index_select(z, 1, ids({1}, {1})).data() == values({2, 3, 6, 7}, {2, 1, 2}));
  // A 0-d index picks one slice and keeps the dim, as torch; an empty index leaves the dim empty.
  CHECK(index_select(x, 0, ids({1}, {})).data() == values({4, 5, 6, 7}, {1, 4}));
  CHECK(index_select(x, 1, IndexArray::from_shape({0})).shape() == Shape{3, 0});
  CHECK(index_select(Tensor<double>::zeros({0, 3}), 1, ids({2}, {1})).shape() == Shape{0, 1});
  // A 0-d x takes one position and stays 0-d.
  CHECK(index_select(Tensor<double>::scalar(5), 0, ids({0}, {1})).shape() == Shape{});
  CHECK(index_select(Tensor<double>::scalar(5), -1, ids({0}, {})).item() == 5);
}

TEST_CASE("gather and index_select pass gradcheck with repeated indices", "[indexing][gradcheck]") {
  const IndexArray g1 = ids({0, 0, 3, 1, 1, 1, 2, 0, 2}, {3, 3});
  CHECK_GRADCHECK([&](const Inputs& in) { return gather(in[0], 1, g1); }, (Inputs{rand_input({3, 4}, 61)}));
  CHECK_GRADCHECK([&](const Inputs& in) { return gather(in[0], 0, g1); }, (Inputs{rand_input({4, 3}, 62)}));
  const IndexArray g3 = ids({2, 0, 2, 1, 1, 1, 0, 2, 2, 2, 0, 1}, {2, 2, 3});
  CHECK_GRADCHECK([&](const Inputs& in) { return gather(in[0], -2, g3); }, (Inputs{rand_input({2, 3, 4}, 63)}));
  const IndexArray rows = ids({3, 0, 3, 3, 1}, {5});
  CHECK_GRADCHECK([&](const Inputs& in) { return index_select(in[0], 0, rows); }, (Inputs{rand_input({4, 3}, 64)}));
  CHECK_GRADCHECK([&](const Inputs& in) { return index_select(in[0], 1, rows); }, (Inputs{rand_input({2, 4, 3}, 65)}));
  CHECK_GRADCHECK([&](const Inputs& in) { return index_select(in[0], -1, rows); }, (Inputs{rand_input({2, 3, 4}, 66)}));
  // Used twice: gradients of both uses add up.
  CHECK_GRADCHECK(
      [&](const Inputs& in) {
        return gather(in[0], 1, g1) * index_select(in[0], 1, ids({1, 1, 2}, {3}));
      },
      (Inputs{rand_input({3, 4}, 67)}));
}

TEST_CASE("gather and index_select record nothing under NoGradGuard", "[indexing]") {
  auto x = rand_input({3, 4}, 68);
  NoGradGuard no_grad;
  for (const auto& y : {gather(x, 1, ids({0, 1}, {1, 2})), index_select(x, 0, ids({1}, {1}))}) {
    CHECK(y.is_leaf());
    CHECK_FALSE(y.requires_grad());
  }
}

TEST_CASE("indexing errors name the index, its position, the dim and its size", "[indexing][errors]") {
  auto x = count_3x4();
  // Out of range, negative ones too (as torch): the first bad one, where it is, the dim as written.
  CHECK_THROWS_AS(gather(x, 1, ids({0, 4}, {1, 2})), ShapeError);
  CHECK_THROWS_AS(gather(x, 1, ids({0, 4}, {1, 2})), std::invalid_argument);
  CHECK_THROWS_WITH(gather(x, 1, ids({0, 1, 4, 9}, {2, 2})),
                    "gather: index 4 at position [1, 0] is out of range for dim 1 of size 4 (expected 0 to 3)");
  CHECK_THROWS_WITH(gather(x, -2, ids({-1}, {1, 1})),
                    "gather: index -1 at position [0, 0] is out of range for dim -2 of size 3 (expected 0 to 2)");
  CHECK_THROWS_WITH(gather(Tensor<double>::zeros({2, 0}), 1, ids({0}, {1, 1})),
                    "gather: index 0 at position [0, 0] is out of range for dim 1 of size 0");
  CHECK_THROWS_WITH(gather(x, 1, ids({0, 1}, {2})),
                    "gather: index of shape [2] has 1 dims but the input of shape [3, 4] has 2");
  CHECK_THROWS_WITH(gather(x, 1, ids({0, 0, 0, 0}, {4, 1})),
                    "gather: index of shape [4, 1] is larger than the input of shape [3, 4] in dim 0 (4 > 3); only "
                    "dim 1 may be larger");
  CHECK_THROWS_WITH(gather(x, 2, ids({0}, {1, 1})), Catch::Contains("gather: dim 2") && Catch::Contains("rank 2"));
  CHECK_THROWS_WITH(index_select(x, 1, ids({3, -2}, {2})),
                    "index_select: index -2 at position [1] is out of range for dim 1 of size 4 (expected 0 to 3)");
  CHECK_THROWS_WITH(index_select(x, 0, ids({3}, {})),
                    "index_select: index 3 at position [] is out of range for dim 0 of size 3 (expected 0 to 2)");
  CHECK_THROWS_WITH(index_select(x, 0, ids({0, 1}, {1, 2})),
                    "index_select: index must be 1-D or 0-d, got shape [1, 2]");
  CHECK_THROWS_WITH(index_select(Tensor<double>::scalar(5), 0, ids({0, 0}, {2})),
                    "index_select: a 0-d input takes one index, got 2");
  CHECK_THROWS_WITH(index_select(x, -3, ids({0}, {1})),
                    Catch::Contains("index_select: dim -3") && Catch::Contains("rank 2"));
}

// ---------------------------------------------------------------------------------------------- masking

TEST_CASE("masked_fill fills where a broadcast mask is true and passes no gradient there", "[masking]") {
  auto x = Tensor<double>::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, true);
  auto rows = masked_fill(x, mask({true, false}, {2, 1}), -1.0);
  CHECK(allclose(rows.data(), values({-1, -1, -1, 4, 5, 6}, {2, 3})));
  auto cols = masked_fill(x, mask({false, true, false}, {3}), 9.0);
  CHECK(allclose(cols.data(), values({1, 9, 3, 4, 9, 6}, {2, 3})));
  CHECK(allclose(masked_fill(x, mask({true}, {}), 0.0).data(), values({0, 0, 0, 0, 0, 0}, {2, 3})));
  (rows + cols).backward(values({1, 1, 1, 1, 1, 1}, {2, 3}));
  CHECK(allclose(x.grad(), values({1, 0, 1, 2, 1, 2}, {2, 3})));  // rows' plus cols' pass-through
  // The usual attention mask: -inf at masked keys, then softmax.
  auto scores = Tensor<double>::from_vector({1, 2, 3, 1, 2, 3}, {2, 3});
  auto probs = softmax(masked_fill(scores, mask({false, false, true, false, true, true}, {2, 3}), -kInf), -1);
  CHECK(probs.data()(0, 2) == 0.0);
  CHECK(probs.data()(1, 0) == 1.0);
  CHECK(probs.data()(0, 0) == Approx(1 / (1 + std::exp(1.0))));
}

TEST_CASE("masked_fill passes gradcheck with broadcast masks", "[masking][gradcheck]") {
  for (const auto& m : {mask({true, false, true, false}, {4}), mask({false, true, true}, {3, 1}),
                        mask({true, false, false, true}, {1, 1, 4}), mask({false}, {}),
                        mask({true, false, true, false, false, true, false, true, true, false, true, true}, {3, 4})}) {
    CHECK_GRADCHECK([&](const Inputs& in) { return masked_fill(in[0], m, 0.5); }, (Inputs{rand_input({2, 3, 4}, 81)}));
  }
}

TEST_CASE("where selects elementwise with all three operands broadcast", "[masking]") {
  // torch.where(tensor([True, False]), tensor([[1.], [2.]]), tensor(5.)) == [[1, 5], [2, 5]].
  auto a = Tensor<double>::from_vector({1, 2}, {2, 1}, true);
  auto b = Tensor<double>::scalar(5.0, true);
  auto y = tapegrad::where(mask({true, false}, {2}), a, b);
  CHECK(y.shape() == Shape{2, 2});
  CHECK(allclose(y.data(), values({1, 5, 2, 5}, {2, 2})));
  y.backward(values({1, 2, 3, 4}, {2, 2}));
  CHECK(allclose(a.grad(), values({1, 3}, {2, 1})));
  CHECK(b.grad()() == 6.0);
  // The condition alone can set the output shape.
  auto z = tapegrad::where(mask({true, false, false, true}, {2, 2}), Tensor<double>::scalar(1.0),
                           Tensor<double>::scalar(0.0));
  CHECK(allclose(z.data(), values({1, 0, 0, 1}, {2, 2})));
}

TEST_CASE("where passes gradcheck with broadcasting", "[masking][gradcheck]") {
  const BoolArray c1 = mask({true, false, true, true, false, false}, {2, 1, 3});
  CHECK_GRADCHECK([&](const Inputs& in) { return tapegrad::where(c1, in[0], in[1]); },
                  (Inputs{rand_input({4, 3}, 91), rand_input({}, 92)}));
  const BoolArray c2 = mask({true, false, false, true}, {4});
  CHECK_GRADCHECK([&](const Inputs& in) { return tapegrad::where(c2, in[0], in[1]); },
                  (Inputs{rand_input({3, 1}, 93), rand_input({3, 4}, 94)}));
  // Only one side requires grad.
  auto constant = Tensor<double>(rand_input({3, 4}, 95).data());
  CHECK_GRADCHECK([&](const Inputs& in) { return tapegrad::where(c2, constant, in[0]); },
                  (Inputs{rand_input({4}, 96)}));
}

TEST_CASE("tril and triu keep a triangle of the last two dims, as torch", "[masking]") {
  // torch 1.13: x = torch.arange(24.).reshape(2, 3, 4); tril(x, 1), then backward(2 * ones).
  std::vector<double> v(24);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  auto x = Tensor<double>::from_vector(v, {2, 3, 4}, true);
  auto lower = tril(x, 1);
  CHECK(lower.data() ==
        values({0, 1, 0, 0, 4, 5, 6, 0, 8, 9, 10, 11, 12, 13, 0, 0, 16, 17, 18, 0, 20, 21, 22, 23}, {2, 3, 4}));
  CHECK(lower.grad_fn_name() == "tril");
  lower.backward(xt::xarray<double>(xt::ones<double>({2, 3, 4}) * 2.0));
  CHECK(x.grad() == values({2, 2, 0, 0, 2, 2, 2, 0, 2, 2, 2, 2, 2, 2, 0, 0, 2, 2, 2, 0, 2, 2, 2, 2}, {2, 3, 4}));
  auto m = count_3x4();
  CHECK(tril(m).data() == values({0, 0, 0, 0, 4, 5, 0, 0, 8, 9, 10, 0}, {3, 4}));
  CHECK(tril(m, -1).data() == values({0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0}, {3, 4}));
  CHECK(triu(m).data() == values({0, 1, 2, 3, 0, 5, 6, 7, 0, 0, 10, 11}, {3, 4}));
  CHECK(triu(m, 2).data() == values({0, 0, 2, 3, 0, 0, 0, 7, 0, 0, 0, 0}, {3, 4}));
  CHECK(triu(m, -1).data() == values({0, 1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11}, {3, 4}));
  // Diagonals past the matrix keep all or nothing, however far (no overflow at the extremes).
  CHECK(tril(m, 5).data() == m.data());
  CHECK(triu(m, -5).data() == m.data());
  CHECK(tril(m, -3).data() == values(std::vector<double>(12, 0.0), {3, 4}));
  CHECK(triu(m, 4).data() == values(std::vector<double>(12, 0.0), {3, 4}));
  CHECK(tril(m, std::numeric_limits<std::int64_t>::max()).data() == m.data());
  CHECK(triu(m, std::numeric_limits<std::int64_t>::min()).data() == m.data());
  CHECK(tril(m, std::numeric_limits<std::int64_t>::min()).data() == values(std::vector<double>(12, 0.0), {3, 4}));
  // Zeroed means zero: a NaN outside the triangle is gone, as in torch.
  auto n = Tensor<double>::from_vector({1, std::nan(""), 3, 4}, {2, 2});
  CHECK(tril(n).data() == values({1, 0, 3, 4}, {2, 2}));
  CHECK(tril(Tensor<double>::zeros({2, 0, 3})).shape() == Shape{2, 0, 3});
  CHECK(triu(Tensor<float>::ones({2, 2})).to_vector() == std::vector<float>{1, 1, 0, 1});
}

TEST_CASE("tril and triu pass gradcheck, and record nothing under NoGradGuard", "[masking][gradcheck]") {
  for (std::int64_t diagonal : {0, 1, -1, 3, -4}) {
    INFO("diagonal " << diagonal);
    CHECK_GRADCHECK([&](const Inputs& in) { return tril(in[0], diagonal); }, (Inputs{rand_input({2, 3, 4}, 71)}));
    CHECK_GRADCHECK([&](const Inputs& in) { return triu(in[0], diagonal); }, (Inputs{rand_input({4, 3}, 72)}));
  }
  auto x = rand_input({3, 3}, 73);
  NoGradGuard no_grad;
  CHECK(tril(x).is_leaf());
  CHECK_FALSE(triu(x).requires_grad());
}

TEST_CASE("masking errors name the shapes", "[masking][errors]") {
  auto x = Tensor<double>::zeros({3});
  CHECK_THROWS_AS(masked_fill(x, mask({true, false}, {2, 1}), 0.0), std::invalid_argument);
  CHECK_THROWS_WITH(masked_fill(x, mask({true, false}, {2, 1}), 0.0),
                    Catch::Contains("masked_fill") && Catch::Contains("[2, 1]") && Catch::Contains("[3]"));
  CHECK_THROWS_WITH(masked_fill(x, mask({true, false}, {2}), 0.0), Catch::Contains("[2]") && Catch::Contains("[3]"));
  CHECK_THROWS_AS(tapegrad::where(mask({true, false}, {2}), x, x), std::invalid_argument);
  CHECK_THROWS_AS(tril(x), ShapeError);
  CHECK_THROWS_WITH(tril(x), "tril: expects a tensor with at least 2 dims, got 1-D [3]");
  CHECK_THROWS_WITH(triu(Tensor<double>::scalar(1), 1), "triu: expects a tensor with at least 2 dims, got 0-D []");
  CHECK_THROWS_WITH(
      tapegrad::where(mask({true, false}, {2}), x, Tensor<double>::zeros({4, 1})),
      Catch::Contains("where") && Catch::Contains("[2]") && Catch::Contains("[3]") && Catch::Contains("[4, 1]"));
}

TEST_CASE("topk and sort return values and int64 indices, ties in position order", "[indexing]") {
  const double nan = std::nan("");
  auto x = Tensor<double>::from_vector({1, 3, 1, 3, 2, nan, 1}, {7}, true);
  const auto s = sort(x);
  CHECK((s.indices == IndexArray{0, 2, 6, 4, 1, 3, 5}));  // torch.sort(stable=True): NaN last
  CHECK(std::isnan(s.values.data()(6)));
  const auto d = sort(x, 0, true);
  CHECK((d.indices == IndexArray{5, 1, 3, 4, 0, 2, 6}));  // NaN first, ties still by position
  // topk orders ties like the stable sort: the 3 smallest are positions [0, 2, 6] (torch 1.13 gives
  // [6, 0, 2]: its partial sort's order, which it does not specify).
  const auto small = topk(x, 3, -1, false);
  CHECK((small.indices == IndexArray{0, 2, 6}));
  const auto big = x.topk(3);
  CHECK((big.indices == IndexArray{5, 1, 3}));
  for (std::int64_t k = 0; k <= 7; ++k) {  // topk(k) is the first k of the stable sort, both ways
    INFO("k " << k);
    CHECK((topk(x, k).indices == IndexArray(xt::view(d.indices, xt::range(0, k)))));
    CHECK((topk(x, k, 0, false).indices == IndexArray(xt::view(s.indices, xt::range(0, k)))));
  }
  // The gradient goes back to the picked positions.
  auto [values, indices] = topk(x, 2, 0, false);
  values.backward(xt::xarray<double>({10.0, 20.0}));
  CHECK(x.grad()(0) == 10.0);
  CHECK(x.grad()(2) == 20.0);
  CHECK(x.grad()(6) == 0.0);
  CHECK(values.grad_fn_name() == "topk");
  // Along a middle dim, and 0-d.
  auto m = Tensor<double>::from_vector({1, 5, 4, 2, 3, 6}, {1, 3, 2});
  CHECK((topk(m, 1, 1).indices == IndexArray{{{1, 2}}}));
  CHECK(sort(m, 1).values.data() == xt::xarray<double>({{{1, 2}, {3, 5}, {4, 6}}}));
  CHECK((sort(Tensor<double>::scalar(3)).indices == IndexArray(0)));
}

TEST_CASE("topk of few among many (its one-pass selection) equals the stable sort's first k", "[indexing]") {
  // Sizes where k * 16 <= size take the selection path; values drawn from 8 levels give many ties, and
  // NaN and infinities sit among them. Along the last and a middle dim, largest and smallest.
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  Generator gen(11);
  const std::vector<std::pair<Shape, std::int64_t>> cases = {{{3, 200}, 1}, {{2, 97, 3}, 1}, {{1, 1000}, -1}};
  for (const auto& [shape, dim] : cases) {
    xt::xarray<double> v = xt::floor(Tensor<double>::uniform(shape, 0.0, 8.0, gen).data());
    v.data()[5] = nan;
    v.data()[17] = inf;
    v.data()[40] = -inf;
    v.data()[v.size() - 1] = nan;
    const Tensor<double> x(v);
    for (const bool largest : {true, false})
      for (const std::int64_t k : {1, 2, 5, 6}) {
        INFO("shape " << format_shape(shape) << " dim " << dim << " largest " << largest << " k " << k);
        const auto sorted = sort(x, dim, largest);
        const auto top = topk(x, k, dim, largest);
        const auto d = static_cast<std::size_t>(dim < 0 ? static_cast<std::int64_t>(shape.size()) + dim : dim);
        xt::xstrided_slice_vector first(shape.size(), xt::all());
        first[d] = xt::range(0, k);
        CHECK((top.indices == IndexArray(xt::strided_view(sorted.indices, first))));
        const xt::xarray<double> expected = xt::strided_view(sorted.values.data(), first);
        CHECK(xt::all(xt::equal(top.values.data(), expected) || (xt::isnan(top.values.data()) && xt::isnan(expected))));
      }
  }
}

TEST_CASE("topk and sort pass gradcheck, and their errors name k, the dim and its size", "[indexing][gradcheck]") {
  CHECK_GRADCHECK([](const Inputs& in) { return topk(in[0], 2, 1).values; }, (Inputs{rand_input({3, 4}, 300)}));
  CHECK_GRADCHECK([](const Inputs& in) { return topk(in[0], 3, 0, false).values; },
                  (Inputs{rand_input({4, 2, 3}, 301)}));
  CHECK_GRADCHECK([](const Inputs& in) { return sort(in[0], 1, true).values; }, (Inputs{rand_input({2, 5}, 302)}));
  const auto x = Tensor<double>::zeros({2, 3});
  CHECK_THROWS_WITH(topk(x, 4), Catch::Contains("topk") && Catch::Contains("k 4") && Catch::Contains("dim -1") &&
                                    Catch::Contains("size 3") && Catch::Contains("0 to 3"));
  CHECK_THROWS_WITH(topk(x, -1, 0), Catch::Contains("topk") && Catch::Contains("k -1") && Catch::Contains("size 2"));
  CHECK_THROWS_WITH(topk(x, 1, 2), Catch::Contains("topk") && Catch::Contains("dim 2"));
  CHECK_THROWS_WITH(topk(Tensor<double>::scalar(1), 0), Catch::Contains("topk") && Catch::Contains("0-d"));
  CHECK_THROWS_WITH(sort(x, -3), Catch::Contains("sort") && Catch::Contains("dim -3"));
}

TEST_CASE("one_hot: 0/1 rows of num_classes, inferred from the max when -1", "[indexing]") {
  const auto h = one_hot(IndexArray{0, 2, 1});
  static_assert(std::is_same_v<decltype(h), const Tensor<float>>);
  CHECK(h.data() == xt::xarray<float>({{1, 0, 0}, {0, 0, 1}, {0, 1, 0}}));
  CHECK_FALSE(h.requires_grad());
  const auto h2 = one_hot<double>(IndexArray{{1}, {3}}, 5);
  CHECK(h2.shape() == Shape{2, 1, 5});
  CHECK(h2.data()(1, 0, 3) == 1.0);
  CHECK(h2.data()(1, 0, 2) == 0.0);
  CHECK(one_hot(IndexArray(xt::zeros<std::int64_t>({0})), 3).shape() == Shape{0, 3});
  CHECK(one_hot(IndexArray(2), 4).data() == xt::xarray<float>({0, 0, 1, 0}));
  CHECK_THROWS_WITH(one_hot(IndexArray{0, -1}),
                    Catch::Contains("one_hot") && Catch::Contains("index -1 at position [1]"));
  CHECK_THROWS_WITH(one_hot(IndexArray{0, 3}, 2), Catch::Contains("one_hot") && Catch::Contains("index 3") &&
                                                      Catch::Contains("2 classes") && Catch::Contains("0 to 1"));
  CHECK_THROWS_WITH(one_hot(IndexArray(xt::zeros<std::int64_t>({0}))),
                    Catch::Contains("one_hot") && Catch::Contains("empty"));
  CHECK_THROWS_WITH(one_hot(IndexArray{0}, -2), Catch::Contains("one_hot") && Catch::Contains("-2"));
}

TEST_CASE("normalize divides by max(norm, eps), with torch's gradient at a zero row", "[normalize]") {
  auto x = Tensor<double>::from_vector({3, 4, 0, 0}, {2, 2}, true);
  const auto y = normalize(x);
  CHECK(y.data() == xt::xarray<double>({{0.6, 0.8}, {0, 0}}));
  y.backward(xt::xarray<double>({{1, 1}, {1, 1}}));
  // torch: 1 / eps = 1e12 at the zero row (the norm's own gradient is 0 there; docs/gradients.md).
  CHECK(x.grad()(1, 0) == Approx(1e12).epsilon(1e-12));
  CHECK(x.grad()(1, 1) == Approx(1e12).epsilon(1e-12));
  CHECK_GRADCHECK([](const Inputs& in) { return normalize(in[0]); }, (Inputs{rand_input({3, 4}, 303)}));
  CHECK_GRADCHECK([](const Inputs& in) { return normalize(in[0], 1, 0); }, (Inputs{rand_input({3, 4}, 304)}));
  CHECK_GRADCHECK([](const Inputs& in) { return normalize(in[0], 3, -1); }, (Inputs{rand_input({2, 2, 3}, 305)}));
  CHECK_THROWS_WITH(normalize(Tensor<double>::zeros({3})), Catch::Contains("normalize") && Catch::Contains("dim 1"));
  CHECK_THROWS_WITH(normalize(x, -2, 1), Catch::Contains("normalize") && Catch::Contains("-2"));
}

TEST_CASE("cosine_similarity: torch 1.13's clamped squared norms, values and gradients", "[normalize]") {
  const auto a = Tensor<double>::from_vector({1, 0, 0, 0, 0, 0}, {2, 3}, true);
  const auto b = Tensor<double>::from_vector({1, 1, 0, 1, 1, 1}, {2, 3}, true);
  const auto c = cosine_similarity(a, b);
  CHECK(c.data()(0) == Approx(1 / std::sqrt(2.0)).epsilon(1e-15));
  CHECK(c.data()(1) == 0.0);
  c.backward(xt::xarray<double>({1.0, 1.0}));
  // At the zero row: g x2 / (eps |x2|) = 1 / (1e-8 sqrt 3) each, as torch (docs/gradients.md).
  CHECK(a.grad()(1, 0) == Approx(1 / (1e-8 * std::sqrt(3.0))).epsilon(1e-12));
  CHECK(b.grad()(1, 2) == 0.0);
  // Below eps the clamp is not differentiated: g (x2 - w12 x1 / max(|x1|^2, eps^2)) / sqrt(...).
  auto tiny = Tensor<double>::from_vector({1e-9, 0}, {1, 2}, true);
  auto other = Tensor<double>::from_vector({1, 1}, {1, 2});
  cosine_similarity(tiny, other, 1, 1e-8).backward(xt::xarray<double>({1.0}));
  const double denom = 1 / std::sqrt(1e-16 * 2), w12 = 1e-9;
  CHECK(tiny.grad()(0, 0) == Approx(denom * (1 - w12 * 1e-9 / 1e-16)).epsilon(1e-12));
  CHECK(tiny.grad()(0, 1) == Approx(denom).epsilon(1e-12));
  CHECK_GRADCHECK([](const Inputs& in) { return cosine_similarity(in[0], in[1]); },
                  (Inputs{rand_input({3, 4}, 306), rand_input({3, 4}, 307)}));
  CHECK_GRADCHECK([](const Inputs& in) { return cosine_similarity(in[0], in[1], -1); },
                  (Inputs{rand_input({2, 1, 3}, 308), rand_input({4, 3}, 309)}));
  CHECK_GRADCHECK([](const Inputs& in) { return cosine_similarity(in[0], in[1], 0); },
                  (Inputs{rand_input({3, 2}, 310), rand_input({3, 1}, 311)}));
  CHECK_THROWS_WITH(cosine_similarity(a, Tensor<double>::zeros({4})),
                    Catch::Contains("cosine_similarity") && Catch::Contains("[2, 3]") && Catch::Contains("[4]"));
  CHECK_THROWS_WITH(cosine_similarity(a, b, 2), Catch::Contains("cosine_similarity") && Catch::Contains("dim 2"));
}
