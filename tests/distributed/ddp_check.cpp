// Data-parallel training checked against one process: run under mpirun by CTest (tests/CMakeLists.txt).
//
//   ddp_check equivalence --dtype float|double   N ranks x batch B == 1 process x batch N*B after 20
//                                                steps, for several bucket sizes and with gradient
//                                                accumulation over 2 micro-batches (no_sync)
//   ddp_check accumulate --dtype float|double    the Trainer on N ranks with --accumulate 1 and 3
//                                                (micro-batches of 2, 1 and 1 rows) == 1 process x
//                                                batch N*B, and DDP reduces once per step
//   ddp_check dropout                            with dropout the loss falls and the ranks' parameters
//                                                are bit-identical after every step
//   ddp_check resume                             10 steps, checkpoint, a fresh model resumed from it
//                                                for 10 more == 20 uninterrupted steps, bit for bit
//   ddp_check fault --fail-rank R                rank R throws at step 3: the job must end (checked
//                                                by the CTest wrapper), never hang
//   ddp_check die --fail-rank R                  rank R is killed (SIGKILL) at step 3: the same
//   ddp_check mismatch                           the last rank builds a wider model: named at start
//   ddp_check zero --dtype float|double          ZeroRedundancyOptimizer (AdamW) at stages 1 and 2 ==
//                                                DDP + plain AdamW after 12 steps of 2 micro-batches
//                                                with clipping; at stage 2 each rank holds only its
//                                                own gradients, and the ranks' states add up to one
//   ddp_check zero_save --dir D                  6 such steps with ZeRO-2 and with DDP + AdamW, each
//                                                checkpointed into D (run on 2 ranks)
//   ddp_check zero_resume --dir D                both checkpoints resumed for 6 more steps with ZeRO-2,
//                                                ZeRO-1 and plain AdamW == 12 uninterrupted steps of
//                                                one process (run on 1 and 3 ranks)
//
// Every rank prints nothing but failures; rank 0 prints one line of results. Exit 0 = passed.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tapegrad/autograd/loss.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/distributed/distributed.hpp"
#include "tapegrad/models/classifier.hpp"
#include "tapegrad/optim/adam.hpp"
#include "tapegrad/optim/adamw.hpp"
#include "tapegrad/optim/clip_grad.hpp"
#include "tapegrad/optim/sgd.hpp"
#include "tapegrad/train/checkpoint.hpp"
#include "tapegrad/train/loop.hpp"
#include "tapegrad/train/micro_batch.hpp"

namespace dist = tapegrad::distributed;
using tapegrad::Generator;
using tapegrad::Tensor;

namespace {

constexpr std::size_t kExamples = 96;  // a multiple of N * B for N = 1, 2, 4 and B = 4
constexpr std::size_t kLength = 12;
constexpr std::int64_t kVocab = 40;
constexpr std::size_t kBatch = 4;  // per rank
constexpr int kSteps = 20;

// Token sequences of 6..12 tokens (padded with 0), labelled 1 when most tokens are below 20: a task
// the model learns in a few steps, so that a falling loss is a real signal.
struct Data {
  xt::xarray<std::int64_t> ids = xt::zeros<std::int64_t>({kExamples, kLength});
  xt::xarray<bool> padding = xt::ones<bool>({kExamples, kLength});
  xt::xarray<std::int64_t> labels = xt::zeros<std::int64_t>({kExamples});

  Data() {
    Generator gen(1234);
    for (std::size_t i = 0; i < kExamples; ++i) {
      const std::size_t length = 6 + gen.randint(kLength - 5);
      std::size_t low = 0;
      for (std::size_t t = 0; t < length; ++t) {
        ids(i, t) = 1 + static_cast<std::int64_t>(gen.randint(kVocab - 1));
        padding(i, t) = false;
        low += ids(i, t) < 20 ? 1 : 0;
      }
      labels(i) = 2 * low > length ? 1 : 0;
    }
  }

