#include "core/runtime/runtime.h"

#include <cstdlib>

namespace sn {

int debug_level_from_env() {
  const char* s = std::getenv("SN_DEBUG");
  if (!s || !*s) return 0;
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (*end != '\0' || v < 0) return 0;
  return v > 100 ? 100 : int(v);
}

Runtime::Runtime(RuntimeOptions options)
    : devices_(DeviceOptions{options.threads}),
      debug_(options.debug >= 0 ? options.debug : debug_level_from_env()),
      cache_capacity_(options.program_cache_size) {}

std::shared_ptr<ComputeDevice> Runtime::device(std::string_view name) {
  return name.empty() ? devices_.default_device() : devices_.open(name);
}

std::shared_ptr<const Program> Runtime::find_program(uint64_t key) {
  std::lock_guard<std::mutex> lk(cache_mu_);
  auto it = programs_.find(key);
  if (it == programs_.end()) {
    stats_.misses++;
    return nullptr;
  }
  stats_.hits++;
  return it->second;
}

void Runtime::store_program(uint64_t key, std::shared_ptr<const Program> program) {
  if (cache_capacity_ == 0) return;
  std::lock_guard<std::mutex> lk(cache_mu_);
  if (programs_.insert_or_assign(key, std::move(program)).second) program_order_.push_back(key);
  while (programs_.size() > cache_capacity_) {
    programs_.erase(program_order_.front());
    program_order_.pop_front();
  }
}

Runtime::CacheStats Runtime::program_cache_stats() const {
  std::lock_guard<std::mutex> lk(cache_mu_);
  CacheStats s = stats_;
  s.size = programs_.size();
  return s;
}

}  // namespace sn
