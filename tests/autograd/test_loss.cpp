// The losses of loss.cpp: mse_loss, l1_loss, smooth_l1_loss, huber_loss, kl_div, binary_cross_entropy
// and binary_cross_entropy_with_logits (gradcheck in double for every reduction, input and target both
// differentiable), cross_entropy and nll_loss: hand-computed values, numerical stability at the edges,
// and errors. Parity with torch's values is in test_op_registry.cpp and test_parity_ops.cpp.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/ops.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::testing;
using TD = Tensor<double>;
using Inputs = std::vector<TD>;

namespace {
const Reduction kReductions[] = {Reduction::None, Reduction::Mean, Reduction::Sum};
TD constant(const Shape& shape, std::uint64_t seed, double low, double high) {
  Generator gen(seed);
  return TD::uniform(shape, low, high, gen);
}
}  // namespace

TEST_CASE("mse_loss and l1_loss: gradcheck for each reduction, with broadcasting", "[loss][gradcheck]") {
  for (Reduction r : kReductions) {
    INFO("reduction " << static_cast<int>(r));
    CHECK_GRADCHECK([r](const Inputs& in) { return mse_loss(in[0], in[1], r); },
                    (Inputs{rand_input({3, 4}, 1), rand_input({3, 4}, 2)}));
    CHECK_GRADCHECK([r](const Inputs& in) { return mse_loss(in[0], in[1], r); },
                    (Inputs{rand_input({2, 3, 4}, 3), rand_input({3, 1}, 4)}));
    CHECK_GRADCHECK([r](const Inputs& in) { return l1_loss(in[0], in[1], r); },
                    (Inputs{rand_input({3, 4}, 5), rand_input({3, 4}, 6)}));
    CHECK_GRADCHECK([r](const Inputs& in) { return l1_loss(in[0], in[1], r); },
                    (Inputs{rand_input({4}, 7), rand_input({2, 1}, 8)}));
  }
}

TEST_CASE("mse_loss and l1_loss: values, shapes and torch's edge cases", "[loss]") {
  const TD x = TD::from_vector({1, 2, 3, 4}, {2, 2}, true);
  const TD y = TD::from_vector({1, 0, 5, 3}, {2, 2});
  CHECK(mse_loss(x, y).item() == 9.0 / 4);  // (0 + 4 + 4 + 1) / 4
  CHECK(mse_loss(x, y, Reduction::Sum).item() == 9.0);
  CHECK(mse_loss(x, y, Reduction::None).to_vector() == std::vector<double>{0, 4, 4, 1});
  CHECK(l1_loss(x, y).item() == 5.0 / 4);
  CHECK(l1_loss(x, y, Reduction::None).shape() == Shape{2, 2});
  // l1's gradient at equal values is 0 (torch's sign(0)).
  l1_loss(x, y, Reduction::Sum).backward();
  CHECK(x.grad() == xt::xarray<double>({{0, 1}, {-1, 1}}));
  // A broadcast target: the broadcast shape for None, and the mean over it.
  CHECK(mse_loss(TD::zeros({2, 3}), TD::ones({3}), Reduction::None).shape() == Shape{2, 3});
  CHECK(mse_loss(TD::zeros({2, 3}), TD::ones({3})).item() == 1.0);
  // The mean of nothing is NaN, the sum 0, as torch.
  CHECK(std::isnan(mse_loss(TD::zeros({0}), TD::zeros({0})).item()));
  CHECK(l1_loss(TD::zeros({0}), TD::zeros({0}), Reduction::Sum).item() == 0.0);
  CHECK(mse_loss(Tensor<float>::ones({2}), Tensor<float>::zeros({2})).item() == 1.0f);
  CHECK_THROWS_AS(mse_loss(TD::zeros({2, 3}), TD::zeros({4})), ShapeError);
  CHECK_THROWS_WITH(l1_loss(TD::zeros({2, 3}), TD::zeros({4})),
                    Catch::Contains("l1_loss") && Catch::Contains("[2, 3]") && Catch::Contains("[4]"));
}

