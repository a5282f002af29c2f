// The runtime context: the state a compile and a run share, owned by whoever embeds Sinter (the C
// API's sn_context owns one). There is no process-wide mutable state besides what a Runtime holds:
// its device registry, its debug level and its program cache. Environment variables (SN_DEBUG) are
// read once, here, as defaults.
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "core/runtime/device.h"
#include "core/runtime/program.h"

namespace sn {

struct RuntimeOptions {
  int debug = -1;                   // SN_DEBUG level; -1: the SN_DEBUG environment variable (else 0)
  int threads = 0;                  // CPU thread pool width; 0: all cores
  size_t program_cache_size = 256;  // compiled programs kept (oldest dropped first)
};

class Runtime {
 public:
  explicit Runtime(RuntimeOptions options = {});

  DeviceRegistry& devices() { return devices_; }
  // The device called `name` ("CPU"); "" = the default device. Throws Error(Device).
  std::shared_ptr<ComputeDevice> device(std::string_view name = "");

  // SN_DEBUG: 1 kernel timings, 2 + the kernel list, 3 + optimized ASTs, 4 + source, 5 + linearized
  // UOps (printed to stderr).
  int debug() const { return debug_.load(std::memory_order_relaxed); }
  void set_debug(int level) { debug_.store(level, std::memory_order_relaxed); }

  // The program cache (core/pipeline.cpp): compiled programs by a key of their schedule's content
  // hash, the device and the compile options.
  std::shared_ptr<const Program> find_program(uint64_t key);
  void store_program(uint64_t key, std::shared_ptr<const Program> program);
  struct CacheStats {
    uint64_t hits = 0, misses = 0;
    size_t size = 0;
  };
  CacheStats program_cache_stats() const;

 private:
  DeviceRegistry devices_;
  std::atomic<int> debug_;
  size_t cache_capacity_;
  mutable std::mutex cache_mu_;
  std::unordered_map<uint64_t, std::shared_ptr<const Program>> programs_;
  std::deque<uint64_t> program_order_;  // insertion order, for eviction
  CacheStats stats_;
};

// The level SN_DEBUG asks for (0 when unset or not a number).
int debug_level_from_env();

}  // namespace sn
