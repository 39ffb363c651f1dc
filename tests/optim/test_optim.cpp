// Optimizers against torch 1.13's trajectories (tests/fixtures/make_optim_fixtures.py), schedules,
// gradient clipping, state_dict round trips and argument errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <xtensor/xview.hpp>

#include "tapegrad/autograd/ops.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/optim/optim.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::optim;
using tapegrad::testing::allclose;

namespace {

const std::string kFixtures = TAPEGRAD_TEST_FIXTURES_DIR;

xt::xarray<double> ones_like(const Tensor<double>& t) { return xt::xarray<double>(xt::ones<double>(t.shape())); }

// The gradient of sum(W^4)/4 + sum((W @ b)^2)/2 + sum(W * C), accumulated by three backward passes.
void compute_grads(const Tensor<double>& W, const Tensor<double>& b, const Tensor<double>& C) {
  auto t1 = pow(W, 4.0) * 0.25;
  t1.backward(ones_like(t1));
  auto t2 = pow(matmul(W, b), 2.0) * 0.5;
  t2.backward(ones_like(t2));
  auto t3 = W * C;
  t3.backward(ones_like(t3));
}

struct Problem {
  Tensor<double> W, b, z, C;
};

Problem make_problem() {
  Problem p;
  p.W = Tensor<double>(xt::xarray<double>(xt::reshape_view(xt::linspace<double>(-1.2, 1.5, 12), {3, 4})), true);
  p.b = Tensor<double>::from_vector({0.5, -0.3, 0.8, -1.2}, {4}, true);
  p.z = Tensor<double>::from_vector({1.0, 2.0}, {2}, true);
  p.C = Tensor<double>::from_vector({0.3, -0.2, 0.1, 0.0, -0.4, 0.25, 0.6, -0.1, 0.05, 0.7, -0.3, 0.2}, {3, 4});
  return p;
}

xt::xarray<double> row(const xt::xarray<double>& stacked, std::size_t i) {
  return xt::xarray<double>(xt::view(stacked, i));
}

// Steps Opt<double> made with `options` for 20 steps, its learning rate warmed up to options.lr over
// 5, and compares every step and the final state with torch's trajectory `name`.
template <template <typename> class Opt, typename Options>
void check_trajectory(const std::string& name, const Options& options) {
  INFO("config " << name);
  const io::safetensors::File ref(kFixtures + "/optim.safetensors");
  const auto Ws = ref.get<double>(name + ".W");
  const auto bs = ref.get<double>(name + ".b");
  const auto norms = ref.get<double>(name + ".norm");
  const auto lrs = ref.get<double>(name + ".lr");
  auto p = make_problem();
  // torch.linspace and xt::linspace may differ in the last bit: start from torch's values exactly.
  REQUIRE(allclose(p.W.data(), row(Ws, 0), 0, 1e-15));
  p.W.mutable_data() = row(Ws, 0);
  auto opt = std::make_unique<Opt<double>>(std::vector<Tensor<double>>{p.W, p.b, p.z}, options);
  const LinearWarmup schedule(options.lr, 5);
  for (std::size_t t = 0; t < 20; ++t) {
    INFO("step " << t);
    opt->zero_grad();
    compute_grads(p.W, p.b, p.C);
    CHECK(clip_grad_norm_(opt->params(), 4.0) == Approx(norms(t)).epsilon(1e-12));
    opt->set_lr(schedule(static_cast<std::int64_t>(t) + 1));
    CHECK(opt->lr() == Approx(lrs(t)).epsilon(1e-15));
    opt->step();
    CHECK(allclose(p.W.data(), row(Ws, t + 1), 1e-10, 1e-12));
    CHECK(allclose(p.b.data(), row(bs, t + 1), 1e-10, 1e-12));
  }
  CHECK(p.z.data() == xt::xarray<double>({1.0, 2.0}));
  CHECK_FALSE(p.z.has_grad());
  // The final state has torch's names and values (z, never stepped, has none, except in Adagrad,
  // which creates every parameter's state in its constructor).
  const auto state = opt->state_dict();
  std::vector<std::string> ours, theirs;
  for (const auto& kv : state)
    if (kv.first != "param_groups.0.lr") ours.push_back(kv.first);
  const std::string prefix = name + ".final.";
  for (const auto& n : ref.names())
    if (n.compare(0, prefix.size(), prefix) == 0) theirs.push_back(n.substr(prefix.size()));
  CHECK(ours == theirs);
  for (const auto& key : theirs) {
    INFO(key);
    if (state.count(key)) CHECK(allclose(state.at(key).data(), ref.get<double>(prefix + key), 1e-10, 1e-14));
  }
}

}  // namespace

TEST_CASE("SGD follows torch's trajectories (plain, momentum, nesterov, dampening, weight decay)", "[optim]") {
  check_trajectory<SGD>("sgd", SGDOptions{0.1});
  check_trajectory<SGD>("sgd_momentum", SGDOptions{0.1, 0.9});
  SGDOptions nesterov{0.05};
  nesterov.momentum = 0.8;
  nesterov.nesterov = true;
  nesterov.weight_decay = 0.01;
  check_trajectory<SGD>("sgd_nesterov_wd", nesterov);
  check_trajectory<SGD>("sgd_dampening", SGDOptions{0.1, 0.5, 0.3, 0.1});
}