TEST_CASE("binary_cross_entropy: gradcheck for each reduction, with and without weight", "[loss][gradcheck]") {
  const TD weight = constant({4}, 9, 0.5, 2.0);
  for (Reduction r : kReductions) {
    INFO("reduction " << static_cast<int>(r));
    BinaryCrossEntropyOptions<double> plain, weighted;
    plain.reduction = weighted.reduction = r;
    weighted.weight = weight;
    for (const auto& o : {plain, weighted}) {
      CHECK_GRADCHECK([o](const Inputs& in) { return binary_cross_entropy(in[0], in[1], o); },
                      (Inputs{rand_input({3, 4}, 10, 0.05, 0.95), rand_input({3, 4}, 11, 0.0, 1.0)}));
    }
  }
}

TEST_CASE("binary_cross_entropy: values, the log clamped at -100, and errors", "[loss]") {
  const TD x = TD::from_vector({0.5, 0.9}, {2}, true);
  const TD y = TD::from_vector({1.0, 0.0}, {2});
  CHECK(binary_cross_entropy(x, y).item() == Approx((-std::log(0.5) - std::log(0.1)) / 2).epsilon(1e-14));
  BinaryCrossEntropyOptions<double> o;
  o.weight = TD::from_vector({2.0, 3.0}, {2});
  o.reduction = Reduction::None;
  const auto weighted = binary_cross_entropy(x, y, o).to_vector();
  CHECK(weighted[0] == Approx(-2 * std::log(0.5)).epsilon(1e-14));
  CHECK(weighted[1] == Approx(-3 * std::log(1 - 0.9)).epsilon(1e-14));
  // Certain and wrong costs 100, certain and right 0; soft targets at the ends stay finite.
  o.weight = TD();
  const TD ends = TD::from_vector({0.0, 1.0, 0.0, 1.0}, {4}, true);
  const TD ends_target = TD::from_vector({1.0, 0.0, 0.0, 0.25}, {4});
  CHECK(binary_cross_entropy(ends, ends_target, o).to_vector() == std::vector<double>{100, 100, 0, 75});
  binary_cross_entropy(ends, ends_target, o).sum().backward();
  // torch's gradient (x - y) / max(x (1 - x), 1e-12 as a float): large but finite.
  const double eps = 1e-12f;
  const std::vector<double> want = {-1 / eps, 1 / eps, 0, 0.75 / eps};
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(ends.grad()(i) == Approx(want[i]).epsilon(1e-15));

  CHECK_THROWS_WITH(binary_cross_entropy(TD::from_vector({0.5, 1.5}, {2}), TD::zeros({2})),
                    "binary_cross_entropy: input 1.5 at position 1 is outside [0, 1] (it takes probabilities; "
                    "use binary_cross_entropy_with_logits for logits)");
  CHECK_THROWS_WITH(binary_cross_entropy(TD::full({2}, std::nan("")), TD::zeros({2})),
                    Catch::Contains("input nan at position 0"));
  CHECK_THROWS_WITH(binary_cross_entropy(TD::zeros({2, 3}), TD::zeros({3})),
                    "binary_cross_entropy: target of shape [3] does not match input [2, 3] (they must be equal)");
  BinaryCrossEntropyOptions<double> bad;
  bad.weight = TD::ones({2});
  CHECK_THROWS_WITH(binary_cross_entropy(TD::zeros({2, 3}), TD::zeros({2, 3}), bad), Catch::Contains("[2, 3]"));
  bad.weight = TD::ones({2, 1, 3});  // broadcasts, but to a larger shape than the input's
  CHECK_THROWS_WITH(binary_cross_entropy(TD::zeros({2, 3}), TD::zeros({2, 3}), bad),
                    "binary_cross_entropy: weight of shape [2, 1, 3] does not broadcast to the input's shape [2, 3]");
  bad.weight = TD::ones({3}, /*requires_grad=*/true);
  CHECK_THROWS_WITH(binary_cross_entropy(TD::zeros({2, 3}), TD::zeros({2, 3}), bad),
                    "binary_cross_entropy: not differentiable with respect to weight, which requires grad "
                    "(detach() it)");
  NoGradGuard no_grad;  // without recording, a weight that requires grad is only a value
  CHECK(binary_cross_entropy(TD::full({2, 3}, 0.5), TD::zeros({2, 3}), bad).item() == Approx(std::log(2.0)));
}