  struct Batch {
    xt::xarray<std::int64_t> ids;
    xt::xarray<bool> padding;
    xt::xarray<std::int64_t> labels;
  };
  Batch rows(const std::vector<std::size_t>& which) const {
    Batch b{xt::zeros<std::int64_t>({which.size(), kLength}), xt::ones<bool>({which.size(), kLength}),
            xt::zeros<std::int64_t>({which.size()})};
    for (std::size_t r = 0; r < which.size(); ++r) {
      for (std::size_t t = 0; t < kLength; ++t) {
        b.ids(r, t) = ids(which[r], t);
        b.padding(r, t) = padding(which[r], t);
      }
      b.labels(r) = labels(which[r]);
    }
    return b;
  }
};

struct Settings {
  std::string mode;
  std::string dtype = "float";
  int fail_rank = -1;
  std::string dir;
};

template <typename T>
std::shared_ptr<tapegrad::models::TransformerClassifier<T>> make_model(double dropout, std::size_t d_model = 16) {
  tapegrad::models::TransformerClassifierOptions o;
  o.vocab_size = kVocab;
  o.max_len = kLength;
  o.d_model = d_model;
  o.nhead = 2;
  o.num_layers = 1;
  o.dim_feedforward = 32;
  o.dropout = dropout;
  o.attention_dropout = dropout;
  Generator gen(7);
  return std::make_shared<tapegrad::models::TransformerClassifier<T>>(o, gen);
}

// SGD with momentum in float, Adam in double: both optimizers the programs use, and Adam's division by
// sqrt(v) would amplify float rounding in near-zero gradients past the 1e-6 bound.
template <typename T>
std::unique_ptr<tapegrad::optim::Optimizer<T>> make_optimizer(const tapegrad::nn::Module<T>& model) {
  if constexpr (std::is_same_v<T, float>) {
    tapegrad::optim::SGDOptions o{0.05};
    o.momentum = 0.9;
    return std::make_unique<tapegrad::optim::SGD<T>>(model.parameters(), o);
  } else {
    tapegrad::optim::AdamOptions o;
    o.lr = 1e-2;
    return std::make_unique<tapegrad::optim::Adam<T>>(model.parameters(), o);
  }
}

// The examples of step `step` for a sampler of `ranks` replicas at `rank` with batch `batch`.
std::vector<std::size_t> step_rows(int ranks, int rank, std::size_t batch, int step) {
  dist::DistributedSampler sampler(kExamples, ranks, rank, /*shuffle=*/true, /*seed=*/99);
  const std::size_t steps_per_epoch = sampler.num_samples() / batch;
  sampler.set_epoch(static_cast<std::uint64_t>(step) / steps_per_epoch);
  const auto mine = sampler.indices();
  const std::size_t first = (static_cast<std::size_t>(step) % steps_per_epoch) * batch;
  return std::vector<std::size_t>(mine.begin() + first, mine.begin() + first + batch);
}

template <typename T>
Tensor<T> loss_of(const tapegrad::models::TransformerClassifier<T>& model, const Data::Batch& b) {
  return tapegrad::cross_entropy(model.forward(b.ids, b.padding), b.labels);
}

template <typename T>
std::vector<xt::xarray<T>> values_of(const tapegrad::nn::Module<T>& model) {
  std::vector<xt::xarray<T>> out;
  for (const auto& p : model.parameters()) out.push_back(p.data());
  return out;
}

template <typename T>
double max_difference(const std::vector<xt::xarray<T>>& a, const std::vector<xt::xarray<T>>& b) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t k = 0; k < a[i].size(); ++k)
      worst = std::max(worst, std::abs(double(a[i].data()[k]) - double(b[i].data()[k])));
  return worst;
}

// Every rank's parameters must be bit-identical: compared by checksum after every step.
template <typename T>
void check_ranks_agree(const dist::Communicator& comm, const tapegrad::nn::Module<T>& model, int step) {
  const auto sums = comm.all_gather(dist::parameter_checksum(model));
  for (std::size_t r = 1; r < sums.size(); ++r) {
    if (sums[r] != sums[0]) {
      throw std::runtime_error(
          fmt::format("after step {} rank {}'s parameters differ from rank 0's (checksum {:016x} vs {:016x})", step, r,
                      sums[r], sums[0]));
    }
  }
}

