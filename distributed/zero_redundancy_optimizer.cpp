#include "tapegrad/distributed/zero_redundancy_optimizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "tapegrad/distributed/data_parallel.hpp"
#include "tapegrad/distributed/partition.hpp"
#include "tapegrad/optim/clip_grad.hpp"

namespace tapegrad::distributed {

namespace {

const char* const kLr = "param_groups.0.lr";

template <typename T>
std::string shape_signature(const std::vector<Tensor<T>>& params) {
  std::string text;
  for (std::size_t i = 0; i < params.size(); ++i)
    text += fmt::format("parameter {} {}{}\n", i, format_shape(params[i].shape()),
                        params[i].requires_grad() ? "" : " (frozen)");
  return text;
}

}  // namespace

template <typename T>
ZeroRedundancyOptimizer<T>::ZeroRedundancyOptimizer(std::vector<Tensor<T>> params, OptimizerFactory<T> make,
                                                    const Communicator& comm, ZeroOptions options)
    : optim::Optimizer<T>(std::move(params), 0.0), comm_(comm), options_(options) {
  if (options.stage != 1 && options.stage != 2) {
    throw std::invalid_argument(fmt::format("ZeroRedundancyOptimizer: stage {} is not 1 or 2", options.stage));
  }
  if (!make) throw std::invalid_argument("ZeroRedundancyOptimizer: the optimizer factory is empty");
  const auto& all = this->params_;
  verify_same_on_all_ranks(comm_, "parameter list of ZeroRedundancyOptimizer (count and shapes)", shape_signature(all));
  std::vector<std::size_t> numels;
  for (const auto& p : all) numels.push_back(p.requires_grad() ? p.numel() : 0);
  owners_ = partition_parameters(numels, comm_.size());
  const auto first = std::find(owners_.begin(), owners_.end(), comm_.rank());
  first_local_ = static_cast<std::size_t>(first - owners_.begin());
  local_count_ = static_cast<std::size_t>(std::count(owners_.begin(), owners_.end(), comm_.rank()));
  if (local_count_ > 0) {
    local_ = make(std::vector<Tensor<T>>(all.begin() + static_cast<std::ptrdiff_t>(first_local_),
                                         all.begin() + static_cast<std::ptrdiff_t>(first_local_ + local_count_)));
    if (!local_) throw std::invalid_argument("ZeroRedundancyOptimizer: the optimizer factory returned nothing");
  }
  // The wrapped optimizer's lr, from the owner of the first parameter (a rank may own none).
  double lr = local_ ? local_->lr() : 0.0;
  comm_.broadcast(&lr, 1, owners_.front());
  this->set_lr(lr);
  if (options.stage == 2) gradients_ = std::make_unique<ShardedGradients<T>>(all, owners_, comm_, options.gradients);
}

template <typename T>
void ZeroRedundancyOptimizer<T>::step() {
  consolidated_.reset();
  if (local_) {
    local_->set_lr(this->lr());
    local_->step();
  }
  broadcast_parameters_from_owners();
}

template <typename T>
void ZeroRedundancyOptimizer<T>::broadcast_parameters_from_owners() {
  if (comm_.size() == 1) return;
  for (std::size_t i = 0; i < this->params_.size(); ++i) {
    Tensor<T>& p = this->params_[i];
    if (!p.requires_grad()) continue;  // never updated
    // Blocking: Open MPI's MPI_Bcast pipelines large messages; its MPI_Ibcast took 2 to 3 times as
    // long for the large benchmark model's parameters (bench_zero, 2 ranks on one machine).
    comm_.broadcast(p.mutable_data().data(), p.numel(), owners_[i]);
  }
}

template <typename T>
StateDict<T> ZeroRedundancyOptimizer<T>::local_state() const {
  StateDict<T> out;
  if (!local_) return out;
  for (auto& [key, value] : local_->state_dict()) {
    std::size_t j = 0;
    std::string field;
    if (!optim::parse_state_key(key, j, field)) continue;  // the lr
    out[fmt::format("state.{}.{}", first_local_ + j, field)] = value;
  }
  return out;
}

template <typename T>
void ZeroRedundancyOptimizer<T>::consolidate_state_dict(int to) {
  if (to < 0 || to >= comm_.size()) {
    throw std::invalid_argument(
        fmt::format("ZeroRedundancyOptimizer::consolidate_state_dict: rank {} is not in [0, {})", to, comm_.size()));
  }
  StateDict<T> local = local_state();
  // Names and shapes first (small, to everyone), then the values to `to`, rank by rank.
  std::string header;
  for (const auto& [key, value] : local) {
    header += key;
    for (auto d : value.shape()) header += fmt::format(" {}", d);
    header += "\n";
  }
  const auto headers = comm_.all_gather(header);
  if (comm_.rank() != to) {
    for (auto& [key, value] : local) {
      comm_.send(value.data().data(), value.numel(), to);
    }
    consolidated_.reset();
    return;
  }
  StateDict<T> whole = std::move(local);
  for (int r = 0; r < comm_.size(); ++r) {
    if (r == to) continue;
    std::istringstream lines(headers[static_cast<std::size_t>(r)]);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream fields(line);
      std::string key;
      fields >> key;
      Shape shape;
      for (std::size_t d; fields >> d;) shape.push_back(d);
      Tensor<T> value(xt::xarray<T>::from_shape(shape));
      comm_.receive(value.mutable_data().data(), value.numel(), r);
      whole[key] = value;
    }
  }
  consolidated_ = std::move(whole);
}