TEST_CASE("binary_cross_entropy_with_logits: gradcheck with weight and pos_weight", "[loss][gradcheck]") {
  const TD weight = constant({3, 1}, 12, 0.5, 2.0), pos_weight = constant({4}, 13, 0.5, 3.0);
  for (Reduction r : kReductions) {
    INFO("reduction " << static_cast<int>(r));
    for (int variant = 0; variant < 4; ++variant) {
      INFO("weight " << (variant & 1) << ", pos_weight " << (variant >> 1));
      BinaryCrossEntropyWithLogitsOptions<double> o;
      o.reduction = r;
      if (variant & 1) o.weight = weight;
      if (variant & 2) o.pos_weight = pos_weight;
      CHECK_GRADCHECK([o](const Inputs& in) { return binary_cross_entropy_with_logits(in[0], in[1], o); },
                      (Inputs{rand_input({3, 4}, 14, -4.0, 4.0), rand_input({3, 4}, 15, 0.0, 1.0)}));
    }
  }
}

TEST_CASE("binary_cross_entropy_with_logits equals BCE of the sigmoid and stays finite for huge logits", "[loss]") {
  const TD x = rand_input({3, 4}, 16, -4.0, 4.0), y = constant({3, 4}, 17, 0.0, 1.0);
  BinaryCrossEntropyWithLogitsOptions<double> lo;
  BinaryCrossEntropyOptions<double> po;
  lo.reduction = po.reduction = Reduction::None;
  CHECK(tapegrad::testing::allclose(binary_cross_entropy_with_logits(x, y, lo).data(),
                                    binary_cross_entropy(sigmoid(x), y, po).data(), 1e-12, 1e-14));
  // pos_weight p multiplies the positive term: with target 1 the loss is p * softplus(-x).
  lo.pos_weight = TD::full({4}, 3.0);
  const auto weighted = binary_cross_entropy_with_logits(x, TD::ones({3, 4}), lo);
  const auto plain = binary_cross_entropy_with_logits(
      x, TD::ones({3, 4}), BinaryCrossEntropyWithLogitsOptions<double>{{}, {}, Reduction::None});
  CHECK(tapegrad::testing::allclose(weighted.data(), xt::xarray<double>(3.0 * plain.data()), 1e-14, 0.0));

  // exp(1000) overflows; the log-sum-exp form does not.
  for (auto big : {1000.0, 88.0 * 2}) {
    const Tensor<float> logits =
        Tensor<float>::from_vector({static_cast<float>(big), static_cast<float>(-big)}, {2}, true);
    const Tensor<float> target = Tensor<float>::from_vector({0.0f, 1.0f}, {2});
    BinaryCrossEntropyWithLogitsOptions<float> fo;
    fo.reduction = Reduction::None;
    const auto loss = binary_cross_entropy_with_logits(logits, target, fo);
    CHECK(loss.to_vector() == std::vector<float>{static_cast<float>(big), static_cast<float>(big)});
    loss.sum().backward();
    CHECK(logits.grad() == xt::xarray<float>({1.0f, -1.0f}));
  }
  CHECK_THROWS_WITH(binary_cross_entropy_with_logits(TD::zeros({2}), TD::zeros({2, 1})),
                    "binary_cross_entropy_with_logits: target of shape [2, 1] does not match input [2] (they must be "
                    "equal)");
  BinaryCrossEntropyWithLogitsOptions<double> bad;
  bad.pos_weight = TD::ones({2}, true);
  CHECK_THROWS_WITH(binary_cross_entropy_with_logits(TD::zeros({2}), TD::zeros({2}), bad),
                    Catch::Contains("not differentiable with respect to pos_weight"));
  bad.pos_weight = TD::ones({3});
  CHECK_THROWS_WITH(binary_cross_entropy_with_logits(TD::zeros({2}), TD::zeros({2}), bad),
                    Catch::Contains("binary_cross_entropy_with_logits") && Catch::Contains("[3]"));
}