// One process, batch N*B, no MPI: the run data-parallel training must reproduce.
template <typename T>
std::vector<xt::xarray<T>> reference_run(const Data& data, int ranks) {
  auto model = make_model<T>(0.0);
  auto optimizer = make_optimizer<T>(*model);
  for (int step = 0; step < kSteps; ++step) {
    optimizer->zero_grad();
    loss_of(*model, data.rows(step_rows(1, 0, kBatch * ranks, step))).backward();
    optimizer->step();
  }
  return values_of(*model);
}

template <typename T>
std::vector<xt::xarray<T>> data_parallel_run(const Data& data, const dist::Communicator& comm,
                                             dist::DataParallelOptions buckets, int micro_batches,
                                             std::size_t* bucket_count) {
  auto model = make_model<T>(0.0);
  auto optimizer = make_optimizer<T>(*model);
  dist::DistributedDataParallel<T> ddp(*model, comm, buckets);
  *bucket_count = ddp.bucket_names().size();
  const std::size_t micro = kBatch / static_cast<std::size_t>(micro_batches);
  for (int step = 0; step < kSteps; ++step) {
    optimizer->zero_grad();
    const auto rows = step_rows(comm.size(), comm.rank(), kBatch, step);
    for (int m = 0; m < micro_batches; ++m) {
      const std::vector<std::size_t> part(rows.begin() + m * micro, rows.begin() + (m + 1) * micro);
      const auto loss = loss_of(*model, data.rows(part)) * (T(1) / T(micro_batches));
      if (m + 1 < micro_batches) {
        auto guard = ddp.no_sync();
        loss.backward();
      } else {
        loss.backward();
      }
    }
    ddp.synchronize();
    optimizer->step();
    check_ranks_agree(comm, *model, step + 1);
  }
  return values_of(*model);
}

template <typename T>
int equivalence(const dist::Communicator& comm) {
  const Data data;
  const double tolerance = std::is_same_v<T, float> ? 1e-6 : 1e-9;
  struct Case {
    const char* name;
    dist::DataParallelOptions buckets;
    int micro_batches;
  };
  const std::vector<Case> cases = {
      {"default buckets (1 MiB, 25 MiB)", {}, 1},
      {"tiny buckets (64 B, 256 B)", {64, 256}, 1},
      {"one tensor per bucket (1 B)", {1, 1}, 1},
      {"2 micro-batches, no_sync on the first", {}, 2},
  };
  const auto reference = comm.rank() == 0 ? reference_run<T>(data, comm.size()) : std::vector<xt::xarray<T>>{};
  std::vector<xt::xarray<T>> first;
  std::string report;
  bool ok = true;
  for (const auto& c : cases) {
    std::size_t buckets = 0;
    const auto result = data_parallel_run<T>(data, comm, c.buckets, c.micro_batches, &buckets);
    if (comm.rank() != 0) continue;
    const double diff = max_difference(result, reference);
    const double between = first.empty() ? 0.0 : max_difference(result, first);
    if (first.empty()) first = result;
    ok = ok && diff <= tolerance;
    report += fmt::format("\n  {} ({} buckets): max |param - reference| {:.3g}, vs the first case {:.3g}{}", c.name,
                          buckets, diff, between, diff <= tolerance ? "" : "  <-- FAILED");
  }
  if (comm.rank() == 0) {
    fmt::print("equivalence {} on {} ranks x batch {} vs 1 process x batch {}, {} steps, tolerance {:g}:{}\n",
               std::is_same_v<T, float> ? "float" : "double", comm.size(), kBatch, kBatch * comm.size(), kSteps,
               tolerance, report);
  }
  // Every rank exits with rank 0's verdict.
  return comm.all_reduce_sum(ok ? 0.0 : 1.0) == 0.0 ? 0 : 1;
}

// A temporary folder named by rank 0, the same path on every rank; removed by rank 0.
struct SharedTempDir {
  const dist::Communicator& comm;
  std::string path;
  explicit SharedTempDir(const dist::Communicator& c) : comm(c) {
    if (comm.rank() == 0) {
      std::string pattern = (std::filesystem::temp_directory_path() / "tapegrad-ddp-XXXXXX").string();
      if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
      path = pattern;
    }
    comm.broadcast(path);
  }
  ~SharedTempDir() {
    if (comm.rank() == 0) std::filesystem::remove_all(path);
  }
};

