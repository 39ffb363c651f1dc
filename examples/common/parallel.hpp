// Data-parallel training of an example program under mpirun: what its training code is handed. The
// main() that hands it is examples/common/parallel_main.hpp; nothing here needs MPI, so the programs'
// libraries and tests build and run the same with or without it.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tapegrad/nn/module.hpp"
#include "tapegrad/optim/optimizer.hpp"
#include "tapegrad/train/replicas.hpp"

namespace examples {

/// Builds a program's optimizer on a list of parameters.
using OptimizerFactory =
    std::function<std::unique_ptr<tapegrad::optim::Optimizer<float>>(std::vector<tapegrad::Tensor<float>> params)>;

/// This process's rank and the number of ranks, and `attach`, called on every rank once the model
/// exists, which wraps it for data-parallel training at a ZeRO stage (--zero) and returns the trainer's
/// Replicas. The default is one process. The programs keep --batch-size the global batch, cut into one
/// part per rank, so that a run's result does not depend on the number of ranks and --resume may use
/// any number.
struct Parallel {
  int rank = 0, size = 1;
  std::function<tapegrad::train::Replicas(tapegrad::nn::Module<float>& model, int zero_stage)> attach;
  /// After attach, on every rank: the optimizer for the attached model's parameters (at ZeRO stages 1
  /// and 2, make's optimizer sharded over the ranks).
  std::function<std::unique_ptr<tapegrad::optim::Optimizer<float>>(std::vector<tapegrad::Tensor<float>> params,
                                                                   const OptimizerFactory& make)>
      shard_optimizer;
  /// Collective: throws on every rank, naming the ranks that differ, unless `text` is the same on all.
  std::function<void(const std::string& what, const std::string& text)> verify_same;
  /// Collective: returns on every rank once all ranks have called it (nothing to wait for in one process).
  std::function<void()> barrier;
  bool writes_files() const { return rank == 0; }
  /// attach(model, zero_stage) under mpirun; no replicas in one process.
  tapegrad::train::Replicas replicas(tapegrad::nn::Module<float>& model, std::int64_t zero_stage) const {
    return attach ? attach(model, static_cast<int>(zero_stage)) : tapegrad::train::Replicas{};
  }
  /// make(params) in one process; the attached training's optimizer under mpirun.
  std::unique_ptr<tapegrad::optim::Optimizer<float>> optimizer(std::vector<tapegrad::Tensor<float>> params,
                                                               const OptimizerFactory& make) const {
    return shard_optimizer ? shard_optimizer(std::move(params), make) : make(std::move(params));
  }

  /// The log's line on how a run is split: "data-parallel: 3 ranks x 1 thread(s); global batch 4 = 1 or 2
  /// per rank" (every row on one rank: train::rank_rows).
  std::string split_line(std::int64_t threads, std::int64_t global_batch) const {
    const std::int64_t fewer = global_batch / size, more = fewer + (global_batch % size != 0 ? 1 : 0);
    return "data-parallel: " + std::to_string(size) + " ranks x " + std::to_string(threads) +
           " thread(s); global batch " + std::to_string(global_batch) + " = " +
           (fewer == more ? std::to_string(fewer) : std::to_string(fewer) + " or " + std::to_string(more)) +
           " per rank";
  }

  /// With several ranks (collective): throws unless all ranks were started with the same settings, a
  /// program's config.json without the keys that may differ between ranks (a data path on another
  /// machine, say): a rank started with other flags would otherwise train another model in lockstep.
  void verify_same_settings(nlohmann::json settings, std::initializer_list<const char*> may_differ) const {
    if (!verify_same) return;
    for (const char* key : may_differ) settings.erase(key);
    verify_same("configuration", settings.dump(1));
  }
  /// The same for a vocabulary (anything with size() and token(id)), one token per line: compared by
  /// checksum, gathered only if they differ.
  template <typename Vocabulary>
  void verify_same_vocabulary(const Vocabulary& vocab) const {
    if (!verify_same) return;
    std::string tokens;
    for (std::size_t i = 0; i < vocab.size(); ++i) tokens += vocab.token(static_cast<std::int64_t>(i)) + "\n";
    verify_same("vocabulary", tokens);
  }
};

}  // namespace examples