TEST_CASE("Adam follows torch's trajectories (plain, amsgrad with L2)", "[optim]") {
  AdamOptions plain;
  plain.lr = 0.05;
  check_trajectory<Adam>("adam", plain);
  check_trajectory<Adam>("adam_amsgrad_l2", AdamOptions{0.05, {0.8, 0.99}, 1e-6, 0.1, true});
}

TEST_CASE("AdamW follows torch's trajectories (default decay, amsgrad)", "[optim]") {
  AdamWOptions plain;
  plain.lr = 0.05;
  CHECK(plain.weight_decay == 0.01);
  check_trajectory<AdamW>("adamw", plain);
  check_trajectory<AdamW>("adamw_amsgrad", AdamWOptions{0.05, {0.85, 0.95}, 1e-8, 0.1, true});
}

TEST_CASE("RMSprop follows torch's trajectories (plain, momentum + centered + weight decay)", "[optim]") {
  const RMSpropOptions defaults;
  CHECK(defaults.lr == 1e-2);
  CHECK(defaults.alpha == 0.99);
  CHECK(defaults.eps == 1e-8);
  CHECK(defaults.weight_decay == 0.0);
  CHECK(defaults.momentum == 0.0);
  CHECK_FALSE(defaults.centered);
  check_trajectory<RMSprop>("rmsprop", defaults);
  check_trajectory<RMSprop>("rmsprop_momentum_centered_wd", RMSpropOptions{0.005, 0.9, 1e-6, 0.1, 0.8, true});
}

namespace {

// The float optimizer, on the problem of check_trajectory in float, ends within float's precision
// of torch's double trajectory.
template <template <typename> class Opt, typename Options>
void check_float_trajectory(const std::string& name, const Options& options) {
  INFO("config " << name);
  const io::safetensors::File ref(kFixtures + "/optim.safetensors");
  const auto Ws = ref.get<double>(name + ".W");
  auto p = make_problem();
  Tensor<float> W(xt::xarray<float>(xt::cast<float>(p.W.data())), true);
  Tensor<float> b(xt::xarray<float>(xt::cast<float>(p.b.data())), true);
  Tensor<float> C(xt::xarray<float>(xt::cast<float>(p.C.data())));
  auto opt = std::make_unique<Opt<float>>(std::vector<Tensor<float>>{W, b}, options);
  const LinearWarmup schedule(options.lr, 5);
  for (std::int64_t t = 0; t < 20; ++t) {
    opt->zero_grad();
    auto t1 = pow(W, 4.0f) * 0.25f;
    t1.backward(xt::xarray<float>(xt::ones<float>(t1.shape())));
    auto t2 = pow(matmul(W, b), 2.0f) * 0.5f;
    t2.backward(xt::xarray<float>(xt::ones<float>(t2.shape())));
    auto t3 = W * C;
    t3.backward(xt::xarray<float>(xt::ones<float>(t3.shape())));
    clip_grad_norm_(opt->params(), 4.0);
    opt->set_lr(schedule(t + 1));
    opt->step();
  }
  CHECK(allclose(xt::xarray<double>(xt::cast<double>(W.data())), row(Ws, 20), 1e-4, 1e-5));
}

}  // namespace

TEST_CASE("Adagrad follows torch's trajectories (plain, lr decay + weight decay + initial accumulator)", "[optim]") {
  AdagradOptions plain;
  CHECK(plain.lr == 1e-2);
  CHECK(plain.lr_decay == 0.0);
  CHECK(plain.weight_decay == 0.0);
  CHECK(plain.initial_accumulator_value == 0.0);
  CHECK(plain.eps == 1e-10);
  plain.lr = 0.1;
  check_trajectory<Adagrad>("adagrad", plain);
  check_trajectory<Adagrad>("adagrad_lr_decay_wd_init", AdagradOptions{0.1, 0.05, 0.1, 0.5});
}

TEST_CASE("float optimizers track the double trajectory", "[optim]") {
  check_float_trajectory<AdamW>("adamw", AdamWOptions{0.05});
  check_float_trajectory<RMSprop>("rmsprop_momentum_centered_wd", RMSpropOptions{0.005, 0.9, 1e-6, 0.1, 0.8, true});
  check_float_trajectory<Adagrad>("adagrad_lr_decay_wd_init", AdagradOptions{0.1, 0.05, 0.1, 0.5});
}

