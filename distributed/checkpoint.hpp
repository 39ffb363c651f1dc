/// @file
/// Checkpoints of a data-parallel run: rank 0 writes them (train::save_checkpoint) with every rank's
/// dropout generators in the metadata, and a resumed run reads rank 0's file on every rank without a
/// shared filesystem, on any number of ranks.
#pragma once

#include <string>

#include "tapegrad/distributed/communicator.hpp"
#include "tapegrad/io/safetensors.hpp"
#include "tapegrad/nn/module.hpp"

namespace tapegrad::distributed {

/// Collective: gives every rank its own dropout masks. Rank 0's generator states are copied to every
/// rank; rank 0 keeps them (so one rank draws exactly what a single process would) and rank r > 0
/// reseeds each generator from rank 0's state mixed with r.
template <typename T>
void split_generators(nn::Module<T>& module, const Communicator& comm);

/// Collective: every rank's generator states (of module.named_generators()) as metadata for rank 0's
/// checkpoint: "distributed.world_size" and, for r > 0, "distributed.rank<r>.<generator name>" =
/// four hexadecimal state words, the spare-normal flag and the spare normal's bits. Rank 0's own
/// generators are saved by train::save_checkpoint as usual. Returns the entries on rank 0, {} elsewhere.
template <typename T>
io::safetensors::Metadata gather_generator_states(const nn::Module<T>& module, const Communicator& comm);

/// After train::load_checkpoint on every rank (which restored rank 0's generators everywhere): rank r
/// takes its own states from a checkpoint written by at least r + 1 ranks, so a run resumed on as many
/// ranks continues exactly; a rank the checkpoint did not have splits from rank 0's like
/// split_generators. Collective. Throws std::runtime_error naming a malformed entry.
template <typename T>
void restore_generator_states(nn::Module<T>& module, const io::safetensors::Metadata& metadata,
                              const Communicator& comm);

/// Collective: a file only rank 0 needs to see (the checkpoint rank 0 wrote). Rank 0 reads it, the
/// others receive its bytes into a temporary file that lives as long as this object. If rank 0
/// cannot read it, every rank throws std::runtime_error naming the path and the reason.
class BroadcastFile {
 public:
  BroadcastFile(const Communicator& comm, const std::string& path);
  ~BroadcastFile();
  BroadcastFile(const BroadcastFile&) = delete;
  BroadcastFile& operator=(const BroadcastFile&) = delete;
  /// Where this rank reads it: the original on rank 0, the temporary copy elsewhere.
  const std::string& path() const { return local_; }

 private:
  std::string local_;
  bool temporary_ = false;
};

}  // namespace tapegrad::distributed
