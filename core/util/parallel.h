// Work spread over the machine's cores for a moment (compiling a program's kernels, BEAM
// candidates): one thread per core, each taking the next item until none is left.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
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

}  // namespace sn