TEST_CASE("parameters without a gradient are skipped and zero_grad drops gradients", "[optim]") {
  auto a = Tensor<double>::from_vector({1.0, 2.0}, {2}, true);
  auto b = Tensor<double>::from_vector({3.0}, {1}, true);
  Adam<double> opt({a, b});
  a.set_grad(xt::xarray<double>({0.5, -0.5}));
  opt.step();
  CHECK(b.data() == xt::xarray<double>({3.0}));
  // Adam's first step moves each element by lr * sign(g) (up to eps).
  CHECK(a.data()(0) == Approx(1.0 - 1e-3).epsilon(1e-9));
  CHECK(a.data()(1) == Approx(2.0 + 1e-3).epsilon(1e-9));
  const auto state = opt.state_dict();
  CHECK(state.count("state.0.exp_avg") == 1);
  CHECK(state.count("state.1.exp_avg") == 0);
  CHECK(state.at("state.0.step").item() == 1.0);
  opt.zero_grad();
  CHECK_FALSE(a.has_grad());
  opt.step();  // nothing has a gradient: nothing changes
  CHECK(opt.state_dict().at("state.0.step").item() == 1.0);

  // RMSprop creates a parameter's state at its first step too, with only the buffers its options use.
  RMSprop<double> rms({a, b}, RMSpropOptions{0.01, 0.99, 1e-8, 0.0, 0.9});
  a.set_grad(xt::xarray<double>({0.5, -0.5}));
  const double a0 = a.data()(0);
  rms.step();
  CHECK(b.data() == xt::xarray<double>({3.0}));
  const auto rms_state = rms.state_dict();
  CHECK(rms_state.count("state.0.square_avg") == 1);
  CHECK(rms_state.count("state.0.momentum_buffer") == 1);
  CHECK(rms_state.count("state.0.grad_avg") == 0);
  CHECK(rms_state.count("state.1.square_avg") == 0);
  CHECK(rms_state.at("state.0.step").item() == 1.0);
  // The first step from zero state: v = 0.01 g^2, buf = g / (sqrt(v) + eps), p <- p - lr buf.
  const double buf0 = 0.5 / (std::sqrt(0.01 * 0.25) + 1e-8);
  CHECK(rms_state.at("state.0.square_avg").data()(1) == Approx(0.01 * 0.25).epsilon(1e-14));
  CHECK(rms_state.at("state.0.momentum_buffer").data()(1) == Approx(-buf0).epsilon(1e-14));
  CHECK(a.data()(0) == Approx(a0 - 0.01 * buf0).epsilon(1e-14));

  // Adagrad, as torch's, has every parameter's state from the constructor on: step 0 and "sum" at
  // initial_accumulator_value; a parameter without a gradient keeps it.
  Adagrad<double> ada({a, b}, AdagradOptions{0.1, 0.5, 0.0, 0.25});
  const auto fresh = ada.state_dict();
  CHECK(fresh.size() == 5);
  CHECK(fresh.at("state.0.step").item() == 0.0);
  CHECK(fresh.at("state.0.sum").data() == xt::xarray<double>({0.25, 0.25}));
  CHECK(fresh.at("state.1.step").item() == 0.0);
  CHECK(fresh.at("state.1.sum").data() == xt::xarray<double>({0.25}));
  const double a1 = a.data()(1);
  ada.step();  // a's gradient is still set: its step 1 at lr 0.1, then step 2 at lr 0.1 / (1 + 0.5)
  ada.step();
  CHECK(b.data() == xt::xarray<double>({3.0}));
  const auto ada_state = ada.state_dict();
  CHECK(ada_state.at("state.0.step").item() == 2.0);
  CHECK(ada_state.at("state.0.sum").data()(1) == Approx(0.25 + 2 * 0.25).epsilon(1e-15));
  CHECK(ada_state.at("state.1.step").item() == 0.0);
  CHECK(ada_state.at("state.1.sum").data() == xt::xarray<double>({0.25}));
  const double expected = a1 + 0.1 * 0.5 / (std::sqrt(0.5) + 1e-10) + 0.1 / 1.5 * 0.5 / (std::sqrt(0.75) + 1e-10);
  CHECK(a.data()(1) == Approx(expected).epsilon(1e-14));
}

TEST_CASE("schedules give the documented values", "[optim]") {
  const LinearWarmup warm(0.1, 4);
  CHECK(warm(0) == 0.0);
  CHECK(warm(1) == Approx(0.025));
  CHECK(warm(3) == Approx(0.075));
  CHECK(warm(4) == 0.1);
  CHECK(warm(1000) == 0.1);
  CHECK(LinearWarmup(0.3, 0)(0) == 0.3);

  const LinearDecay decay(1.0, 10, 2);
  CHECK(decay(0) == 0.0);
  CHECK(decay(1) == 0.5);
  CHECK(decay(2) == 1.0);
  CHECK(decay(6) == 0.5);
  CHECK(decay(10) == 0.0);
  CHECK(decay(15) == 0.0);
  CHECK(LinearDecay(2.0, 4)(0) == 2.0);
  CHECK(LinearDecay(2.0, 4)(3) == 0.5);

  const CosineDecay cosine(1.0, 10);
  CHECK(cosine(0) == 1.0);
  CHECK(cosine(5) == Approx(0.5));
  CHECK(cosine(10) == Approx(0.0).margin(1e-15));
  CHECK(cosine(20) == Approx(0.0).margin(1e-15));
  const CosineDecay cosine_floor(1.0, 10, 2, 0.1);
  CHECK(cosine_floor(1) == 0.5);
  CHECK(cosine_floor(4) == Approx(0.8681980515339464));  // 0.1 + 0.9 * (1 + cos(pi / 4)) / 2
  CHECK(cosine_floor(6) == Approx(0.55));
  CHECK(cosine_floor(10) == Approx(0.1));
  CHECK(cosine_floor(11) == Approx(0.1));

  const InverseSqrt isqrt(1.0, 4);
  CHECK(isqrt(0) == 0.0);
  CHECK(isqrt(2) == 0.5);
  CHECK(isqrt(4) == 1.0);
  CHECK(isqrt(16) == 0.5);
  CHECK(isqrt(64) == 0.25);

  const Noam noam(512, 4000);
  CHECK(noam(0) == 0.0);
  CHECK(noam(1) == Approx(1.746928107421711e-07).epsilon(1e-12));
  CHECK(noam(4000) == Approx(0.0006987712429686843).epsilon(1e-12));  // the peak: (512 * 4000)^-0.5
  CHECK(noam(16000) == Approx(0.00034938562148434214).epsilon(1e-12));
  CHECK(Noam(64, 100, 2.0)(10) == Approx(0.0025).epsilon(1e-12));  // 2 / 8 * 10 / 1000

  // torch's StepLR(step_size=3, gamma=0.1) and ExponentialLR(gamma=0.9) on lr 0.5, stepped after each
  // optimizer step, give the steps 1, 2, ... these rates.
  const StepDecay stepped(0.5, 3, 0.1);
  const std::vector<double> torch_step = {0.5, 0.5, 0.5, 0.05, 0.05, 0.05, 0.005000000000000001, 0.005000000000000001};
  for (std::size_t k = 0; k < torch_step.size(); ++k)
    CHECK(stepped(static_cast<std::int64_t>(k) + 1) == Approx(torch_step[k]).epsilon(1e-15));
  CHECK(stepped(0) == 0.5);
  const ExponentialDecay exponential(0.5, 0.9);
  const std::vector<double> torch_exp = {0.5, 0.45, 0.405, 0.36450000000000005, 0.32805000000000006};
  for (std::size_t k = 0; k < torch_exp.size(); ++k)
    CHECK(exponential(static_cast<std::int64_t>(k) + 1) == Approx(torch_exp[k]).epsilon(1e-15));
  CHECK(exponential(0) == 0.5);

  // Usable with any optimizer through set_lr.
  auto x = Tensor<double>::from_vector({1.0}, {1}, true);
  SGD<double> opt({x}, SGDOptions{0.0});
  const Schedule s = noam;
  opt.set_lr(s(4000));
  CHECK(opt.lr() == noam(4000));
}