template <typename T>
StateDict<T> ZeroRedundancyOptimizer<T>::state_dict() const {
  StateDict<T> out;
  if (comm_.size() == 1) {
    out = local_state();
  } else if (consolidated_) {
    out = *consolidated_;
  } else {
    throw std::logic_error(fmt::format(
        "ZeroRedundancyOptimizer::state_dict on {}: the state is sharded over {} ranks; call "
        "consolidate_state_dict() on every rank first (after the last step), then state_dict() on the rank it "
        "gathered to",
        comm_.describe(), comm_.size()));
  }
  out[kLr] = Tensor<T>::scalar(static_cast<T>(this->lr_));
  return out;
}

template <typename T>
void ZeroRedundancyOptimizer<T>::load_state_dict(const StateDict<T>& state) {
  const auto& all = this->params_;
  std::vector<std::string> problems;
  StateDict<T> mine;
  for (const auto& [key, value] : state) {
    if (key == kLr) continue;
    std::size_t i = 0;
    std::string field;
    if (!optim::parse_state_key(key, i, field) || i >= all.size()) {
      problems.push_back(fmt::format("unexpected key \"{}\"", key));
      continue;
    }
    if (!value.defined()) {
      problems.push_back(fmt::format("\"{}\" is an undefined tensor", key));
      continue;
    }
    // Every buffer of every optimizer of optim/ has its parameter's shape; the step is one number.
    if (field != "step" && value.shape() != all[i].shape()) {
      problems.push_back(fmt::format("\"{}\" has shape {}, parameter {} has shape {}", key, format_shape(value.shape()),
                                     i, format_shape(all[i].shape())));
      continue;
    }
    if (owners_[i] == comm_.rank()) mine[fmt::format("state.{}.{}", i - first_local_, field)] = value;
  }
  const auto lr = state.find(kLr);
  if (lr == state.end()) {
    problems.push_back(fmt::format("missing key \"{}\"", kLr));
  } else if (!lr->second.defined() || lr->second.numel() != 1 || lr->second.dim() > 1 ||
             !(static_cast<double>(lr->second.item()) >= 0.0)) {
    problems.push_back(fmt::format("\"{}\" is not one non-negative number", kLr));
  } else {
    mine[kLr] = lr->second;
  }
  if (problems.empty() && local_) {
    try {
      local_->load_state_dict(mine);  // checks the field names, steps and completeness of this rank's part
    } catch (const std::invalid_argument& e) {
      problems.push_back(
          fmt::format("{} (this rank's parameter j is parameter {} + j of the whole list)", e.what(), first_local_));
    }
  }
  if (!problems.empty()) {
    std::string message =
        fmt::format("ZeroRedundancyOptimizer.load_state_dict on {}: {} problem(s):", comm_.describe(), problems.size());
    for (const auto& p : problems) message += "\n  " + p;
    throw std::invalid_argument(message);
  }
  consolidated_.reset();
  // As the base Optimizer: keep the current lr when it is the stored one at T's precision.
  const T stored_lr = lr->second.item();
  if (stored_lr != static_cast<T>(this->lr_)) this->lr_ = static_cast<double>(stored_lr);
}

template <typename T>
void ZeroRedundancyOptimizer<T>::synchronize() {
  if (!gradients_) {
    throw std::logic_error(
        "ZeroRedundancyOptimizer::synchronize: stage 1 keeps whole gradients; average them with "
        "DistributedDataParallel");
  }
  gradients_->synchronize();
}

template <typename T>
typename ShardedGradients<T>::NoSync ZeroRedundancyOptimizer<T>::no_sync() {
  if (!gradients_) {
    throw std::logic_error(
        "ZeroRedundancyOptimizer::no_sync: stage 1 keeps whole gradients; use DistributedDataParallel's no_sync()");
  }
  return gradients_->no_sync();
}

template <typename T>
double ZeroRedundancyOptimizer<T>::clip_grad_norm_(double max_norm, double norm_type) {
  optim::check_clip_grad_norm_arguments(max_norm, norm_type);
  const auto& all = this->params_;
  const std::size_t n = all.size();
  // Each parameter's norm and whether it has a gradient, from its owner; zeros elsewhere, so the sum
  // over the ranks is exact.
  std::vector<double> exchanged(2 * n, 0.0);
  std::vector<Tensor<T>> own;
  for (std::size_t i = first_local_; i < first_local_ + local_count_; ++i) {
    if (!all[i].has_grad()) continue;
    exchanged[i] = optim::grad_norm(all[i], norm_type);
    exchanged[n + i] = 1.0;
    own.push_back(all[i]);
  }
  comm_.all_reduce_sum(exchanged);
  std::vector<double> norms;
  for (std::size_t i = 0; i < n; ++i)
    if (exchanged[n + i] > 0) norms.push_back(exchanged[i]);
  if (norms.empty()) return 0.0;
  const double total = optim::total_norm(norms, norm_type);
  optim::scale_grads_to_norm(own, max_norm, total);
  return total;
}

template class ZeroRedundancyOptimizer<float>;
template class ZeroRedundancyOptimizer<double>;

}  // namespace tapegrad::distributed
