#include "core/runtime/thread_pool.h"

#include <chrono>

namespace sn {

namespace {
thread_local bool t_in_task = false;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < threads; i++) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_tasks() {
  bool prev = t_in_task;
  t_in_task = true;
  for (;;) {
    int64_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= n_) break;
    try {
      (*fn_)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lk(mu_);
      if (!error_) error_ = std::current_exception();
    }
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lk(mu_);
      finished_.notify_all();
    }
  }
  t_in_task = prev;
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    // Spin a little before sleeping: back-to-back launches then start without a wakeup.
    for (int spin = 0; spin < kSpins && generation_.load(std::memory_order_acquire) == seen; spin++) cpu_relax();
    std::unique_lock<std::mutex> lk(mu_);
    wake_.wait(lk, [&] { return generation_.load(std::memory_order_acquire) != seen; });
    seen = generation_.load(std::memory_order_acquire);
    if (stop_) return;
    if (!fn_) continue;
    active_workers_++;
    lk.unlock();
    run_tasks();
    lk.lock();
    if (--active_workers_ == 0) finished_.notify_all();
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1 || t_in_task) {
    bool prev = t_in_task;
    t_in_task = true;
    struct Restore {
      bool v;
      ~Restore() { t_in_task = v; }
    } restore{prev};
    for (int64_t i = 0; i < n; i++) fn(i);
    return;
  }
  std::lock_guard<std::mutex> launch(launch_mu_);
  {
    std::lock_guard<std::mutex> lk(mu_);
    fn_ = &fn;
    n_ = n;
    next_.store(0, std::memory_order_relaxed);
    remaining_.store(n, std::memory_order_relaxed);
    error_ = nullptr;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  run_tasks();
  // Spin a little before sleeping too: the workers' share of a launch usually ends within
  // microseconds of ours, and a caller asleep on the condition variable first has to be woken
  // (an inter-processor interrupt on a VM, tens of microseconds: a 50 us convolution split over
  // two threads took twice as long with its caller sleeping).
  auto all_done = [&] {
    return remaining_.load(std::memory_order_acquire) == 0 && active_workers_.load(std::memory_order_acquire) == 0;
  };
  for (int spin = 0; spin < kSpins && !all_done(); spin++) cpu_relax();
  std::exception_ptr err;
  {
    std::unique_lock<std::mutex> lk(mu_);
    // Wait for the tasks and for every worker to leave run_tasks (they read fn_ and n_).
    finished_.wait(lk, all_done);
    fn_ = nullptr;
    err = error_;
    error_ = nullptr;
  }
  if (err) std::rethrow_exception(err);
}

}  // namespace sn