TEST_CASE("schedules reject bad arguments and negative steps, naming the value", "[optim]") {
  CHECK_THROWS_AS(LinearWarmup(0.1, 4)(-1), std::invalid_argument);
  CHECK_THROWS_WITH(LinearWarmup(0.1, 4)(-3), Catch::Contains("-3"));
  CHECK_THROWS_WITH(LinearWarmup(-0.1, 4), Catch::Contains("-0.1"));
  CHECK_THROWS_WITH(LinearWarmup(0.1, -2), Catch::Contains("-2"));
  CHECK_THROWS_WITH(LinearDecay(0.1, 5, 5), Catch::Contains("total_steps (5)") && Catch::Contains("(5)"));
  CHECK_THROWS_WITH(CosineDecay(0.1, 10, 0, 0.5), Catch::Contains("min_lr (0.5)"));
  CHECK_THROWS_WITH(InverseSqrt(0.1, 0), Catch::Contains("warmup_steps must be >= 1, got 0"));
  CHECK_THROWS_WITH(Noam(0, 10), Catch::Contains("d_model must be >= 1, got 0"));
  CHECK_THROWS_WITH(Noam(8, 0), Catch::Contains("warmup_steps must be >= 1, got 0"));
  CHECK_THROWS_AS(Noam(8, 10)(-1), std::invalid_argument);
  CHECK_THROWS_WITH(StepDecay(0.1, 0), Catch::Contains("step_size must be >= 1, got 0"));
  CHECK_THROWS_WITH(StepDecay(0.1, 5, -0.5), Catch::Contains("gamma must be finite and >= 0, got -0.5"));
  CHECK_THROWS_WITH(ExponentialDecay(0.1, std::numeric_limits<double>::infinity()), Catch::Contains("gamma"));
  CHECK_THROWS_WITH(ExponentialDecay(0.1, 0.9)(-2), Catch::Contains("-2"));
}

TEST_CASE("clip_grad_norm_ uses torch's formula and returns the norm before clipping", "[optim]") {
  auto a = Tensor<double>::from_vector({3.0, -4.0}, {2}, true);
  auto b = Tensor<double>::from_vector({1.0}, {1, 1}, true);
  auto none = Tensor<double>::from_vector({5.0}, {1}, true);
  const std::vector<Tensor<double>> params{a, b, none};
  auto set = [&] {
    a.set_grad(xt::xarray<double>({3.0, -4.0}));
    b.set_grad(xt::xarray<double>(xt::xarray<double>::shape_type{1, 1}, 12.0));
  };
  set();
  CHECK(clip_grad_norm_(params, 6.5) == Approx(13.0).epsilon(1e-15));
  const double coef = 6.5 / (13.0 + 1e-6);
  CHECK(a.grad()(0) == Approx(3.0 * coef).epsilon(1e-15));
  CHECK(a.grad()(1) == Approx(-4.0 * coef).epsilon(1e-15));
  CHECK(b.grad()(0, 0) == Approx(12.0 * coef).epsilon(1e-15));
  CHECK_FALSE(none.has_grad());

  set();  // max_norm above the norm: untouched
  CHECK(clip_grad_norm_(params, 100.0) == Approx(13.0));
  CHECK(a.grad() == xt::xarray<double>({3.0, -4.0}));

  set();  // a coefficient of exactly 1 is not applied either (max_norm = norm + 1e-6)
  clip_grad_norm_(params, 13.0 + 1e-6);
  CHECK(b.grad()(0, 0) == 12.0);

  set();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(clip_grad_norm_(params, 6.0, inf) == 12.0);
  CHECK(b.grad()(0, 0) == Approx(12.0 * 6.0 / (12.0 + 1e-6)));

  set();
  CHECK(clip_grad_norm_(params, 100.0, 1.0) == Approx(19.0));
  set();  // p = 3: (27 + 64 + 1728)^(1/3)
  CHECK(clip_grad_norm_(params, 100.0, 3.0) == Approx(std::cbrt(27.0 + 64.0 + 1728.0)));

  CHECK(clip_grad_norm_(std::vector<Tensor<double>>{none}, 1.0) == 0.0);
  CHECK_THROWS_WITH(clip_grad_norm_(params, 1.0, 0.0), Catch::Contains("norm_type must be > 0, got 0"));
}

