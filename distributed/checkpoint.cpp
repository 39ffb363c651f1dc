#include "tapegrad/distributed/checkpoint.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tapegrad::distributed {

namespace {

std::string encode(const Generator::State& s) {
  std::uint64_t spare_bits = 0;
  std::memcpy(&spare_bits, &s.spare_normal, sizeof spare_bits);
  return fmt::format("{:016x} {:016x} {:016x} {:016x} {} {:016x}", s.s[0], s.s[1], s.s[2], s.s[3],
                     s.has_spare_normal ? 1 : 0, spare_bits);
}

Generator::State decode(const std::string& key, const std::string& text) {
  std::istringstream in(text);
  Generator::State s;
  int has_spare = -1;
  std::uint64_t spare_bits = 0;
  in >> std::hex >> s.s[0] >> s.s[1] >> s.s[2] >> s.s[3] >> std::dec >> has_spare >> std::hex >> spare_bits;
  if (!in || (has_spare != 0 && has_spare != 1)) {
    throw std::runtime_error(fmt::format(
        "checkpoint metadata {}: '{}' is not a generator state (four hex words, 0 or 1, a hex word)", key, text));
  }
  s.has_spare_normal = has_spare == 1;
  std::memcpy(&s.spare_normal, &spare_bits, sizeof spare_bits);
  return s;
}

// A seed for rank r from rank 0's state: splitmix64 of the state words and r, so that nearby ranks
// get unrelated streams.
std::uint64_t rank_seed(const Generator::State& s, int rank) {
  auto mix = [](std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  std::uint64_t h = mix(static_cast<std::uint64_t>(rank) + 0x9E3779B97F4A7C15ULL);
  for (std::uint64_t w : s.s) h = mix(h ^ w);
  return h;
}

std::string rank_key(int rank, const std::string& generator) {
  return fmt::format("distributed.rank{}.{}", rank, generator);
}

template <typename T>
void broadcast_generators(nn::Module<T>& module, const Communicator& comm) {
  for (auto& [name, gen] : module.named_generators()) {
    std::string text = encode(gen->state());
    comm.broadcast(text);
    gen->set_state(decode(name, text));
  }
}

}  // namespace

template <typename T>
void split_generators(nn::Module<T>& module, const Communicator& comm) {
  broadcast_generators(module, comm);
  if (comm.rank() == 0) return;
  for (auto& [name, gen] : module.named_generators()) gen->manual_seed(rank_seed(gen->state(), comm.rank()));
}

template <typename T>
io::safetensors::Metadata gather_generator_states(const nn::Module<T>& module, const Communicator& comm) {
  io::safetensors::Metadata out;
  if (comm.rank() == 0) out["distributed.world_size"] = std::to_string(comm.size());
  for (const auto& [name, gen] : module.named_generators()) {
    const auto all = comm.all_gather(encode(gen->state()));
    if (comm.rank() != 0) continue;
    for (int r = 1; r < comm.size(); ++r) out[rank_key(r, name)] = all[static_cast<std::size_t>(r)];
  }
  return comm.rank() == 0 ? out : io::safetensors::Metadata{};
}

template <typename T>
void restore_generator_states(nn::Module<T>& module, const io::safetensors::Metadata& metadata,
                              const Communicator& comm) {
  // train::load_checkpoint gave every rank rank 0's states; make sure they agree before deriving.
  broadcast_generators(module, comm);
  if (comm.rank() == 0) return;
  for (auto& [name, gen] : module.named_generators()) {
    const auto it = metadata.find(rank_key(comm.rank(), name));
    if (it != metadata.end()) {
      gen->set_state(decode(it->first, it->second));
    } else {
      gen->manual_seed(rank_seed(gen->state(), comm.rank()));
    }
  }
}

BroadcastFile::BroadcastFile(const Communicator& comm, const std::string& path) {
  std::string bytes, problem;
  if (comm.rank() == 0) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream content;
    if (in) content << in.rdbuf();
    if (!in || !content) problem = fmt::format("cannot read {}: {}", path, std::strerror(errno));
    bytes = content.str();
    local_ = path;
  }
  comm.broadcast(problem);
  if (!problem.empty()) throw std::runtime_error(fmt::format("rank 0 {}", problem));
  if (comm.size() == 1) return;
  comm.broadcast(bytes);
  if (comm.rank() == 0) return;
  std::string pattern =
      (std::filesystem::temp_directory_path() / fmt::format("tapegrad-rank{}-XXXXXX", comm.rank())).string();
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0)
    throw std::runtime_error(fmt::format("cannot create a temporary file {}: {}", pattern, std::strerror(errno)));
  local_ = pattern;
  temporary_ = true;
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n <= 0) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      std::remove(local_.c_str());
      throw std::runtime_error(fmt::format("cannot write the copy of {} to {}: {}", path, local_, reason));
    }
    written += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

BroadcastFile::~BroadcastFile() {
  if (temporary_) std::remove(local_.c_str());
}

template void split_generators<float>(nn::Module<float>&, const Communicator&);
template void split_generators<double>(nn::Module<double>&, const Communicator&);
template io::safetensors::Metadata gather_generator_states<float>(const nn::Module<float>&, const Communicator&);
template io::safetensors::Metadata gather_generator_states<double>(const nn::Module<double>&, const Communicator&);
template void restore_generator_states<float>(nn::Module<float>&, const io::safetensors::Metadata&,
                                              const Communicator&);
template void restore_generator_states<double>(nn::Module<double>&, const io::safetensors::Metadata&,
                                               const Communicator&);

}  // namespace tapegrad::distributed
