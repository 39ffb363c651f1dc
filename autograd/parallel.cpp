#include "tapegrad/autograd/parallel.hpp"

#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace tapegrad::detail {

namespace {

thread_local bool in_task = false;

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
      pending_ = threads - 1;
      ++generation_;
    }
    work_.notify_all();
    in_task = true;
    task(0);
    in_task = false;
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void start(int threads) {
    threads_ = threads;
    stopping_ = false;
    // A worker starts from the generation current now (no job is running), not from whatever it reads
    // once scheduled: a job posted in between would otherwise be missed and never finish.
    const std::uint64_t current = generation_;
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
      std::unique_lock<std::mutex> lock(mutex_);
      work_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      if (index >= job_threads_) continue;
      const auto* job = job_;
      lock.unlock();
      in_task = true;
      (*job)(index);
      in_task = false;
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex run_mutex_;  // one job at a time
  std::mutex mutex_;
  std::condition_variable work_, done_;
  std::vector<std::thread> workers_;
  const std::function<void(std::size_t)>* job_ = nullptr;
  std::size_t job_threads_ = 0, pending_ = 0;
  std::uint64_t generation_ = 0;
  bool stopping_ = false;
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
