// Work spread over the machine's cores for a moment (compiling a program's kernels, BEAM
// candidates): one thread per core, each taking the next item until none is left.
#pragma once
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sn {

// Calls fn(i) for every i in [0, n), on min(n, cores) threads (this one included). fn must not
// throw: it keeps its own errors.
template <class Fn>
void on_all_cores(size_t n, const Fn& fn) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  const size_t width = std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (size_t t = 1; t < width; t++) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
}

// Tasks handed over while the caller goes on making more (a program's kernels compile while the
// next ones lower): up to cores - 1 helper threads take them as they come, and finish() has the
// caller take what is left and waits for all. With `hold`, helpers start only at finish() (BEAM
// times kernels while the program lowers: compiles beside it would disturb the timing). Tasks
// must not throw: they keep their own errors. The destructor (an error on the caller's side)
// drops the tasks no thread took yet and waits for the others.
//
// A free thread takes the costliest task waiting (the first pushed among equals): when the
// caller has handed over the last one, the long ones run first and the short ones fill in
// beside them (a small CNN's batch of three small kernels, queued last, was the tail of its
// compile while the other core idled).
class TaskQueue {
 public:
  explicit TaskQueue(bool hold = false)
      : hold_(hold), helpers_(std::max(1u, std::thread::hardware_concurrency()) - 1) {}
  ~TaskQueue() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      tasks_.clear();
    }
    finish();
  }
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  // `cost`: the task's expected time in any unit the caller's tasks share.
  void push(std::function<void()> task, double cost = 0) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      tasks_.push_back(Task{std::move(task), cost});
    }
    if (!hold_ && threads_.size() < helpers_) threads_.emplace_back([this] { work(); });
    ready_.notify_one();
  }

  void finish() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (closed_) return;
      closed_ = true;
    }
    ready_.notify_all();
    size_t queued = [&] {
      std::lock_guard<std::mutex> lk(mu_);
      return tasks_.size();
    }();
    while (threads_.size() < std::min(helpers_, queued)) threads_.emplace_back([this] { work(); });
    work();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lk(mu_);
        ready_.wait(lk, [&] { return !tasks_.empty() || closed_; });
        if (tasks_.empty()) return;
        auto costliest = std::max_element(tasks_.begin(), tasks_.end(),
                                          [](const Task& a, const Task& b) { return a.cost < b.cost; });
        task = std::move(costliest->fn);
        tasks_.erase(costliest);
      }
      task();
    }
  }

  const bool hold_;
  const size_t helpers_;
  std::mutex mu_;
  std::condition_variable ready_;
  struct Task {
    std::function<void()> fn;
    double cost;
  };
  std::deque<Task> tasks_;  // in the order pushed
  bool closed_ = false;
  std::vector<std::thread> threads_;  // touched by the owning thread only
};

}  // namespace sn