// kSteps steps of train::Trainer on this rank's rows, each step cut into `micro_batches` micro-batches,
// with DataParallelTraining's replicas; how many gradient reductions DDP made goes to *synchronizations.
template <typename T>
std::vector<xt::xarray<T>> trainer_run(const Data& data, const dist::Communicator& comm, int micro_batches,
                                       std::int64_t* synchronizations) {
  auto model = make_model<T>(0.0);
  auto optimizer = make_optimizer<T>(*model);
  dist::DataParallelTraining<T> parallel(*model, comm);
  const SharedTempDir dir(comm);
  const tapegrad::train::RunDirectory run(dir.path);
  std::ostringstream log;
  tapegrad::train::Progress progress(log, false, 1);
  tapegrad::train::TrainerOptions options;
  options.steps_per_epoch = kSteps;
  options.log_every = kSteps;
  options.schedule = [&](std::int64_t) { return optimizer->lr(); };
  options.accumulate = micro_batches;
  tapegrad::train::TrainerHooks<T> hooks;
  hooks.forward = [&](std::int64_t step, std::int64_t, const tapegrad::train::MicroBatch& micro) {
    const auto rows =
        tapegrad::train::micro_batch_rows(step_rows(comm.size(), comm.rank(), kBatch, static_cast<int>(step)), micro);
    tapegrad::train::StepOutput<T> out;
    out.loss = loss_of(*model, data.rows(rows));
    out.count = static_cast<double>(rows.size());
    return out;
  };
  hooks.replicas = parallel.replicas();
  tapegrad::train::Trainer<T> trainer(run, *model, *optimizer, options, hooks, progress);
  trainer.run();
  check_ranks_agree(comm, *model, kSteps);
  *synchronizations = parallel.ddp()->stats().synchronizations;
  return values_of(*model);
}

template <typename T>
int accumulate(const dist::Communicator& comm) {
  const Data data;
  const double tolerance = std::is_same_v<T, float> ? 1e-6 : 1e-9;
  const auto reference = comm.rank() == 0 ? reference_run<T>(data, comm.size()) : std::vector<xt::xarray<T>>{};
  std::string report;
  bool ok = true;
  for (const int micro_batches : {1, 3}) {
    std::int64_t synchronizations = 0;
    const auto result = trainer_run<T>(data, comm, micro_batches, &synchronizations);
    if (comm.rank() != 0) continue;
    const double diff = max_difference(result, reference);
    const bool passed = diff <= tolerance && synchronizations == kSteps;
    ok = ok && passed;
    report += fmt::format("\n  --accumulate {}: max |param - reference| {:.3g}, {} gradient reductions{}",
                          micro_batches, diff, synchronizations, passed ? "" : "  <-- FAILED");
  }
  if (comm.rank() == 0) {
    fmt::print(
        "accumulate {}: the Trainer on {} ranks x batch {} vs 1 process x batch {}, {} steps, tolerance {:g}:{}\n",
        std::is_same_v<T, float> ? "float" : "double", comm.size(), kBatch, kBatch * comm.size(), kSteps, tolerance,
        report);
  }
  return comm.all_reduce_sum(ok ? 0.0 : 1.0) == 0.0 ? 0 : 1;
}

