// ComputeDevice memory: a Storage is one allocation on a device (64-byte aligned on the CPU); a Buffer is a
// typed, shaped window into a Storage (the whole of it, or a view at an offset). Buffers share their
// Storage through shared_ptr, so a view keeps its parent's memory alive and the last Buffer to go
// frees it. A Storage keeps its ComputeDevice alive.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/ir/dtype.h"
#include "core/util/checked.h"

namespace sn {

class ComputeDevice;

// Alignment of every CPU allocation: a cache line, and the widest SIMD load (AVX-512).
inline constexpr size_t kBufferAlignment = 64;

// A position in device memory: a Storage's handle (a host pointer on the CPU, a cl_mem on
// OpenCL) and a byte offset into it.
struct DevicePtr {
  void* base;
  size_t offset;
};

// One allocation. Created by ComputeDevice::allocate; freed when the last reference goes.
class Storage {
 public:
  // `release` frees ptr when the last reference goes (nullptr: memory the Storage does not own).
  Storage(std::shared_ptr<ComputeDevice> device, void* ptr, size_t bytes, std::function<void(void*)> release)
      : device_(std::move(device)), ptr_(ptr), bytes_(bytes), free_(std::move(release)) {}
  ~Storage() {
    if (free_) free_(ptr_);
  }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  ComputeDevice& device() const { return *device_; }
  const std::shared_ptr<ComputeDevice>& device_ptr() const { return device_; }
  // The device's handle of the allocation (a host pointer on the CPU, a cl_mem on OpenCL). Never
  // null, even for 0 bytes.
  void* ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<ComputeDevice> device_;
  void* ptr_;
  size_t bytes_;
  std::function<void(void*)> free_;
};

// A typed, shaped, row-major contiguous window of a Storage: numel() elements of `dtype` starting
// byte_offset() bytes into it.
class Buffer {
 public:
  // Allocates a fresh buffer of `shape` on `device` (contents uninitialized).
  static std::shared_ptr<Buffer> allocate(const std::shared_ptr<ComputeDevice>& device, DType dtype,
                                          std::vector<int64_t> shape);
  // Wraps `bytes` at `byte_offset` of `storage` (checked against its size).
  Buffer(std::shared_ptr<Storage> storage, size_t byte_offset, DType dtype, std::vector<int64_t> shape);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return size_t(numel_) * size_t(dtype_.itemsize()); }
  size_t byte_offset() const { return offset_; }
  ComputeDevice& device() const { return storage_->device(); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  // Where element 0 is, for a launch.
  DevicePtr address() const { return {storage_->ptr(), offset_}; }
  // The host address of element 0 when the host can read and write the memory directly (CPU),
  // else nullptr.
  void* host_data() const;

  // Copies `bytes` host bytes into the buffer / out of it. The size must be exactly nbytes().
  void copy_in(const void* src, size_t bytes);
  void copy_out(void* dst, size_t bytes) const;

  // A view of `shape` starting at element `elem_offset` of this buffer, same dtype. Keeps the memory
  // alive. Throws InvalidArg when it does not fit inside this buffer.
  std::shared_ptr<Buffer> view(int64_t elem_offset, std::vector<int64_t> shape) const;

  // True when the byte ranges of the two buffers overlap (same Storage; empty buffers never do).
  bool overlaps(const Buffer& other) const;

  std::string str() const;  // "float32(2,3) on CPU"

 private:
  std::shared_ptr<Storage> storage_;
  size_t offset_;
  DType dtype_;
  std::vector<int64_t> shape_;
  int64_t numel_;
};

// "(2,3)"; "()" for a scalar; "(5,)" for one axis.
std::string format_dims(const std::vector<int64_t>& shape);

// A new host allocation of `bytes` (rounded up to kBufferAlignment; 0 bytes still get an address)
// for the host-memory devices, freed with std::free. More than the host's memory (RAM + swap) is
// Error(OutOfMemory) naming the size before the allocator sees it: an absurd request must fail
// cleanly, not reach aligned_alloc (which sanitizers abort on) or the kernel's overcommit.
void* host_allocate(std::string_view device, size_t bytes);

}  // namespace sn
