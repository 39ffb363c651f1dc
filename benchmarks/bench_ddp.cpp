// Data-parallel training speed (docs/distributed.md): train_imdb's default model on synthetic batches,
// timed per step under mpirun, with the gradient reduction's cost and how much of it backward hid.
//
//   CXX=clang++ cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DTAPEGRAD_BUILD_EXAMPLES=OFF \
//     -DTAPEGRAD_BUILD_TESTS=OFF -DTAPEGRAD_BUILD_BENCHMARKS=ON     (benchmarks/run.sh's folder)
//   cmake --build build-bench -j2 --target bench_ddp
//   mpirun --bind-to none -np 1 build-bench/benchmarks/bench_ddp --threads 2     one process, two threads
//   mpirun --bind-to none -np 2 build-bench/benchmarks/bench_ddp --threads 1     two processes, one thread each
//
// The global batch (--batch, default 64 reviews of --len 256 tokens) is split over the ranks, so both
// lines do the same work per step. Rank 0 prints one JSON object: step_s is the mean over ranks of the
// whole step, forward_backward_s rank 0's forward and backward, allreduce_s a blocking MPI_Allreduce of
// the gradient's bytes alone, exposed_wait_s the time synchronize() waited (the part backward did not
// hide, including waiting for a slower rank), hidden_share 1 - exposed / allreduce (null on 1 rank).
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_models.hpp"
#include "mpi_bench.hpp"
#include "tapegrad/autograd/loss.hpp"
#include "tapegrad/autograd/matmul.hpp"
#include "tapegrad/distributed/distributed.hpp"
#include "tapegrad/models/classifier.hpp"
#include "tapegrad/optim/adamw.hpp"
#include "tapegrad/optim/clip_grad.hpp"

namespace dist = tapegrad::distributed;
using Clock = std::chrono::steady_clock;

namespace {
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Untimed steps before the timed ones.
constexpr std::size_t kWarmup = 3;
}  // namespace

int main(int argc, char** argv) {
  return dist::run(argc, argv, [&](const dist::Communicator& comm) {
    const bench::RunOptions o = bench::parse_flags("bench_ddp", argc, argv, {1, 64, 256, 20});
    if (o.batch % static_cast<std::size_t>(comm.size()) != 0) {
      throw std::invalid_argument(fmt::format("--batch {} is not divisible by {} ranks", o.batch, comm.size()));
    }
    tapegrad::set_num_threads(static_cast<int>(o.threads));
    const std::size_t per_rank = o.batch / static_cast<std::size_t>(comm.size());

    // train_imdb's default model: the benchmarks' default sizes on its vocabulary, positions and dropout.
    auto mo = bench::classifier_options(bench::kDefault);
    mo.vocab_size = 50000;
    mo.max_len = 1024;
    mo.dropout = 0.3;
    tapegrad::Generator init(0);
    tapegrad::models::TransformerClassifier<float> model(mo, init);
    dist::split_generators(model, comm);
    tapegrad::optim::AdamWOptions ao;
    ao.weight_decay = 0.1;
    tapegrad::optim::AdamW<float> optimizer(model.parameters(), ao);
    dist::DistributedDataParallel<float> ddp(model, comm);

    bench::SyntheticBatches batch(per_rank, o.len, 100 + static_cast<std::uint64_t>(comm.rank()));
    double compute = 0.0, total = 0.0;
    for (std::size_t step = 0; step < kWarmup + o.steps; ++step) {
      batch.redraw(mo.vocab_size);
      if (step == kWarmup) {
        comm.barrier();
        ddp.reset_stats();
        compute = total = 0.0;
      }
      const auto start = Clock::now();
      optimizer.zero_grad();
      tapegrad::cross_entropy(model.forward(batch.ids, batch.padding), batch.labels).backward();
      const double backward_done = seconds_since(start);
      ddp.synchronize();
      tapegrad::optim::clip_grad_norm_(optimizer.params(), 1.0);
      optimizer.step();
      compute += backward_done;
      total += seconds_since(start);
    }
    const double steps = double(o.steps);
    const auto& stats = ddp.stats();

    // The same bytes reduced with a blocking MPI_Allreduce and nothing else running: the full cost of
    // the communication, against which the wait that backward did not hide is measured.
    std::vector<float> flat(static_cast<std::size_t>(stats.bytes_reduced / steps / sizeof(float)));
    const int reps = 10;
    comm.barrier();
    const auto reduce_start = Clock::now();
    for (int r = 0; r < reps; ++r) {
      dist::check_mpi(
          MPI_Allreduce(MPI_IN_PLACE, flat.data(), static_cast<int>(flat.size()), MPI_FLOAT, MPI_SUM, comm.handle()),
          "MPI_Allreduce");
    }
    const double allreduce = seconds_since(reduce_start) / reps;
    const double wait = stats.wait_seconds / steps;
    const double step_time = comm.all_reduce_sum(total / steps) / comm.size();
    if (comm.rank() == 0) {
      fmt::print(
          "{{\"ranks\": {}, \"threads\": {}, \"global_batch\": {}, \"per_rank_batch\": {}, \"len\": {}, \"steps\": {}, "
          "\"step_s\": {:.4f}, \"tokens_per_s\": {:.0f}, \"forward_backward_s\": {:.4f}, \"gradient_mb\": {:.2f}, "
          "\"buckets\": {}, \"buckets_started_in_backward_per_step\": {:.1f}, \"allreduce_s\": {:.4f}, "
          "\"exposed_wait_s\": {:.4f}, \"hidden_share\": {}}}\n",
          comm.size(), o.threads, o.batch, per_rank, o.len, o.steps, step_time, double(o.batch * o.len) / step_time,
          compute / steps, stats.bytes_reduced / steps / 1e6, ddp.bucket_names().size(),
          double(stats.buckets_started_in_backward) / steps, allreduce, wait,
          comm.size() > 1 ? fmt::format("{:.2f}", std::max(0.0, 1.0 - wait / allreduce)) : "null");
    }
    return 0;
  });
}
