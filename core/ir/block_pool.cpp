#include "core/ir/block_pool.h"

#include <mutex>
#include <utility>
#include <vector>

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
  for (auto& [bytes, p] : blocks) ::operator delete(p, kAlign);
}

}  // namespace sn