TEST_CASE("smooth_l1_loss and huber_loss: gradcheck for each reduction, values at beta and delta",
          "[loss][gradcheck]") {
  for (Reduction r : kReductions) {
    INFO("reduction " << static_cast<int>(r));
    for (double beta : {1.0, 0.3, 0.0}) {
      CHECK_GRADCHECK([=](const Inputs& in) { return smooth_l1_loss(in[0], in[1], r, beta); },
                      (Inputs{rand_input({3, 4}, 20, -2, 2), rand_input({3, 4}, 21)}));
    }
    CHECK_GRADCHECK([=](const Inputs& in) { return huber_loss(in[0], in[1], r, 0.7); },
                    (Inputs{rand_input({2, 3, 4}, 22, -2, 2), rand_input({3, 1}, 23)}));
  }
  const TD x = TD::from_vector({0, 0.5, 3, -3}, {4}, true), t = TD::zeros({4});
  CHECK(smooth_l1_loss(x, t, Reduction::None, 0.5).data() == xt::xarray<double>({0, 0.25, 2.75, 2.75}));
  CHECK(huber_loss(x, t, Reduction::None, 0.5).data() == xt::xarray<double>({0, 0.125, 1.375, 1.375}));
  // Huber is smooth_l1 times delta (torch's identity).
  const TD y = rand_input({5}, 24, -3, 3);
  CHECK(allclose(huber_loss(y, TD::zeros({5}), Reduction::Sum, 2.0).data(),
                 (smooth_l1_loss(y, TD::zeros({5}), Reduction::Sum, 2.0) * 2.0).data(), 1e-15));
  // Deliberate difference: at beta = 0 and d = 0 the gradient is l1_loss's 0 (torch 1.13 gives -g).
  auto z = TD::from_vector({1, 2}, {2}, true);
  smooth_l1_loss(z, TD::from_vector({1, 1}, {2}), Reduction::Sum, 0.0).backward();
  CHECK(z.grad() == xt::xarray<double>({0, 1}));
  CHECK_THROWS_WITH(smooth_l1_loss(x, t, Reduction::Mean, -1.0),
                    Catch::Contains("smooth_l1_loss") && Catch::Contains("beta must be >= 0") && Catch::Contains("-1"));
  CHECK_THROWS_WITH(huber_loss(x, t, Reduction::Mean, 0.0),
                    Catch::Contains("huber_loss") && Catch::Contains("delta must be > 0") && Catch::Contains("0"));
  CHECK_THROWS_WITH(huber_loss(x, TD::zeros({3}), Reduction::Mean),
                    Catch::Contains("huber_loss") && Catch::Contains("[4]") && Catch::Contains("[3]"));
}

