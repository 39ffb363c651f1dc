/// @file
/// MPI for data-parallel training: the Environment that initializes and finalizes it, a Communicator
/// with the few collectives training needs, and run(), which turns an exception on any rank into the
/// end of the whole job with a message naming the rank (MPI_Abort), never a hang.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tapegrad::distributed {

/// MPI_Init_thread on construction (MPI_THREAD_FUNNELED: only the thread that created it calls MPI;
/// tapegrad's worker threads never do), MPI_Finalize on destruction. Errors of MPI_COMM_WORLD are
/// returned instead of aborting, so that a failing call throws a message naming the call and the rank.
class Environment {
 public:
  Environment(int& argc, char**& argv);
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
};

/// A communicator (MPI_COMM_WORLD by default): rank, size and the collectives of data-parallel
/// training. Every collective must be called by every rank in the same order, like MPI's own.
/// A failing MPI call throws std::runtime_error with MPI's message and this rank.
class Communicator {
 public:
  Communicator();  ///< MPI_COMM_WORLD; MPI must be initialized (an Environment exists)
  explicit Communicator(MPI_Comm comm);

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm handle() const { return comm_; }
  /// "rank 1 of 4 (host)": how messages name this process.
  std::string describe() const;

  void barrier() const;
  /// Elementwise sum over all ranks, in place, in double (MPI_Allreduce): for loss and accuracy sums.
  void all_reduce_sum(std::vector<double>& values) const;
  double all_reduce_sum(double value) const;
  /// The root's values replace everyone's (MPI_Bcast); count must be the same on every rank.
  template <typename T>
  void broadcast(T* data, std::size_t count, int root = 0) const;
  /// Point to point (MPI_Send / MPI_Recv, tag 0): count values to rank `to`, or from rank `from`.
  template <typename T>
  void send(const T* data, std::size_t count, int to) const;
  template <typename T>
  void receive(T* data, std::size_t count, int from) const;
  /// The root's string to every rank, whatever length the others had.
  void broadcast(std::string& text, int root = 0) const;
  /// Every rank's string, in rank order (MPI_Allgatherv).
  std::vector<std::string> all_gather(const std::string& text) const;
  /// Every rank's value, in rank order.
  std::vector<std::uint64_t> all_gather(std::uint64_t value) const;

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
};

/// The MPI datatype of T (float, double, std::uint64_t, std::int64_t, char).
template <typename T>
MPI_Datatype mpi_type();

/// Throws std::runtime_error "<what> failed on <rank>: <MPI's message>" unless code is MPI_SUCCESS.
void check_mpi(int code, const char* what);

/// Prints "tapegrad: rank R of N (host): <message>; ending the whole job" to stderr and calls
/// MPI_Abort(MPI_COMM_WORLD, exit_code), which makes mpirun stop every rank and exit nonzero.
[[noreturn]] void abort_job(const std::string& message, int exit_code = 1);

/// True when this process was started by mpirun / mpiexec (Open MPI's, MPICH's or a PMIx launcher's
/// environment variables are set): a program can then train data-parallel, and otherwise run as one
/// process without initializing MPI.
bool launched_by_mpirun();

/// The main of a data-parallel program: initializes MPI, runs body(world) and returns its exit code
/// after MPI_Finalize. An exception thrown on any rank ends the whole job through abort_job() with
/// that rank and the exception's message, so the other ranks never wait forever in a collective.
int run(int& argc, char**& argv, const std::function<int(const Communicator& world)>& body);

}  // namespace tapegrad::distributed