TEST_CASE("clip_grad_value_ clamps every gradient element", "[optim]") {
  auto a = Tensor<float>::from_vector({0, 0, 0, 0}, {2, 2}, true);
  auto none = Tensor<float>::from_vector({0}, {1}, true);
  a.set_grad(xt::xarray<float>({{-3.0f, 0.5f}, {2.0f, -0.25f}}));
  clip_grad_value_(std::vector<Tensor<float>>{a, none}, 1.0);
  CHECK(a.grad() == xt::xarray<float>({{-1.0f, 0.5f}, {1.0f, -0.25f}}));
  CHECK_FALSE(none.has_grad());
  CHECK_THROWS_WITH(clip_grad_value_(std::vector<Tensor<float>>{a}, -1.0), Catch::Contains("-1"));
}

namespace {

// Steps with a fixed, step-dependent gradient.
void run(Optimizer<double>& opt, int from, int to) {
  for (int t = from; t < to; ++t) {
    for (auto p : opt.params()) {
      xt::xarray<double> g = xt::sin(p.data() * (1.0 + t)) + 0.1 * t;
      p.set_grad(g);
    }
    opt.step();
  }
}

}  // namespace

TEST_CASE("optimizer state_dict round trip: stepping after a reload is identical", "[optim]") {
  auto roundtrip = [](auto make) {
    auto w1 = Tensor<double>::from_vector({0.5, -1.0, 2.0, 0.1, 0.2, 0.3}, {2, 3}, true);
    auto v1 = Tensor<double>::from_vector({1.5}, {1}, true);
    auto opt1 = make(std::vector<Tensor<double>>{w1, v1});
    run(*opt1, 0, 5);
    opt1->set_lr(0.02);
    // Through a safetensors file, as a checkpoint would store it.
    const auto path = std::filesystem::temp_directory_path() / "tapegrad_test_optim_state.safetensors";
    io::safetensors::save_state_dict(path.string(), opt1->state_dict());
    auto w2 = Tensor<double>(xt::xarray<double>(w1.data()), true);
    auto v2 = Tensor<double>(xt::xarray<double>(v1.data()), true);
    auto opt2 = make(std::vector<Tensor<double>>{w2, v2});
    StateDict<double> loaded;
    const io::safetensors::File file(path.string());
    for (const auto& n : file.names()) loaded[n] = Tensor<double>(file.get<double>(n));
    std::filesystem::remove(path);
    opt2->load_state_dict(loaded);
    CHECK(opt2->lr() == 0.02);
    run(*opt1, 5, 10);
    run(*opt2, 5, 10);
    CHECK(w1.data() == w2.data());
    CHECK(v1.data() == v2.data());
    CHECK(w1.data() != xt::xarray<double>({{0.5, -1.0, 2.0}, {0.1, 0.2, 0.3}}));
  };
  roundtrip([](std::vector<Tensor<double>> ps) {
    return std::make_unique<Adam<double>>(ps, AdamOptions{0.01, {0.9, 0.99}, 1e-8, 0.01, true});
  });
  roundtrip([](std::vector<Tensor<double>> ps) { return std::make_unique<AdamW<double>>(ps, AdamWOptions{0.01}); });
  roundtrip([](std::vector<Tensor<double>> ps) {
    return std::make_unique<RMSprop<double>>(ps, RMSpropOptions{0.01, 0.9, 1e-8, 0.01, 0.5, true});
  });
  roundtrip([](std::vector<Tensor<double>> ps) {
    return std::make_unique<Adagrad<double>>(ps, AdagradOptions{0.05, 0.1, 0.01, 0.3});
  });
  roundtrip([](std::vector<Tensor<double>> ps) {
    SGDOptions o{0.01};
    o.momentum = 0.9;
    o.nesterov = true;
    return std::make_unique<SGD<double>>(ps, o);
  });
}