TEST_CASE("kl_div: torch's pointwise terms, batchmean, log_target and gradients", "[loss][gradcheck]") {
  const TD logp = log_softmax(rand_input({3, 4}, 25), 1);
  const TD q = softmax(rand_input({3, 4}, 26), 1);
  // batchmean is the sum over the batch size; mean is over every element (torch's default).
  const double total = kl_div(logp, q, Reduction::Sum).item();
  CHECK(kl_div(logp, q, Reduction::BatchMean).item() == Approx(total / 3).epsilon(1e-15));
  CHECK(kl_div(logp, q).item() == Approx(total / 12).epsilon(1e-15));
  CHECK(allclose(kl_div(logp, log(q), Reduction::None, true).data(), kl_div(logp, q, Reduction::None).data(), 1e-14));
  CHECK(kl_div(TD::scalar(-1.0), TD::scalar(0.5), Reduction::BatchMean).item() ==
        Approx(0.5 * (std::log(0.5) + 1)).epsilon(1e-15));  // a 0-d input: the sum, as torch
  for (Reduction r : {Reduction::None, Reduction::Mean, Reduction::Sum, Reduction::BatchMean}) {
    INFO("reduction " << static_cast<int>(r));
    CHECK_GRADCHECK([=](const Inputs& in) { return kl_div(in[0], in[1], r); },
                    (Inputs{rand_input({3, 4}, 27), rand_input({3, 4}, 28, 0.1, 1.0)}));
    CHECK_GRADCHECK([=](const Inputs& in) { return kl_div(in[0], in[1], r, true); },
                    (Inputs{rand_input({2, 3, 4}, 29), rand_input({3, 4}, 30, -3, 0)}));
  }
  // A zero target: its term is 0 (xlogy), the input's gradient -0, the target's NaN (torch 1.13).
  auto x = TD::from_vector({-1, -2}, {2}, true), t = TD::from_vector({0, 0.3}, {2}, true);
  const TD l = kl_div(x, t, Reduction::Sum);
  CHECK(l.item() == Approx(0.3 * (std::log(0.3) + 2)).epsilon(1e-15));
  l.backward();
  CHECK(x.grad()(0) == 0.0);
  CHECK(std::isnan(t.grad()(0)));
  CHECK(t.grad()(1) == Approx(std::log(0.3) + 1 + 2).epsilon(1e-15));
}

TEST_CASE("every loss refuses a reduction it does not take, naming it", "[loss][errors]") {
  const TD x = softmax(rand_input({2, 3}, 31), 1), y = softmax(rand_input({2, 3}, 32), 1);
  const IndexArray target = {0, 2};
  const auto bad = static_cast<Reduction>(7);
  // The message of the ShapeError f throws ("" if none).
  const auto error_of = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const ShapeError& e) {
      return e.what();
    }
    return "";
  };
  for (Reduction r : {Reduction::BatchMean, bad}) {
    const std::string named = r == Reduction::BatchMean ? "reduction 'batchmean'" : "reduction (7)";
    INFO(named);
    CrossEntropyOptions ce;
    ce.reduction = r;
    BinaryCrossEntropyOptions<double> bce;
    bce.reduction = r;
    BinaryCrossEntropyWithLogitsOptions<double> bcel;
    bcel.reduction = r;
    const std::pair<const char*, std::function<void()>> calls[] = {
        {"cross_entropy:", [&] { cross_entropy(x, target, ce); }},
        {"nll_loss:", [&] { nll_loss(x, target, r); }},
        {"mse_loss:", [&] { mse_loss(x, y, r); }},
        {"l1_loss:", [&] { l1_loss(x, y, r); }},
        {"smooth_l1_loss:", [&] { smooth_l1_loss(x, y, r); }},
        {"huber_loss:", [&] { huber_loss(x, y, r); }},
        {"binary_cross_entropy:", [&] { binary_cross_entropy(x, y, bce); }},
        {"binary_cross_entropy_with_logits:", [&] { binary_cross_entropy_with_logits(x, y, bcel); }},
    };
    for (const auto& [op, call] : calls) {
      CHECK_THAT(error_of(call), Catch::StartsWith(op) && Catch::Contains(named));
    }
  }
  CHECK_THROWS_WITH(kl_div(x, y, bad), Catch::Contains("kl_div") && Catch::Contains("(7)"));
  CHECK_THROWS_WITH(kl_div(x, TD::zeros({4})), Catch::Contains("kl_div") && Catch::Contains("[2, 3]"));
}

namespace {
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

// cross_entropy and nll_loss.

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