int dropout(const dist::Communicator& comm) {
  const Data data;
  auto model = make_model<float>(0.1);
  dist::split_generators(*model, comm);
  auto optimizer = make_optimizer<float>(*model);
  dist::DistributedDataParallel<float> ddp(*model, comm);
  std::vector<double> losses;
  const int steps = 60;
  for (int step = 0; step < steps; ++step) {
    optimizer->zero_grad();
    const auto loss = loss_of(*model, data.rows(step_rows(comm.size(), comm.rank(), kBatch, step)));
    loss.backward();
    ddp.synchronize();
    optimizer->step();
    check_ranks_agree(comm, *model, step + 1);
    losses.push_back(dist::global_mean(comm, loss.item(), 1.0));
  }
  double early = 0, late = 0;
  for (int i = 0; i < 10; ++i) {
    early += losses[static_cast<std::size_t>(i)] / 10;
    late += losses[losses.size() - 1 - static_cast<std::size_t>(i)] / 10;
  }
  // The dropout masks must differ between ranks, or split_generators did nothing.
  const auto states = comm.all_gather(model->named_generators().at(0).second->next_u64());
  const bool distinct = comm.size() == 1 || states[0] != states[1];
  const bool ok = late < 0.8 * early && distinct;
  if (comm.rank() == 0) {
    fmt::print(
        "dropout 0.1 on {} ranks: mean loss of steps 1-10 {:.4f}, of steps {}-{} {:.4f}; parameters identical "
        "on every rank after each of {} steps; dropout streams differ between ranks: {}{}\n",
        comm.size(), early, steps - 9, steps, late, steps, distinct ? "yes" : "no", ok ? "" : "  <-- FAILED");
  }
  return ok ? 0 : 1;
}

// Runs steps [from, to) of a dropout run on `model`.
void train_steps(const Data& data, const dist::Communicator& comm,
                 tapegrad::models::TransformerClassifier<float>& model, tapegrad::optim::Optimizer<float>& optimizer,
                 dist::DistributedDataParallel<float>& ddp, int from, int to) {
  for (int step = from; step < to; ++step) {
    optimizer.zero_grad();
    loss_of(model, data.rows(step_rows(comm.size(), comm.rank(), kBatch, step))).backward();
    ddp.synchronize();
    optimizer.step();
  }
}

