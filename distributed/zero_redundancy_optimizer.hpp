/// @file
/// ZeroRedundancyOptimizer (torch.distributed.optim.ZeroRedundancyOptimizer; DeepSpeed's ZeRO stages 1
/// and 2): any optimizer of optim/, with its state sharded over the ranks so that each keeps the moments
/// of its own part of the parameters only, and at stage 2 only that part's averaged gradients too.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "tapegrad/distributed/communicator.hpp"
#include "tapegrad/distributed/sharded_gradients.hpp"
#include "tapegrad/optim/optimizer.hpp"

namespace tapegrad::distributed {

/// Builds the wrapped optimizer on a list of parameters (torch's optimizer_class with its defaults).
template <typename T>
using OptimizerFactory = std::function<std::unique_ptr<optim::Optimizer<T>>(std::vector<Tensor<T>> params)>;

/// Which ZeRO stage and, at stage 2, how the gradients are bucketed.
struct ZeroOptions {
  /// 1: optimizer state sharded, gradients averaged on every rank by DistributedDataParallel.
  /// 2: gradients sharded too: this optimizer reduces them onto their owners (ShardedGradients).
  int stage = 1;
  ShardedGradientOptions gradients;
};

/// The parameters are partitioned with partition_parameters (contiguous runs of the list, balanced by
/// the element count of those that require grad; the same on every rank) and each rank builds the
/// wrapped optimizer on its own run only, so it keeps only that run's state. step() steps the own run
/// and then every owner broadcasts its updated parameters (MPI_Bcast), so that all ranks hold the whole model
/// again. The update of each parameter is the wrapped optimizer's, elementwise on the same values: with
/// the same averaged gradients (stage 1 behind DistributedDataParallel) the parameters equal those of
/// DDP with the plain optimizer bit for bit; at stage 2 the sum of the gradients may be taken in
/// another order by MPI (float rounding; equal on two ranks).
///
/// A step at stage 2:  loss.backward(); zero.synchronize(); zero.clip_grad_norm_(c); zero.step();
/// with accumulation, the backwards before the last inside zero.no_sync().
///
/// state_dict() has the wrapped optimizer's layout over the whole parameter list ("state.<i>.<buffer>",
/// "state.<i>.step", "param_groups.0.lr"), so a checkpoint of a ZeRO run loads into the plain optimizer,
/// on any number of ranks, and the reverse: on several ranks call consolidate_state_dict() on every rank
/// first (as torch's), which gathers the state on one rank. load_state_dict() takes a whole state on
/// every rank and keeps this rank's part.
///
/// The parameters must hold the same values on every rank when training starts (DistributedDataParallel
/// or broadcast_parameters makes them so).
template <typename T>
class ZeroRedundancyOptimizer : public optim::Optimizer<T> {
 public:
  /// Collective: checks that every rank passed the same number and shapes of parameters (naming the
  /// first difference otherwise). Throws std::invalid_argument for a stage other than 1 or 2, an empty
  /// factory, or what the base Optimizer refuses. A rank that owns no parameter builds no optimizer.
  ZeroRedundancyOptimizer(std::vector<Tensor<T>> params, OptimizerFactory<T> make, const Communicator& comm,
                          ZeroOptions options = {});

  /// Steps this rank's parameters with the wrapped optimizer at this optimizer's lr, then broadcasts
  /// every parameter from its owner. Collective. Drops a consolidated state.
  void step() override;

  /// The whole state: on one rank directly; on several, on the rank consolidate_state_dict() gathered
  /// it to since the last step (std::logic_error otherwise, as torch's).
  StateDict<T> state_dict() const override;
  /// Takes a whole state (of this optimizer or of the plain wrapped one) and keeps this rank's part.
  /// Every name, index and shape is checked first; problems are reported together in one
  /// std::invalid_argument, naming this rank, and nothing is changed.
  void load_state_dict(const StateDict<T>& state) override;
  /// Collective: gathers every rank's state on rank `to` for state_dict().
  void consolidate_state_dict(int to = 0);

  /// Stage 2, collective: after the (last) backward, leaves this rank the averaged gradients of its
  /// own parameters (and none of the others). Throws std::logic_error at stage 1.
  void synchronize();
  /// Stage 2: backward passes inside only accumulate locally. Throws std::logic_error at stage 1.
  typename ShardedGradients<T>::NoSync no_sync();
  /// Collective: optim::clip_grad_norm_ over the whole model when each rank holds the gradients of its
  /// own parameters (stage 2): the per-parameter norms are exchanged (one allreduce) and combined in
  /// parameter order as clip_grad_norm_ does, so the norm and the clipped gradients equal its values bit
  /// for bit. Returns the total norm. Throws std::invalid_argument for norm_type <= 0 or NaN max_norm.
  double clip_grad_norm_(double max_norm, double norm_type = 2.0);

  int stage() const { return options_.stage; }
  /// The owner of each parameter, in parameter order.
  const std::vector<int>& owners() const { return owners_; }
  /// This rank's parameters are params()[first_local(), first_local() + local_count()).
  std::size_t first_local() const { return first_local_; }
  std::size_t local_count() const { return local_count_; }
  /// The wrapped optimizer of this rank's parameters; null when the rank owns none.
  const optim::Optimizer<T>* local_optimizer() const { return local_.get(); }
  const optim::Optimizer<T>* wrapped() const override { return local_.get(); }
  /// Stage 2's gradient reduction; null at stage 1.
  const ShardedGradients<T>* gradients() const { return gradients_.get(); }
  ShardedGradients<T>* gradients() { return gradients_.get(); }

 protected:
  std::vector<std::string> buffer_names() const override { return {}; }
  bool counts_steps() const override { return false; }
  const char* name() const override { return "ZeroRedundancyOptimizer"; }

 private:
  /// The wrapped optimizer's state with the parameters' indices in the whole list, without the lr.
  StateDict<T> local_state() const;
  void broadcast_parameters_from_owners();

  Communicator comm_;
  ZeroOptions options_;
  std::vector<int> owners_;
  std::size_t first_local_ = 0, local_count_ = 0;
  std::unique_ptr<optim::Optimizer<T>> local_;
  std::unique_ptr<ShardedGradients<T>> gradients_;
  std::optional<StateDict<T>> consolidated_;
};

extern template class ZeroRedundancyOptimizer<float>;
extern template class ZeroRedundancyOptimizer<double>;

}  // namespace tapegrad::distributed
