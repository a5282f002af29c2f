#include "core/runtime/buffer.h"

#include <sys/mman.h>
#include <sys/sysinfo.h>

#include <cstdlib>

#include "core/runtime/device.h"
#include "core/util/error.h"

namespace sn {

std::string format_dims(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); i++) s += (i ? "," : "") + std::to_string(shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

void* host_allocate(std::string_view device, size_t bytes) {
  size_t rounded = (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  if (rounded < bytes) fail(Code::OutOfMemory, device, ": cannot allocate ", bytes, " bytes");
  if (rounded == 0) rounded = kBufferAlignment;
  struct sysinfo info {};
  if (sysinfo(&info) == 0) {
    unsigned long long unit = info.mem_unit ? info.mem_unit : 1;
    unsigned long long host = (info.totalram + info.totalswap) * unit;
    if (rounded > host)
      fail(Code::OutOfMemory, device, ": cannot allocate ", bytes, " bytes: more than the host's memory (", host,
           " bytes of RAM and swap)");
  }
  // Buffers of 8 MiB and more start on a 2 MiB boundary and ask for transparent huge pages (where
  // the kernel gives them only on request, THP "madvise"): a kernel that walks a matrix along its
  // columns touches a new 4 KiB page at every row, and with 2 MiB pages the TLB covers 512 times
  // more. A Zen 3 guest, alternated three times: a 1x4096 @ 4096x4096 matvec 2.78-3.17 -> 2.63-2.81
  // ms (min of 30 runs); blocked matmuls and convolutions unchanged. The rounding wastes at most a
  // quarter of a buffer, and none of a buffer of whole pages.
  constexpr size_t kHuge = size_t(2) << 20;
  if (rounded >= 4 * kHuge) {
    const size_t huge = (rounded + kHuge - 1) / kHuge * kHuge;  // rounded is within host memory
    if (void* p = std::aligned_alloc(kHuge, huge)) {
      madvise(p, huge, MADV_HUGEPAGE);  // advice only: without THP the pages stay 4 KiB
      return p;
    }
  }
  void* p = std::aligned_alloc(kBufferAlignment, rounded);
  if (!p) fail(Code::OutOfMemory, device, ": cannot allocate ", bytes, " bytes");
  return p;
}

std::shared_ptr<Buffer> Buffer::allocate(const std::shared_ptr<ComputeDevice>& device, DType dtype,
                                         std::vector<int64_t> shape) {
  if (!device) fail(Code::InvalidArg, "buffer: no device");
  if (dtype.ptr || dtype.lanes != 1 || dtype.is_void() || dtype.is_index())
    fail(Code::InvalidArg, "buffer: needs a scalar bool, integer or float dtype, got ", dtype.name());
  if (std::string why = device->unsupported_dtype(dtype); !why.empty())
    fail(Code::Unsupported, "buffer: device ", device->name(), " cannot hold ", dtype.name(), ": ", why);
  int64_t n = checked_numel(shape, "buffer");
  int64_t bytes = checked_bytes(n, dtype.itemsize(), "buffer ", format_dims(shape), " of ", dtype.name());
  auto storage = device->allocate(size_t(bytes));
  return std::make_shared<Buffer>(std::move(storage), 0, dtype, std::move(shape));
}

Buffer::Buffer(std::shared_ptr<Storage> storage, size_t byte_offset, DType dtype, std::vector<int64_t> shape)
    : storage_(std::move(storage)), offset_(byte_offset), dtype_(dtype), shape_(std::move(shape)) {
  if (!storage_) fail(Code::InvalidArg, "buffer: no storage");
  numel_ = checked_numel(shape_, "buffer");
  // nbytes() multiplies without a check of its own.
  (void)checked_bytes(numel_, dtype_.itemsize(), "buffer of ", dtype_.name());
  if (offset_ > storage_->bytes() || nbytes() > storage_->bytes() - offset_)
    fail(Code::InvalidArg, "buffer: ", format_dims(shape_), " of ", dtype_.name(), " at byte ", offset_,
         " does not fit in a storage of ", storage_->bytes(), " bytes");
}

void Buffer::copy_in(const void* src, size_t bytes) {
  if (bytes != nbytes())
    fail(Code::InvalidArg, "buffer copy in: got ", bytes, " bytes, the buffer ", str(), " holds ", nbytes());
  if (bytes == 0) return;
  if (src == nullptr) fail(Code::InvalidArg, "buffer copy in: source is null");
  device().copy_in(*storage_, offset_, src, bytes);
}

void Buffer::copy_out(void* dst, size_t bytes) const {
  if (bytes != nbytes())
    fail(Code::InvalidArg, "buffer copy out: got room for ", bytes, " bytes, the buffer ", str(), " holds ", nbytes());
  if (bytes == 0) return;
  if (dst == nullptr) fail(Code::InvalidArg, "buffer copy out: destination is null");
  device().copy_out(*storage_, offset_, dst, bytes);
}

std::shared_ptr<Buffer> Buffer::view(int64_t elem_offset, std::vector<int64_t> shape) const {
  int64_t n = checked_numel(shape, "buffer view");
  if (elem_offset < 0 || elem_offset > numel_ || n > numel_ - elem_offset)
    fail(Code::InvalidArg, "buffer view: ", format_dims(shape), " at element ", elem_offset, " does not fit in ",
         str());
  return std::make_shared<Buffer>(storage_, offset_ + size_t(elem_offset) * size_t(dtype_.itemsize()), dtype_,
                                  std::move(shape));
}

bool Buffer::overlaps(const Buffer& other) const {
  if (storage_ != other.storage_ || nbytes() == 0 || other.nbytes() == 0) return false;
  return offset_ < other.offset_ + other.nbytes() && other.offset_ < offset_ + nbytes();
}

void* Buffer::host_data() const {
  return device().host_memory() ? static_cast<char*>(storage_->ptr()) + offset_ : nullptr;
}

std::string Buffer::str() const { return cat(dtype_.name(), format_dims(shape_), " on ", device().name()); }

}  // namespace sn