TEST_CASE("load_state_dict reports every problem at once and changes nothing", "[optim]") {
  auto w = Tensor<double>::from_vector({1, 2, 3, 4}, {2, 2}, true);
  auto v = Tensor<double>::from_vector({1}, {1}, true);
  Adam<double> opt({w, v});
  w.set_grad(xt::xarray<double>({{1, 1}, {1, 1}}));
  opt.step();
  auto good = opt.state_dict();

  auto bad = good;
  bad["state.0.exp_avg"] = Tensor<double>::zeros({4});
  bad.erase("state.0.exp_avg_sq");
  bad["state.0.step"] = Tensor<double>::scalar(1.5);
  bad["state.7.exp_avg"] = Tensor<double>::zeros({1});
  bad["state.1.momentum_buffer"] = Tensor<double>::zeros({1});
  bad["lr"] = Tensor<double>::scalar(1.0);
  const std::string m = testing::error_of<std::invalid_argument>([&] { opt.load_state_dict(bad); });
  CHECK_THAT(m, Catch::Contains("6 problem(s)"));
  testing::check_names_each(
      m, {"\"state.0.exp_avg\" has shape [4], parameter 0 has shape [2, 2]", "missing key \"state.0.exp_avg_sq\"",
          "\"state.0.step\" is 1.5, not a non-negative integer", "unexpected key \"state.7.exp_avg\"",
          "unexpected key \"state.1.momentum_buffer\"", "unexpected key \"lr\""});
  CHECK(opt.state_dict().at("state.0.exp_avg").data() == good.at("state.0.exp_avg").data());

  // A state for a parameter that has never been stepped is incomplete without all its buffers.
  auto partial = good;
  partial["state.1.exp_avg"] = Tensor<double>::zeros({1});
  CHECK_THROWS_WITH(opt.load_state_dict(partial), Catch::Contains("missing key \"state.1.exp_avg_sq\"") &&
                                                      Catch::Contains("missing key \"state.1.step\""));
  auto no_lr = good;
  no_lr.erase("param_groups.0.lr");
  CHECK_THROWS_WITH(opt.load_state_dict(no_lr), Catch::Contains("missing key \"param_groups.0.lr\""));

  // RMSprop's buffers follow its options: a plain RMSprop's state lacks what momentum and centered
  // need, and has nothing they don't.
  RMSprop<double> plain({w, v});
  plain.step();
  RMSprop<double> full({w, v}, RMSpropOptions{0.01, 0.99, 1e-8, 0.0, 0.9, true});
  try {
    full.load_state_dict(plain.state_dict());
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK_THAT(std::string(e.what()), Catch::StartsWith("RMSprop.load_state_dict: 2 problem(s):") &&
                                          Catch::Contains("missing key \"state.0.momentum_buffer\"") &&
                                          Catch::Contains("missing key \"state.0.grad_avg\""));
  }
  full.step();
  CHECK_THROWS_WITH(plain.load_state_dict(full.state_dict()),
                    Catch::Contains("unexpected key \"state.0.momentum_buffer\"") &&
                        Catch::Contains("unexpected key \"state.0.grad_avg\""));

  // Adagrad's state, created for every parameter in the constructor, must list every parameter.
  Adagrad<double> ada({w, v}, AdagradOptions{0.1, 0.0, 0.0, 0.5});
  ada.step();
  auto ada_good = ada.state_dict();
  auto ada_bad = ada_good;
  ada_bad.erase("state.1.sum");
  ada_bad.erase("state.1.step");
  CHECK_THROWS_WITH(ada.load_state_dict(ada_bad), Catch::StartsWith("Adagrad.load_state_dict: 2 problem(s):") &&
                                                      Catch::Contains("missing key \"state.1.sum\"") &&
                                                      Catch::Contains("missing key \"state.1.step\""));
  CHECK(ada.state_dict().at("state.1.sum").data() == xt::xarray<double>({0.5}));
  ada_good["state.1.sum"] = Tensor<double>::from_vector({0.75}, {1});
  ada.load_state_dict(ada_good);
  CHECK(ada.state_dict().at("state.1.sum").data() == xt::xarray<double>({0.75}));
}

