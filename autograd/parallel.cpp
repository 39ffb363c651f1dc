#include "tapegrad/autograd/parallel.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace tapegrad::detail {

namespace {

thread_local bool in_task = false;

// How long a thread that waits (a worker for the next job, the caller for the workers to finish)
// first polls before it sleeps on the condition variable. A training step runs hundreds of parallel
// regions back to back; waking a sleeping thread costs tens of microseconds, as much as a whole
// elementwise pass, while a short poll catches the next job at once. Short enough that on a loaded
// machine the poll costs little beside the work: at most this long per gap between jobs.
constexpr auto kPoll = std::chrono::microseconds(50);

// Polls ready() for up to kPoll; true if it turned true.
template <typename F>
bool poll(F&& ready) {
  const auto until = std::chrono::steady_clock::now() + kPoll;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() >= until) return ready();
  }
}

int default_threads() {
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

// Workers 1..threads-1; generation counts the jobs, so a worker runs each job at most once.
class Pool {
 public:
  Pool() { start(default_threads()); }
  ~Pool() { stop(); }

  int threads() const { return threads_; }

  void resize(int threads) {
    std::lock_guard<std::mutex> run(run_mutex_);
    stop();
    start(threads < 1 ? 1 : threads);
  }

  void run(std::size_t threads, const std::function<void(std::size_t)>& task) {
    std::unique_lock<std::mutex> run(run_mutex_, std::try_to_lock);
    if (in_task || !run.owns_lock() || threads > static_cast<std::size_t>(threads_)) {
      for (std::size_t t = 0; t < threads; ++t) task(t);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &task;
      job_threads_ = threads;
      pending_.store(threads - 1, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    work_.notify_all();
    in_task = true;
    task(0);
    in_task = false;
    const auto finished = [&] { return pending_.load(std::memory_order_acquire) == 0; };
    if (!poll(finished)) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, finished);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = nullptr;
  }

 private:
  void start(int threads) {
    threads_ = threads;
    stopping_ = false;
    // A worker starts from the generation current now (no job is running), not from whatever it reads
    // once scheduled: a job posted in between would otherwise be missed and never finish.
    const std::uint64_t current = generation_.load();
    for (int i = 1; i < threads; ++i)
      workers_.emplace_back([this, i, current] { work(static_cast<std::size_t>(i), current); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    work_.notify_all();
    for (auto& w : workers_) w.join();
    workers_.clear();
  }

  void work(std::size_t index, std::uint64_t seen) {
    for (;;) {
      poll([&] { return generation_.load(std::memory_order_acquire) != seen || stopping_.load(); });
      std::unique_lock<std::mutex> lock(mutex_);
      work_.wait(lock, [&] { return stopping_.load() || generation_.load() != seen; });
      if (stopping_) return;
      seen = generation_.load();
      if (index >= job_threads_) continue;
      const auto* job = job_;
      lock.unlock();
      in_task = true;
      (*job)(index);
      in_task = false;
      lock.lock();
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.notify_one();
    }
  }

  std::mutex run_mutex_;  // one job at a time
  std::mutex mutex_;
  std::condition_variable work_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(std::size_t)>* job_ = nullptr;
  std::size_t job_threads_ = 0;
  // Written under mutex_, and atomic so that a polling thread may read them without it.
  std::atomic<std::size_t> pending_{0};
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<bool> stopping_{false};
  int threads_ = 1;
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

int parallel_threads() { return pool().threads(); }
void set_parallel_threads(int threads) { pool().resize(threads); }
void run_on_threads(std::size_t threads, const std::function<void(std::size_t)>& task) { pool().run(threads, task); }

}  // namespace tapegrad::detail
