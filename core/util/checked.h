// Checked int64 arithmetic for every size the compiler computes: element counts (products of
// dims), dims derived from other dims, byte sizes. A value that does not fit int64 is a size no
// device can hold, so it is reported as Error(InvalidArg) naming what was computed and the operands,
// never left to wrap (signed overflow is undefined behaviour, and a wrapped count would be used to
// allocate, index and bounds-check).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/util/error.h"

namespace sn {

// `what...` names the op and the quantity ("Reshape", ": element count"); its parts are formatted
// (cat) only when the check fails, so the checks cost nothing on the paths every node takes.

// a * b.
template <class... T>
[[nodiscard]] int64_t checked_mul(int64_t a, int64_t b, const T&... what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    fail(Code::InvalidArg, what..., ": ", a, " * ", b, " overflows int64 (no device can hold that size)");
  return r;
}

// a + b.
template <class... T>
[[nodiscard]] int64_t checked_add(int64_t a, int64_t b, const T&... what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    fail(Code::InvalidArg, what..., ": ", a, " + ", b, " overflows int64 (no device can hold that size)");
  return r;
}

// The number of elements of `dims`. A negative dim is an error. A zero dim makes the count 0, but
// the product of the other dims must fit too: every suffix product (a row-major stride) of the
// shape then fits int64, so indexing code may multiply dims without checks of its own.
template <class... T>
[[nodiscard]] int64_t checked_numel(std::span<const int64_t> dims, const T&... what) {
  auto shape = [&] {
    std::string s = "(";
    for (size_t k = 0; k < dims.size(); k++) s += (k ? "," : "") + std::to_string(dims[k]);
    return s + (dims.size() == 1 ? ",)" : ")");
  };
  int64_t n = 1;
  bool zero = false;
  for (size_t k = 0; k < dims.size(); k++) {
    int64_t d = dims[k];
    if (d < 0) fail(Code::InvalidArg, what..., ": dim ", k, " of shape ", shape(), " is negative");
    if (d == 0) {
      zero = true;
      continue;
    }
    if (__builtin_mul_overflow(n, d, &n))
      fail(Code::InvalidArg, what..., ": shape ", shape(),
           " has too many elements (the count overflows int64: no device can hold that size)");
  }
  return zero ? 0 : n;
}

template <class... T>
[[nodiscard]] int64_t checked_numel(const std::vector<int64_t>& dims, const T&... what) {
  return checked_numel(std::span<const int64_t>(dims), what...);
}

// The bytes of `numel` elements of `itemsize` bytes each. The element count is valid, so a byte
// size past int64 is Error(OutOfMemory): more memory than any device has, named with the size.
template <class... T>
[[nodiscard]] int64_t checked_bytes(int64_t numel, int64_t itemsize, const T&... what) {
  int64_t r;
  if (__builtin_mul_overflow(numel, itemsize, &r))
    fail(Code::OutOfMemory, what..., ": ", numel, " elements of ", itemsize,
         " bytes overflow int64 bytes (no device can hold that size)");
  return r;
}

}  // namespace sn
