#include "tapegrad/distributed/communicator.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>

namespace tapegrad::distributed {

namespace {
std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown host";
  return name;
}

std::string world_description() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return fmt::format("process {} ({})", ::getpid(), host_name());
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return fmt::format("rank {} of {} ({})", rank, size, host_name());
}

// MPI counts are ints: long messages go in pieces.
constexpr std::size_t kMaxChunk = std::size_t(1) << 30;
}  // namespace

void check_mpi(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(fmt::format("{} failed on {}: {}", what, world_description(), std::string(text, length)));
}

Environment::Environment(int& argc, char**& argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) throw std::logic_error("distributed::Environment: MPI is already initialized");
  int provided = 0;
  check_mpi(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_FUNNELED) {
    abort_job(fmt::format("MPI provides thread level {}, tapegrad needs MPI_THREAD_FUNNELED ({})", provided,
                          MPI_THREAD_FUNNELED));
  }
}

Environment::~Environment() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

Communicator::Communicator() : Communicator(MPI_COMM_WORLD) {}

Communicator::Communicator(MPI_Comm comm) : comm_(comm) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    throw std::logic_error(
        "distributed::Communicator: MPI is not initialized (create a distributed::Environment first)");
  }
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

std::string Communicator::describe() const { return fmt::format("rank {} of {} ({})", rank_, size_, host_name()); }

void Communicator::barrier() const { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }

void Communicator::all_reduce_sum(std::vector<double>& values) const {
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_DOUBLE, MPI_SUM, comm_),
            "MPI_Allreduce");
}

double Communicator::all_reduce_sum(double value) const {
  std::vector<double> v{value};
  all_reduce_sum(v);
  return v[0];
}

template <typename T>
void Communicator::broadcast(T* data, std::size_t count, int root) const {
  for (std::size_t done = 0; done < count; done += kMaxChunk) {
    const std::size_t n = std::min(kMaxChunk, count - done);
    check_mpi(MPI_Bcast(data + done, static_cast<int>(n), mpi_type<T>(), root, comm_), "MPI_Bcast");
  }
}

template <typename T>
void Communicator::send(const T* data, std::size_t count, int to) const {
  for (std::size_t done = 0; done < count; done += kMaxChunk) {
    const std::size_t n = std::min(kMaxChunk, count - done);
    check_mpi(MPI_Send(data + done, static_cast<int>(n), mpi_type<T>(), to, 0, comm_), "MPI_Send");
  }
}

template <typename T>
void Communicator::receive(T* data, std::size_t count, int from) const {
  for (std::size_t done = 0; done < count; done += kMaxChunk) {
    const std::size_t n = std::min(kMaxChunk, count - done);
    check_mpi(MPI_Recv(data + done, static_cast<int>(n), mpi_type<T>(), from, 0, comm_, MPI_STATUS_IGNORE), "MPI_Recv");
  }
}

void Communicator::broadcast(std::string& text, int root) const {
  std::uint64_t length = text.size();
  broadcast(&length, 1, root);
  text.resize(length);
  broadcast(text.data(), text.size(), root);
}

std::vector<std::uint64_t> Communicator::all_gather(std::uint64_t value) const {
  std::vector<std::uint64_t> all(static_cast<std::size_t>(size_));
  check_mpi(MPI_Allgather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm_), "MPI_Allgather");
  return all;
}

std::vector<std::string> Communicator::all_gather(const std::string& text) const {
  if (text.size() > static_cast<std::size_t>(INT_MAX / std::max(size_, 1))) {
    throw std::invalid_argument(fmt::format("all_gather: {} bytes is too long to gather", text.size()));
  }
  const auto lengths = all_gather(std::uint64_t(text.size()));
  std::vector<int> counts(lengths.begin(), lengths.end()), displacements(counts.size());
  int total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    displacements[r] = total;
    total += counts[r];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  check_mpi(MPI_Allgatherv(text.data(), static_cast<int>(text.size()), MPI_CHAR, all.data(), counts.data(),
                           displacements.data(), MPI_CHAR, comm_),
            "MPI_Allgatherv");
  std::vector<std::string> out;
  for (std::size_t r = 0; r < counts.size(); ++r) out.push_back(all.substr(displacements[r], counts[r]));
  return out;
}

template <>
MPI_Datatype mpi_type<float>() {
  return MPI_FLOAT;
}
template <>
MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}
template <>
MPI_Datatype mpi_type<std::uint64_t>() {
  return MPI_UINT64_T;
}
template <>
MPI_Datatype mpi_type<std::int64_t>() {
  return MPI_INT64_T;
}
template <>
MPI_Datatype mpi_type<char>() {
  return MPI_CHAR;
}

template void Communicator::broadcast<float>(float*, std::size_t, int) const;
template void Communicator::broadcast<double>(double*, std::size_t, int) const;
template void Communicator::broadcast<std::uint64_t>(std::uint64_t*, std::size_t, int) const;
template void Communicator::broadcast<std::int64_t>(std::int64_t*, std::size_t, int) const;
template void Communicator::broadcast<char>(char*, std::size_t, int) const;
template void Communicator::send<float>(const float*, std::size_t, int) const;
template void Communicator::send<double>(const double*, std::size_t, int) const;
template void Communicator::receive<float>(float*, std::size_t, int) const;
template void Communicator::receive<double>(double*, std::size_t, int) const;

void abort_job(const std::string& message, int exit_code) {
  std::fprintf(stderr, "tapegrad: %s: %s; ending the whole job\n", world_description().c_str(), message.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

int run(int& argc, char**& argv, const std::function<int(const Communicator& world)>& body) {
  Environment environment(argc, argv);
  int code = 0;
  try {
    const Communicator world;
    code = body(world);
  } catch (const std::exception& e) {
    abort_job(e.what());
  } catch (...) {
    abort_job("an exception that is not a std::exception");
  }
  return code;
}

bool launched_by_mpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

}  // namespace tapegrad::distributed
