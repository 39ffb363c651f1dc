// Memory per rank of data-parallel training with ZeRO (docs/distributed.md): the large benchmark model
// (4 layers, d_model 256, ff 1024, vocabulary 20000) with AdamW under mpirun, DDP (--zero 0) against
// ZeroRedundancyOptimizer at stage 1 or 2.
//
//   CXX=clang++ cmake -S . -B build -DTAPEGRAD_BUILD_BENCHMARKS=ON && cmake --build build -j2 --target bench_zero
//   mpirun --bind-to none -np 2 build/benchmarks/bench_zero --zero 0     (then --zero 1, --zero 2)
//
// Every rank counts the bytes it holds after the last step (before the next zero_grad, when gradients
// and optimizer state are both alive): the weights, the gradients (the parameters' own, DDP's bucket
// buffers, which keep another copy of every gradient, and at stage 2 the largest total of bucket
// buffers held at once during backward) and the optimizer state; and its peak resident set
// (getrusage). A small batch (--batch 2 rows of --len 128 per rank) keeps the activations small
// beside them. Rank 0 prints one JSON line per rank.
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <string>
#include <vector>

#include "bench_models.hpp"
#include "mpi_bench.hpp"
#include "tapegrad/autograd/loss.hpp"
#include "tapegrad/distributed/distributed.hpp"
#include "tapegrad/models/classifier.hpp"
#include "tapegrad/optim/adamw.hpp"
#include "tapegrad/optim/clip_grad.hpp"

namespace dist = tapegrad::distributed;
using Clock = std::chrono::steady_clock;

namespace {

double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

}  // namespace

int main(int argc, char** argv) {
  return dist::run(argc, argv, [&](const dist::Communicator& comm) {
    std::size_t zero = 0;
    const bench::RunOptions o = bench::parse_flags("bench_zero", argc, argv, {1, 2, 128, 3}, {{"--zero", &zero, 0, 2}});
    tapegrad::set_num_threads(static_cast<int>(o.threads));
    const auto mo = bench::classifier_options(bench::kLarge);  // bench_tapegrad's large model
    tapegrad::Generator init(0);
    tapegrad::models::TransformerClassifier<float> model(mo, init);
    dist::DataParallelTraining<float> training(model, comm, {}, static_cast<int>(zero));
    const dist::OptimizerFactory<float> adamw = [](std::vector<tapegrad::Tensor<float>> params) {
      tapegrad::optim::AdamWOptions ao;
      ao.weight_decay = 0.1;
      return std::unique_ptr<tapegrad::optim::Optimizer<float>>(
          std::make_unique<tapegrad::optim::AdamW<float>>(std::move(params), ao));
    };
    const auto optimizer = training.optimizer(model.parameters(), adamw);
    const tapegrad::train::Replicas replicas = training.replicas();

    bench::SyntheticBatches batch(o.batch, o.len, 100 + static_cast<std::uint64_t>(comm.rank()));
    double seconds = 0, backward_seconds = 0, update_seconds = 0;
    for (std::size_t step = 0; step < o.steps; ++step) {
      batch.redraw(mo.vocab_size);
      const auto start = Clock::now();
      optimizer->zero_grad();
      tapegrad::cross_entropy(model.forward(batch.ids, batch.padding), batch.labels).backward();
      backward_seconds += std::chrono::duration<double>(Clock::now() - start).count();
      replicas.synchronize_gradients();
      if (replicas.clip_grad_norm) {
        replicas.clip_grad_norm(1.0);
      } else {
        tapegrad::optim::clip_grad_norm_(optimizer->params(), 1.0);
      }
      const auto update = Clock::now();
      optimizer->step();
      update_seconds += std::chrono::duration<double>(Clock::now() - update).count();
      seconds += std::chrono::duration<double>(Clock::now() - start).count();
    }

    double weights = 0, grads = 0, buckets = 0, state = 0, peak_buffers = 0;
    std::size_t reductions = training.ddp() ? training.ddp()->bucket_names().size() : 0;
    for (const auto& p : model.parameters()) {
      weights += double(p.numel() * sizeof(float));
      if (p.has_grad()) grads += double(p.numel() * sizeof(float));
      if (training.ddp() && p.requires_grad()) buckets += double(p.numel() * sizeof(float));
    }
    const tapegrad::optim::Optimizer<float>* local =
        training.zero() ? training.zero()->local_optimizer() : optimizer.get();
    if (local)
      for (const auto& [key, value] : local->state_dict())
        if (key != "param_groups.0.lr") state += double(value.numel() * sizeof(float));
    if (training.zero() && training.zero()->gradients()) {
      peak_buffers = double(training.zero()->gradients()->stats().peak_buffer_bytes);
      reductions = training.zero()->gradients()->num_buckets();
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const double peak_rss = double(usage.ru_maxrss) * 1024.0;
    const std::string line = fmt::format(
        "{{\"zero\": {}, \"ranks\": {}, \"rank\": {}, \"parameters\": {}, \"reductions_per_step\": {}, "
        "\"weights_mib\": {:.2f}, "
        "\"gradients_mib\": {:.2f}, \"ddp_bucket_buffers_mib\": {:.2f}, \"zero2_peak_bucket_buffers_mib\": {:.2f}, "
        "\"optimizer_state_mib\": {:.2f}, \"held_mib\": {:.2f}, \"peak_rss_mib\": {:.1f}, \"step_s\": {:.3f}, "
        "\"forward_backward_s\": {:.3f}, "
        "\"optimizer_step_s\": {:.3f}}}",
        zero, comm.size(), comm.rank(), model.num_parameters(), reductions, mib(weights), mib(grads), mib(buckets),
        mib(peak_buffers), mib(state), mib(weights + grads + buckets + state), mib(peak_rss), seconds / double(o.steps),
        backward_seconds / double(o.steps), update_seconds / double(o.steps));
    const auto lines = comm.all_gather(line);
    if (comm.rank() == 0)
      for (const auto& l : lines) fmt::print("{}\n", l);
    return 0;
  });
}