TEST_CASE("bad hyperparameters and parameter lists throw, naming the value", "[optim]") {
  auto x = Tensor<double>::from_vector({1.0}, {1}, true);
  const std::vector<Tensor<double>> ps{x};
  CHECK_THROWS_WITH(SGD<double>(ps, SGDOptions{-0.1}), Catch::Contains("invalid learning rate: -0.1"));
  CHECK_THROWS_WITH(SGD<double>(ps, SGDOptions{0.1, -0.5}), Catch::Contains("invalid momentum value: -0.5"));
  CHECK_THROWS_WITH(SGD<double>(ps, SGDOptions{0.1, 0.0, 0.0, -1.0}), Catch::Contains("weight_decay value: -1"));
  SGDOptions nesterov{0.1};
  nesterov.nesterov = true;
  CHECK_THROWS_WITH(SGD<double>(ps, nesterov), Catch::Contains("Nesterov") && Catch::Contains("momentum=0"));
  nesterov.momentum = 0.9;
  nesterov.dampening = 0.1;
  CHECK_THROWS_WITH(SGD<double>(ps, nesterov), Catch::Contains("dampening=0.1"));
  CHECK_THROWS_WITH(Adam<double>(ps, AdamOptions{0.1, {1.0, 0.999}}), Catch::Contains("index 0: 1"));
  CHECK_THROWS_WITH(Adam<double>(ps, AdamOptions{0.1, {0.9, -0.1}}), Catch::Contains("index 1: -0.1"));
  CHECK_THROWS_WITH(Adam<double>(ps, AdamOptions{0.1, {0.9, 0.999}, -1e-8}), Catch::Contains("epsilon value: -1e-08"));
  // eps 0, which torch accepts, is refused: a parameter whose gradient is 0 would be updated by 0/0.
  CHECK_THROWS_WITH(Adam<double>(ps, AdamOptions{0.1, {0.9, 0.999}, 0.0}),
                    "Adam: invalid epsilon value: 0 (must be positive: a parameter whose gradient is 0 would be "
                    "updated by 0/0)");
  CHECK_THROWS_WITH(AdamW<double>(ps, AdamWOptions{0.1, {0.9, 0.999}, 0.0}),
                    Catch::StartsWith("AdamW: invalid epsilon value: 0 (must be positive"));
  CHECK_THROWS_AS(Adam<double>(ps, AdamOptions{0.1, {0.9, 0.999}, std::nan("")}), std::invalid_argument);
  CHECK_NOTHROW(Adam<double>(ps, AdamOptions{0.1, {0.9, 0.999}, 1e-300}));
  // beta2 = 0 is defined (v is the last g^2: an update of about lr * sign(g)), as in torch.
  CHECK_NOTHROW(Adam<double>(ps, AdamOptions{0.1, {0.9, 0.0}}));
  CHECK_THROWS_WITH(AdamW<double>(ps, AdamWOptions{-1.0}), Catch::Contains("AdamW: invalid learning rate: -1"));
  CHECK_THROWS_WITH(AdamW<double>(ps, AdamWOptions{0.1, {0.9, 0.999}, 1e-8, -0.01}),
                    Catch::Contains("weight_decay value: -0.01"));
  CHECK_THROWS_AS(Adam<double>(ps, AdamOptions{std::nan("")}), std::invalid_argument);
  // AdamW's decay factor 1 - lr * weight_decay must stay positive (torch accepts any product): at 0 or
  // below every step zeroes or flips the weights. Checked again at each step, as set_lr may raise lr.
  CHECK_THROWS_WITH(AdamW<double>(ps, AdamWOptions{1000.0, {0.9, 0.999}, 1e-8, 0.1}),
                    "AdamW: learning rate 1000 times weight_decay 0.1 is 100, not below 1: the decoupled decay factor "
                    "1 - lr * weight_decay = -99 would zero or flip every weight each step");
  CHECK_THROWS_WITH(AdamW<double>(ps, AdamWOptions{0.5, {0.9, 0.999}, 1e-8, 2.0}),
                    Catch::StartsWith("AdamW: learning rate 0.5 times weight_decay 2 is 1, not below 1"));
  CHECK_NOTHROW(AdamW<double>(ps, AdamWOptions{1000.0, {0.9, 0.999}, 1e-8, 0.0}));
  CHECK_NOTHROW(Adam<double>(ps, AdamOptions{1000.0, {0.9, 0.999}, 1e-8, 0.1}));  // L2: no decay factor
  AdamW<double> adamw(ps, AdamWOptions{0.1, {0.9, 0.999}, 1e-8, 0.5});
  x.set_grad(xt::xarray<double>{1.0});
  adamw.set_lr(4.0);
  CHECK_THROWS_WITH(adamw.step(), Catch::StartsWith("AdamW: learning rate 4 times weight_decay 0.5 is 2"));
  CHECK(x.data()(0) == 1.0);
  // RMSprop: torch's messages in torch's order; alpha > 1 is accepted, as in torch.
  CHECK_THROWS_WITH(RMSprop<double>(ps, RMSpropOptions{-0.1, -1.0}), "RMSprop: invalid learning rate: -0.1");
  CHECK_THROWS_WITH(RMSprop<double>(ps, RMSpropOptions{0.1, 0.99, -1e-8, -1.0}),
                    "RMSprop: invalid epsilon value: -1e-08");
  CHECK_THROWS_WITH(RMSprop<double>(ps, RMSpropOptions{0.1, 0.99, 1e-8, -1.0, -0.5}),
                    "RMSprop: invalid momentum value: -0.5");
  CHECK_THROWS_WITH(RMSprop<double>(ps, RMSpropOptions{0.1, -0.5, 1e-8, -0.01}),
                    "RMSprop: invalid weight_decay value: -0.01");
  CHECK_THROWS_WITH(RMSprop<double>(ps, RMSpropOptions{0.1, -0.5}), "RMSprop: invalid alpha value: -0.5");
  CHECK_NOTHROW(RMSprop<double>(ps, RMSpropOptions{0.1, 1.5}));
  CHECK_THROWS_AS(RMSprop<double>(ps, RMSpropOptions{0.1, std::nan("")}), std::invalid_argument);
  Adam<double> opt(ps);
  CHECK_THROWS_WITH(opt.set_lr(-2.0), Catch::Contains("Adam: invalid learning rate: -2"));
  RMSprop<double> rms(ps);
  CHECK_THROWS_WITH(rms.set_lr(-3.0), "RMSprop: invalid learning rate: -3");
  // Adagrad: torch's messages in torch's order.
  CHECK_THROWS_WITH(Adagrad<double>(ps, AdagradOptions{-0.1, -1.0, -1.0, -1.0, -1.0}),
                    "Adagrad: invalid learning rate: -0.1");
  CHECK_THROWS_WITH(Adagrad<double>(ps, AdagradOptions{0.1, -0.5, -1.0, -1.0, -1.0}),
                    "Adagrad: invalid lr_decay value: -0.5");
  CHECK_THROWS_WITH(Adagrad<double>(ps, AdagradOptions{0.1, 0.0, -0.01, -1.0, -1.0}),
                    "Adagrad: invalid weight_decay value: -0.01");
  CHECK_THROWS_WITH(Adagrad<double>(ps, AdagradOptions{0.1, 0.0, 0.0, -0.2, -1.0}),
                    "Adagrad: invalid initial_accumulator_value value: -0.2");
  CHECK_THROWS_WITH(Adagrad<double>(ps, AdagradOptions{0.1, 0.0, 0.0, 0.0, -1e-10}),
                    "Adagrad: invalid epsilon value: -1e-10");
  CHECK_THROWS_AS(Adagrad<double>(ps, AdagradOptions{0.1, std::nan("")}), std::invalid_argument);
  Adagrad<double> ada(ps);
  CHECK_THROWS_WITH(ada.set_lr(-4.0), "Adagrad: invalid learning rate: -4");

  CHECK_THROWS_WITH(SGD<double>({}, SGDOptions{0.1}), Catch::Contains("empty parameter list"));
  CHECK_THROWS_WITH(SGD<double>({x, x}, SGDOptions{0.1}),
                    Catch::Contains("parameter 1 is the same tensor as parameter 0"));
  auto y = x * 2.0;
  CHECK_THROWS_WITH(SGD<double>({y}, SGDOptions{0.1}), Catch::Contains("non-leaf"));
}

