#pragma once
// Large blocks of memory that graphs keep their nodes, sources and node tables in, recycled from
// one graph to the next.
//
// Why: a kernel's lowering builds thousands of nodes (224 bytes each) in blocks of up to about a
// megabyte. The C library maps blocks that large straight from the OS and unmaps them when they
// are freed, so every new graph (each compile has its own) faulted its blocks in again, page by
// page: a page fault costs about 2 us, and lowering a 7x7 convolution touched some 230 fresh
// pages, a third of its time. A block given back here goes to the next graph that asks for one
// of its size, already mapped. The pool keeps at most kBlockPoolBytes; beyond that, or below
// kPooledBytes, blocks go back to the C library as before.
#include <cstddef>
#include <new>

namespace sn {

inline constexpr size_t kPooledBytes = size_t(32) << 10;     // smaller blocks: plain operator new
inline constexpr size_t kBlockPoolBytes = size_t(64) << 20;  // the most the pool keeps unused

// `bytes` bytes aligned to 64; throws std::bad_alloc when memory runs out.
void* pool_allocate(size_t bytes);
// Returns a block from pool_allocate of the same size (nullptr: nothing to do).
void pool_release(void* p, size_t bytes) noexcept;
// Bytes the pool holds unused right now, and freeing them all (for tests).
size_t pool_held_bytes();
void pool_trim();

// A std allocator over pool_allocate, for containers whose buffers grow large (a node table).
template <class T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <class U>
  PoolAllocator(const PoolAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(pool_allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { pool_release(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const PoolAllocator<U>&) const {
    return true;
  }
};

}  // namespace sn
