// A pool of persistent worker threads for parallel kernel launches: parallel_for(n, fn) runs
// fn(0..n-1) on the workers and the calling thread and returns when all are done. No thread is
// created per launch; idle workers spin briefly (launches often come back to back) and then
// sleep on a condition variable, and so does a caller waiting for the workers' share.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sn {

class ThreadPool {
 public:
  // `threads` = total parallelism including the caller (threads - 1 workers); 0 = all cores.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  // Runs fn(i) for every i in [0, n). Calls from several threads take turns; a call from inside
  // a running task runs inline on that thread. The first exception a task throws is rethrown
  // here after all tasks finished.
  void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);

 private:
  void worker_loop();
  void run_tasks();

  std::vector<std::thread> workers_;
  std::mutex launch_mu_;  // one parallel_for at a time

  std::mutex mu_;
  std::condition_variable wake_, finished_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int64_t> remaining_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> active_workers_{0};  // workers inside run_tasks for the current generation (changed under mu_)
  // Pauses a thread spins before it sleeps (~0.5 ms on Zen 3, whose pause takes ~65 cycles).
  static constexpr int kSpins = 20000;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace sn
