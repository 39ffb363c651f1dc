// Gradient accumulation in the Trainer: N micro-batches step as one batch, to float rounding.
#include <catch2/catch.hpp>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "tapegrad/autograd/elementwise.hpp"
#include "tapegrad/autograd/indexing.hpp"
#include "tapegrad/autograd/loss.hpp"
#include "tapegrad/nn/linear.hpp"
#include "tapegrad/optim/adam.hpp"
#include "tapegrad/train/train.hpp"
#include "tests/helpers.hpp"

using namespace tapegrad;
using tapegrad::testing::TempDir;

namespace {

struct Mlp : nn::Module<double> {
  Mlp() {
    Generator gen(3);
    fc1 = register_module("fc1", std::make_shared<nn::Linear<double>>(4, 8, gen));
    fc2 = register_module("fc2", std::make_shared<nn::Linear<double>>(8, 3, gen));
  }
  Tensor<double> forward(const Tensor<double>& x) const { return fc2->forward(tanh(fc1->forward(x))); }
  std::string name() const override { return "Mlp"; }
  std::shared_ptr<nn::Linear<double>> fc1, fc2;
};

// Step s's batch of 10 examples; the targets of even rows whose last feature exceeds 0.3 are ignored, so
// that micro-batches of two rows or more count different numbers of targets, but never none.
std::pair<xt::xarray<double>, IndexArray> batch_of(std::int64_t step) {
  Generator gen(100 + static_cast<std::uint64_t>(step));
  const xt::xarray<double> x = Tensor<double>::uniform({10, 4}, -1.0, 1.0, gen).data();
  IndexArray labels = xt::zeros<std::int64_t>({10});
  for (std::size_t i = 0; i < 10; ++i)
    labels(i) = i % 2 == 0 && x(i, 3) > 0.3 ? -100 : static_cast<std::int64_t>(gen.randint(3));
  return {x, labels};
}

// What a Trainer of the Mlp needs: a run folder, Adam at a constant learning rate of 0.05, a log, and
// options of steps_per_epoch steps an epoch.
struct Setup {
  explicit Setup(std::int64_t steps_per_epoch) {
    options.steps_per_epoch = steps_per_epoch;
    options.schedule = [](std::int64_t) { return 0.05; };
  }
  TempDir tmp;
  const train::RunDirectory run{tmp.path};
  Mlp model;
  optim::Adam<double> adam{model.parameters()};
  std::ostringstream log;
  train::Progress progress{log, false, 1};
  train::TrainerOptions options;
};

struct Outcome {
  std::vector<xt::xarray<double>> parameters;
  int no_syncs = 0, synchronizations = 0;
  double logged_loss = 0;
};

// Five steps of Adam on the batches above, cut into `accumulate` micro-batches; with `replicas`, a
// simulated second rank identical to this one (its sums double, its gradient is this one's).
Outcome train_with(std::int64_t accumulate, bool replicas) {
  Setup s(5);
  s.options.log_every = 5;
  s.options.accumulate = accumulate;
  Outcome outcome;
  train::TrainerHooks<double> hooks;
  hooks.forward = [&](std::int64_t step, std::int64_t, const train::MicroBatch& micro) {
    const auto [x, labels] = batch_of(step);
    const std::vector<std::size_t> rows = train::micro_batch_rows({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, micro);
    xt::xarray<double> xs = xt::xarray<double>::from_shape({rows.size(), 4});
    IndexArray ys = xt::zeros<std::int64_t>({rows.size()});
    double counted = 0;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      for (std::size_t c = 0; c < 4; ++c) xs(r, c) = x(rows[r], c);
      ys(r) = labels(rows[r]);
      counted += ys(r) >= 0 ? 1 : 0;
    }
    train::StepOutput<double> out;
    out.loss = cross_entropy(s.model.forward(Tensor<double>(xs)), ys);
    out.count = counted;
    return out;
  };
  if (replicas) {
    hooks.replicas.rank = 1;
    hooks.replicas.size = 2;
    hooks.replicas.synchronize_gradients = [&] { ++outcome.synchronizations; };
    hooks.replicas.all_reduce_sum = [](std::vector<double>& values) {
      for (double& v : values) v *= 2;
    };
    hooks.replicas.no_sync = [&] {
      ++outcome.no_syncs;
      return std::shared_ptr<void>();
    };
  }
  train::Trainer<double> trainer(s.run, s.model, s.adam, s.options, hooks, s.progress);
  const train::TrainerResult result = trainer.run();
  REQUIRE(result.step == 5);
  outcome.logged_loss = result.logged_losses.at(0);
  for (const auto& p : s.model.parameters()) outcome.parameters.push_back(p.data());
  return outcome;
}

}  // namespace