int resume(const dist::Communicator& comm) {
  const Data data;
  std::uint64_t uninterrupted = 0;
  {
    auto model = make_model<float>(0.1);
    dist::split_generators(*model, comm);
    auto optimizer = make_optimizer<float>(*model);
    dist::DistributedDataParallel<float> ddp(*model, comm);
    train_steps(data, comm, *model, *optimizer, ddp, 0, kSteps);
    uninterrupted = dist::parameter_checksum(*model);
  }
  std::string dir;
  if (comm.rank() == 0) {
    std::string pattern = (std::filesystem::temp_directory_path() / "tapegrad-ddp-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    dir = pattern;
  }
  comm.broadcast(dir);
  const std::string path = dir + "/checkpoint.safetensors";
  {
    auto model = make_model<float>(0.1);
    dist::split_generators(*model, comm);
    auto optimizer = make_optimizer<float>(*model);
    dist::DistributedDataParallel<float> ddp(*model, comm);
    train_steps(data, comm, *model, *optimizer, ddp, 0, kSteps / 2);
    const auto generators = dist::gather_generator_states(*model, comm);
    if (comm.rank() == 0) tapegrad::train::save_checkpoint(path, *model, *optimizer, kSteps / 2, generators);
  }
  // A fresh process would start here: a different initialization, then the checkpoint.
  auto model = make_model<float>(0.1, 16);
  for (auto& p : model->parameters()) p.mutable_data().fill(0.5f);
  auto optimizer = make_optimizer<float>(*model);
  std::int64_t step = 0;
  {
    const dist::BroadcastFile file(comm, path);
    step = tapegrad::train::load_checkpoint(file.path(), *model, *optimizer);
    dist::restore_generator_states(*model, tapegrad::io::safetensors::File(file.path()).metadata(), comm);
  }
  dist::DistributedDataParallel<float> ddp(*model, comm);
  train_steps(data, comm, *model, *optimizer, ddp, static_cast<int>(step), kSteps);
  const bool same = dist::parameter_checksum(*model) == uninterrupted;
  const bool all_same = comm.all_reduce_sum(same ? 0.0 : 1.0) == 0.0;
  if (comm.rank() == 0) {
    std::filesystem::remove_all(dir);
    fmt::print(
        "resume on {} ranks: {} steps, checkpoint at step {}, resumed for {} more: parameters {} the "
        "uninterrupted run's on every rank{}\n",
        comm.size(), kSteps, step, kSteps - step, all_same ? "bit-identical to" : "DIFFERENT from",
        all_same ? "" : "  <-- FAILED");
  }
  return all_same ? 0 : 1;
}

int fault(const dist::Communicator& comm, int fail_rank, bool die) {
  const Data data;
  auto model = make_model<float>(0.0);
  auto optimizer = make_optimizer<float>(*model);
  dist::DistributedDataParallel<float> ddp(*model, comm);
  for (int step = 0; step < kSteps; ++step) {
    if (step == 3 && comm.rank() == fail_rank && die) std::raise(SIGKILL);
    if (step == 3 && comm.rank() == fail_rank) {
      throw std::runtime_error(
          fmt::format("cannot read shard {} of the training data (simulated at step 3)", fail_rank));
    }
    optimizer->zero_grad();
    loss_of(*model, data.rows(step_rows(comm.size(), comm.rank(), kBatch, step))).backward();
    ddp.synchronize();
    optimizer->step();
  }
  fmt::print(stderr, "rank {}: fault mode finished all steps, but rank {} should have failed\n", comm.rank(),
             fail_rank);
  return 3;
}

int mismatch(const dist::Communicator& comm) {
  auto model = make_model<float>(0.0, comm.rank() == comm.size() - 1 ? 24 : 16);
  dist::DistributedDataParallel<float> ddp(*model, comm);
  fmt::print(stderr, "rank {}: models of different widths were not detected\n", comm.rank());
  return 3;
}

// ZeroRedundancyOptimizer against DDP + the plain optimizer: the same global batch of kGlobalBatch rows
// every step on 1, 2 or 3 ranks, cut into two micro-batches, and the gradients clipped.
constexpr std::size_t kGlobalBatch = 6;
constexpr int kZeroSteps = 12;
constexpr double kZeroClip = 0.5;

std::vector<std::size_t> my_rows(const dist::Communicator& comm, int step) {
  return tapegrad::train::shard(step_rows(1, 0, kGlobalBatch, step), comm.size(), comm.rank());
}

template <typename T>
std::unique_ptr<tapegrad::optim::Optimizer<T>> make_adamw(std::vector<Tensor<T>> params) {
  tapegrad::optim::AdamWOptions o;
  o.lr = 1e-2;
  return std::make_unique<tapegrad::optim::AdamW<T>>(std::move(params), o);
}

// Training with ZeRO at `stage` (0: DDP + plain AdamW) on one rank count.
template <typename T>
struct ShardedTraining {
  std::shared_ptr<tapegrad::models::TransformerClassifier<T>> model = make_model<T>(0.0);
  std::unique_ptr<dist::DistributedDataParallel<T>> ddp;
  std::unique_ptr<tapegrad::optim::Optimizer<T>> optimizer;
  dist::ZeroRedundancyOptimizer<T>* zero = nullptr;
  int stage;
  const dist::Communicator& comm;

  ShardedTraining(const dist::Communicator& c, int s) : stage(s), comm(c) {
    if (stage < 2) ddp = std::make_unique<dist::DistributedDataParallel<T>>(*model, comm);
    if (stage == 0) {
      optimizer = make_adamw<T>(model->parameters());
    } else {
      dist::ZeroOptions options;
      options.stage = stage;
      options.gradients.first_bucket_bytes = 256;  // several buckets even for this small model
      options.gradients.bucket_bytes = 2048;
      auto z = std::make_unique<dist::ZeroRedundancyOptimizer<T>>(model->parameters(), make_adamw<T>, comm, options);
      zero = z.get();
      optimizer = std::move(z);
    }
  }

  void steps(const Data& data, int from, int to) {
    for (int step = from; step < to; ++step) {
      optimizer->zero_grad();
      const auto rows = my_rows(comm, step);
      const std::size_t half = rows.size() / 2;
      const std::vector<std::vector<std::size_t>> micro = {{rows.begin(), rows.begin() + half},
                                                           {rows.begin() + half, rows.end()}};
      for (std::size_t m = 0; m < micro.size(); ++m) {
        if (micro[m].empty()) continue;
        const T weight = T(micro[m].size()) / T(rows.size());
        const auto loss = loss_of(*model, data.rows(micro[m])) * weight;
        if (m + 1 < micro.size()) {
          if (stage == 2) {
            auto guard = zero->no_sync();
            loss.backward();
          } else {
            auto guard = ddp->no_sync();
            loss.backward();
          }
        } else {
          loss.backward();
        }
      }
      if (stage == 2) {
        zero->synchronize();
        check_own_gradients_only(step + 1);
        zero->clip_grad_norm_(kZeroClip);
      } else {
        ddp->synchronize();
        tapegrad::optim::clip_grad_norm_(optimizer->params(), kZeroClip);
      }
      optimizer->step();
      check_ranks_agree(comm, *model, step + 1);
    }
  }

  // Stage 2 keeps only this rank's shard of the averaged gradients.
  void check_own_gradients_only(int step) const {
    const auto& params = optimizer->params();
    for (std::size_t i = 0; i < params.size(); ++i) {
      const bool own = zero->owners()[i] == comm.rank();
      if (params[i].has_grad() != own) {
        throw std::runtime_error(fmt::format("ZeRO-2 after step {}: rank {} {} a gradient for parameter {} (owner {})",
                                             step, comm.rank(), own ? "lacks" : "holds", i, zero->owners()[i]));
      }
    }
  }

  // Elements of optimizer state this rank holds.
  std::size_t state_elements() const {
    const tapegrad::optim::Optimizer<T>* local = zero ? zero->local_optimizer() : optimizer.get();
    std::size_t n = 0;
    if (local)
      for (const auto& [key, value] : local->state_dict())
        if (key != "param_groups.0.lr") n += value.numel();
    return n;
  }

  void save(const std::string& path, int step) {
    if (zero) zero->consolidate_state_dict(0);
    if (comm.rank() == 0) tapegrad::train::save_checkpoint(path, *model, *optimizer, step);
  }
  int load(const std::string& path) {
    const dist::BroadcastFile file(comm, path);
    return static_cast<int>(tapegrad::train::load_checkpoint(file.path(), *model, *optimizer));
  }
};

template <typename T>
int zero(const dist::Communicator& comm) {
  const Data data;
  const double tolerance = std::is_same_v<T, float> ? 1e-5 : 1e-9;
  ShardedTraining<T> reference(comm, 0);
  reference.steps(data, 0, kZeroSteps);
  const auto expected = values_of(*reference.model);
  const double whole_state = comm.all_reduce_sum(double(reference.state_elements())) / comm.size();
  std::string report;
  bool ok = true;
  for (const int stage : {1, 2}) {
    ShardedTraining<T> sharded(comm, stage);
    sharded.steps(data, 0, kZeroSteps);
    const double diff = max_difference(values_of(*sharded.model), expected);
    const double mine = double(sharded.state_elements());
    const double summed = comm.all_reduce_sum(mine);
    // The ranks' parameters are bit-identical (checked every step), so is their difference.
    const bool passed = diff <= tolerance && summed == whole_state;
    ok = ok && passed;
    report += fmt::format(
        "\n  stage {}: max |param - DDP's| {:.3g}{}; rank 0 keeps {:.0f} of {:.0f} state elements ({:.0f}%), all "
        "ranks {:.0f}{}",
        stage, diff, diff == 0.0 ? " (bit-identical)" : "", mine, whole_state, 100.0 * mine / whole_state, summed,
        passed ? "" : "  <-- FAILED");
    if (stage == 2 && comm.rank() == 0) {
      report += fmt::format(" ({} buckets, peak bucket buffers {} B)", sharded.zero->gradients()->num_buckets(),
                            sharded.zero->gradients()->stats().peak_buffer_bytes);
    }
  }
  if (comm.rank() == 0) {
    fmt::print("zero {} on {} ranks: AdamW, {} steps of {} rows in 2 micro-batches, clip {}, tolerance {:g}:{}\n",
               std::is_same_v<T, float> ? "float" : "double", comm.size(), kZeroSteps, kGlobalBatch, kZeroClip,
               tolerance, report);
  }
  return comm.all_reduce_sum(ok ? 0.0 : 1.0) == 0.0 ? 0 : 1;
}

std::string zero_checkpoint(const std::string& dir, const char* which) { return dir + "/" + which + ".safetensors"; }

int zero_save(const dist::Communicator& comm, const std::string& dir) {
  if (dir.empty()) throw std::invalid_argument("ddp_check zero_save: --dir is required");
  if (comm.rank() == 0) std::filesystem::create_directories(dir);
  const Data data;
  for (const int stage : {2, 0}) {
    ShardedTraining<double> run(comm, stage);
    run.steps(data, 0, kZeroSteps / 2);
    run.save(zero_checkpoint(dir, stage == 2 ? "zero2" : "plain"), kZeroSteps / 2);
  }
  if (comm.rank() == 0)
    fmt::print("zero_save on {} ranks: ZeRO-2 and DDP + AdamW checkpoints after {} steps in {}\n", comm.size(),
               kZeroSteps / 2, dir);
  return 0;
}

int zero_resume(const dist::Communicator& comm, const std::string& dir) {
  if (dir.empty()) throw std::invalid_argument("ddp_check zero_resume: --dir is required");
  const Data data;
  const double tolerance = 1e-9;
  // The uninterrupted run: one process (this rank alone) with the plain optimizer.
  const dist::Communicator self(MPI_COMM_SELF);
  ShardedTraining<double> uninterrupted(self, 0);
  uninterrupted.steps(data, 0, kZeroSteps);
  const auto expected = values_of(*uninterrupted.model);
  struct Case {
    const char* saved;
    int stage;
  };
  std::string report;
  bool ok = true;
  for (const Case c : {Case{"zero2", 2}, Case{"zero2", 1}, Case{"zero2", 0}, Case{"plain", 2}}) {
    ShardedTraining<double> run(comm, c.stage);
    const int step = run.load(zero_checkpoint(dir, c.saved));
    run.steps(data, step, kZeroSteps);
    const double diff = max_difference(values_of(*run.model), expected);
    const bool passed = step == kZeroSteps / 2 && diff <= tolerance;
    ok = ok && passed;
    report += fmt::format("\n  {} checkpoint (2 ranks, step {}) resumed {}: max |param - uninterrupted| {:.3g}{}",
                          c.saved, step, c.stage == 0 ? "with plain AdamW" : fmt::format("with ZeRO-{}", c.stage), diff,
                          passed ? "" : "  <-- FAILED");
  }
  if (comm.rank() == 0) {
    fmt::print("zero_resume on {} ranks, double, tolerance {:g}, against {} uninterrupted steps of one process:{}\n",
               comm.size(), tolerance, kZeroSteps, report);
  }
  return comm.all_reduce_sum(ok ? 0.0 : 1.0) == 0.0 ? 0 : 1;
}

Settings parse(int argc, char** argv) {
  Settings s;
  if (argc < 2)
    throw std::invalid_argument(
        "usage: ddp_check equivalence|accumulate|dropout|resume|fault|die|mismatch|zero|zero_save|zero_resume "
        "[options]");
  s.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(fmt::format("ddp_check: {} needs a value", flag));
    const std::string value = argv[++i];
    if (flag == "--dtype" && (value == "float" || value == "double")) {
      s.dtype = value;
    } else if (flag == "--dir") {
      s.dir = value;
    } else if (flag == "--fail-rank") {
      s.fail_rank = std::stoi(value);
    } else {
      throw std::invalid_argument(fmt::format("ddp_check: unknown option {} {}", flag, value));
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  return dist::run(argc, argv, [&](const dist::Communicator& comm) {
    tapegrad::set_num_threads(1);
    const Settings s = parse(argc, argv);
    if (s.mode == "equivalence") return s.dtype == "float" ? equivalence<float>(comm) : equivalence<double>(comm);
    if (s.mode == "accumulate") return s.dtype == "float" ? accumulate<float>(comm) : accumulate<double>(comm);
    if (s.mode == "dropout") return dropout(comm);
    if (s.mode == "resume") return resume(comm);
    if (s.mode == "fault" || s.mode == "die") return fault(comm, s.fail_rank, s.mode == "die");
    if (s.mode == "mismatch") return mismatch(comm);
    if (s.mode == "zero") return s.dtype == "float" ? zero<float>(comm) : zero<double>(comm);
    if (s.mode == "zero_save") return zero_save(comm, s.dir);
    if (s.mode == "zero_resume") return zero_resume(comm, s.dir);
    throw std::invalid_argument("ddp_check: unknown mode " + s.mode);
  });
}