TEST_CASE("ExponentialMovingAverage: the documented average, swapped in and out of the parameters", "[optim]") {
  auto w = Tensor<double>::from_vector({1.0, 2.0}, {2}, true);
  ExponentialMovingAverage<double> ema({w}, 0.5);
  w.mutable_data() = xt::xarray<double>({3.0, 6.0});
  ema.update();  // decay_1 = min(0.5, 2 / 11)
  const double d1 = 2.0 / 11.0;
  w.mutable_data() = xt::xarray<double>({5.0, 10.0});
  ema.update();  // decay_2 = min(0.5, 3 / 12)
  const double d2 = 3.0 / 12.0;
  for (int i = 0; i < 20; ++i) ema.update();  // past update 8 the decay is the given 0.5
  CHECK(ema.num_updates() == 22);
  {
    const auto averaged = ema.average_parameters();
    // After 22 updates from a constant parameter the average has nearly reached it.
    CHECK(allclose(w.data(), xt::xarray<double>({5.0, 10.0}), 1e-4, 0.0));
    CHECK(w.data() != xt::xarray<double>({5.0, 10.0}));
  }
  CHECK(w.data() == xt::xarray<double>({5.0, 10.0}));  // the trained values are back

  // Exact values after two updates, and a state_dict round trip that continues identically.
  auto u = Tensor<double>::from_vector({1.0, 2.0}, {2}, true);
  ExponentialMovingAverage<double> a({u}, 0.5);
  u.mutable_data() = xt::xarray<double>({3.0, 6.0});
  a.update();
  u.mutable_data() = xt::xarray<double>({5.0, 10.0});
  a.update();
  a.store();
  a.copy_to();
  const xt::xarray<double> two_updates = {(d2 * (d1 * 1.0 + (1 - d1) * 3.0) + (1 - d2) * 5.0),
                                          (d2 * (d1 * 2.0 + (1 - d1) * 6.0) + (1 - d2) * 10.0)};
  CHECK(allclose(u.data(), two_updates, 1e-15, 0.0));
  a.restore();
  CHECK_THROWS_WITH(a.restore(), "ExponentialMovingAverage::restore: nothing was stored");
  auto v = Tensor<double>::from_vector({0.0, 0.0}, {2}, true);
  ExponentialMovingAverage<double> b({v}, 0.5);
  b.load_state_dict(a.state_dict());
  v.mutable_data() = u.data();
  a.update();
  b.update();
  CHECK(b.num_updates() == 3);
  CHECK(a.state_dict().at("shadow.0").data() == b.state_dict().at("shadow.0").data());
}

TEST_CASE("ExponentialMovingAverage: bad arguments and states are refused, naming the problem", "[optim]") {
  auto w = Tensor<float>::from_vector({1.0f, 2.0f}, {2}, true);
  CHECK_THROWS_WITH(ExponentialMovingAverage<float>({w}, 1.5),
                    "ExponentialMovingAverage: decay must be in [0, 1], got 1.5");
  CHECK_THROWS_WITH(ExponentialMovingAverage<float>({}, 0.9), "ExponentialMovingAverage got an empty parameter list");
  ExponentialMovingAverage<float> ema({w}, 0.9);
  StateDict<float> bad;
  bad["shadow.0"] = Tensor<float>::from_vector({1.0f, 2.0f, 3.0f}, {3});
  bad["shadow.1"] = Tensor<float>::from_vector({1.0f}, {1});
  CHECK_THROWS_WITH(ema.load_state_dict(bad),
                    "ExponentialMovingAverage::load_state_dict: \"shadow.0\" has shape [3], parameter 0 has [2]; "
                    "unexpected \"shadow.1\"; missing \"num_updates\"");
  bad.erase("shadow.1");
  bad["shadow.0"] = Tensor<float>::from_vector({1.0f, 2.0f}, {2});
  bad["num_updates"] = Tensor<float>::scalar(2.5f);
  CHECK_THROWS_WITH(ema.load_state_dict(bad),
                    "ExponentialMovingAverage::load_state_dict: \"num_updates\" is not a count");
  CHECK(ema.num_updates() == 0);
}