TEST_CASE("micro_batch_rows: consecutive parts, the longer first, never empty", "[train][accumulate]") {
  const std::vector<std::size_t> rows = {5, 6, 7, 8, 9, 10, 11};
  CHECK(train::micro_batch_rows(rows, {0, 1}) == rows);
  CHECK(train::micro_batch_rows(rows, {0, 3}) == std::vector<std::size_t>{5, 6, 7});
  CHECK(train::micro_batch_rows(rows, {1, 3}) == std::vector<std::size_t>{8, 9});
  CHECK(train::micro_batch_rows(rows, {2, 3}) == std::vector<std::size_t>{10, 11});
  CHECK(train::micro_batch_rows(rows, {6, 7}) == std::vector<std::size_t>{11});
  CHECK_THROWS_WITH(train::micro_batch_rows(rows, {7, 8}),
                    "micro_batch_rows: a batch of 7 rows cut into 8 micro-batches leaves micro-batch 7 empty "
                    "(accumulate over at most as many micro-batches as the batch has rows)");
  CHECK_THROWS_WITH(train::micro_batch_rows(rows, {3, 3}), "micro_batch_rows: micro-batch 3 of 3 is not one of them");
}

TEST_CASE("Trainer: N micro-batches of unequal target counts step as the whole batch, to float rounding",
          "[train][accumulate]") {
  const Outcome whole = train_with(1, false);
  for (std::int64_t n : {2, 3, 5}) {
    INFO("accumulate " << n);
    const Outcome parts = train_with(n, false);
    REQUIRE(parts.parameters.size() == whole.parameters.size());
    for (std::size_t i = 0; i < whole.parameters.size(); ++i) {
      CHECK(testing::allclose(parts.parameters[i], whole.parameters[i], 1e-10, 1e-12));
    }
    CHECK(parts.logged_loss == Approx(whole.logged_loss).epsilon(1e-12));
  }
}

TEST_CASE("Trainer: with replicas the gradients are reduced only after the last micro-batch", "[train][accumulate]") {
  const Outcome whole = train_with(1, true);
  const Outcome parts = train_with(3, true);
  CHECK(whole.no_syncs == 0);
  CHECK(parts.no_syncs == 5 * 2);  // every micro-batch but the last of each of the 5 steps
  CHECK(parts.synchronizations == 5);
  for (std::size_t i = 0; i < whole.parameters.size(); ++i) {
    CHECK(testing::allclose(parts.parameters[i], whole.parameters[i], 1e-10, 1e-12));
  }
}

TEST_CASE("Trainer: accumulate must be at least 1, and a micro-batch must count something", "[train][accumulate]") {
  Setup s(1);
  train::TrainerHooks<double> hooks;
  hooks.forward = [&](std::int64_t, std::int64_t, const train::MicroBatch&) {
    train::StepOutput<double> out;
    out.loss = s.model.forward(Tensor<double>(xt::ones<double>({1, 4}))).sum();
    out.count = 0;
    return out;
  };
  s.options.accumulate = 0;
  CHECK_THROWS_WITH(train::Trainer<double>(s.run, s.model, s.adam, s.options, hooks, s.progress),
                    "Trainer: accumulate (0) must be at least 1");
  s.options.accumulate = 2;
  train::Trainer<double> trainer(s.run, s.model, s.adam, s.options, hooks, s.progress);
  CHECK_THROWS_WITH(
      trainer.run(),
      "gradient accumulation: micro-batch 1 of 2 of step 1 counts 0 examples or tokens (must be positive)");
}
