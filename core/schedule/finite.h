// Which buffers hold only finite values (no inf, no NaN) when a kernel reads them: constants whose
// bytes say so, and what the kernels before it stored by moving such values around (a weight
// packing: loads, zero padding, selects, widening casts).
//
// Why: 0 * w is 0 only where w is finite (IEEE: 0 * inf is NaN). A convolution's taps in its
// zero padding multiply a weight by a constant zero; where the weights are known finite,
// lower_reduces leaves those products out of the sum (a 7x7 map with 3x3 taps and padding 1:
// 4 of every 42 multiply-adds of its 7-column tiles), as a library convolution skips them.
#pragma once
#include <cstdint>
#include <vector>

#include "core/schedule/schedule.h"

namespace sn {

class DiskCache;

// For each kernel of s, in launch order: the Param slots (ascending) whose every element is finite
// whenever that kernel runs. Only kernels that sum over a gated (zero-padded) load are answered;
// the others get no slots.
//
// A constant is scanned the first time a kernel asks. With `disk`, the answer for a constant of
// kKeptScanBytes or more is kept there, under the content hash of its bytes and its dtype: a
// second process compiling the same weights reads it instead of scanning them again (ResNet-18's
// 45 MB: about 2 ms).
std::vector<std::vector<int64_t>> finite_params(const Schedule& s, DiskCache* disk = nullptr);
inline constexpr size_t kKeptScanBytes = size_t(1) << 21;

// Bytes of constants scanned, and answers read from the disk cache, in this process (for tests).
struct FiniteStats {
  uint64_t scanned_bytes = 0;
  uint64_t disk_hits = 0;
};
FiniteStats finite_stats();

}  // namespace sn
