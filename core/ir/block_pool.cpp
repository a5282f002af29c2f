#include "core/ir/block_pool.h"

#include <mutex>
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
// A pooled block is poisoned until a graph takes it again: under AddressSanitizer a node read
// after its graph died is still reported, as it was when blocks went back to the C library.
#define SN_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define SN_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define SN_POISON(p, n) ((void)(p), (void)(n))
#define SN_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace sn {

namespace {
constexpr std::align_val_t kAlign{64};

struct BlockPool {
  std::mutex mu;
  std::vector<std::pair<size_t, void*>> free;  // (bytes, block); few entries: a scan finds one
  size_t held = 0;
};

// Never destroyed: graphs that outlive static destruction (a static in a user's program) still
// give their blocks back safely; what it holds at exit stays reachable (no leak reported).
BlockPool& pool() {
  static BlockPool* p = new BlockPool;
  return *p;
}
}  // namespace

void* pool_allocate(size_t bytes) {
  if (bytes >= kPooledBytes) {
    BlockPool& bp = pool();
    std::lock_guard lock(bp.mu);
    for (size_t i = bp.free.size(); i-- > 0;)
      if (bp.free[i].first == bytes) {
        void* p = bp.free[i].second;
        bp.free[i] = bp.free.back();
        bp.free.pop_back();
        bp.held -= bytes;
        SN_UNPOISON(p, bytes);
        return p;
      }
  }
  return ::operator new(bytes, kAlign);
}

void pool_release(void* p, size_t bytes) noexcept {
  if (!p) return;
  if (bytes >= kPooledBytes) {
    BlockPool& bp = pool();
    std::lock_guard lock(bp.mu);
    if (bp.held + bytes <= kBlockPoolBytes) {
      try {
        bp.free.emplace_back(bytes, p);
        bp.held += bytes;
        SN_POISON(p, bytes);
        return;
      } catch (const std::bad_alloc&) {  // no room to remember it: free it below
      }
    }
  }
  ::operator delete(p, kAlign);
}

size_t pool_held_bytes() {
  BlockPool& bp = pool();
  std::lock_guard lock(bp.mu);
  return bp.held;
}

void pool_trim() {
  std::vector<std::pair<size_t, void*>> blocks;
  {
    BlockPool& bp = pool();
    std::lock_guard lock(bp.mu);
    blocks.swap(bp.free);
    bp.held = 0;
  }
  for (auto& [bytes, p] : blocks) {
    SN_UNPOISON(p, bytes);
    ::operator delete(p, kAlign);
  }
}

}  // namespace sn
