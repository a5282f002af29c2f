// Small helpers shared by the C++ unit tests: error expectations and deterministic random data.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/util/error.h"

namespace sn::testutil {

// The message of the sn::Error that `fn` throws ("" when it throws none); its code into *code.
inline std::string error_of(const std::function<void()>& fn, Code* code = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.message();
  }
  return "";
}

// `fn` throws sn::Error(InvalidArg) whose message contains every one of `parts`.
inline void expect_invalid(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::InvalidArg) << e.message();
    for (const std::string& p : parts)
      EXPECT_NE(e.message().find(p), std::string::npos) << "'" << p << "' not in: " << e.message();
    return;
  }
  ADD_FAILURE() << "no sn::Error thrown";
}

// Deterministic test data (xorshift64).
struct Rng {
  uint64_t s = 0x9e3779b97f4a7c15ull;
  explicit Rng(uint64_t seed = 0x9e3779b97f4a7c15ull) : s(seed ? seed : 1) {}
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * double(next() >> 11) / double(1ull << 53); }
  int64_t integer(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }
  bool coin(double p = 0.5) { return uniform(0, 1) < p; }
};

}  // namespace sn::testutil
