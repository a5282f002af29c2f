// Sizes that do not fit int64: every product or sum of dims goes through core/util/checked.h, so a
// shape or element count that overflows is Error(InvalidArg) naming the op and the values (never
// signed overflow, which UBSan reports, or a wrapped count used to allocate and index), and a byte
// size past int64 or an allocation larger than the host is Error(OutOfMemory) before the allocator
// sees it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "core/ir/graph.h"
#include "core/runtime/buffer.h"
#include "core/runtime/runtime.h"
#include "core/tensor/compose.h"
#include "core/tensor/tensor.h"
#include "core/util/checked.h"
#include "tests/util/test_helpers.h"

namespace sn {
namespace {

using testutil::error_of;
using testutil::expect_invalid;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t k2p62 = int64_t(1) << 62;

TEST(CheckedSizes, Helpers) {
  EXPECT_EQ(checked_mul(3, 4, "x"), 12);
  EXPECT_EQ(checked_add(kMax - 1, 1, "x"), kMax);
  expect_invalid([] { (void)checked_mul(kMax, 2, "Op", ": what"); },
                 {"Op: what: 9223372036854775807 * 2 overflows int64"});
  expect_invalid([] { (void)checked_add(kMax, 1, "Op"); }, {"Op: 9223372036854775807 + 1 overflows int64"});
  EXPECT_EQ(checked_numel(std::vector<int64_t>{}, "s"), 1);
  EXPECT_EQ(checked_numel(std::vector<int64_t>{2, 3, 4}, "s"), 24);
  EXPECT_EQ(checked_numel(std::vector<int64_t>{0, kMax}, "s"), 0);
  EXPECT_EQ(checked_bytes(kMax / 8, 8, "b"), kMax / 8 * 8);
  Code code = Code::Ok;
  std::string m = error_of([] { (void)checked_bytes(kMax / 2, 4, "b"); }, &code);
  EXPECT_EQ(code, Code::OutOfMemory);
  EXPECT_NE(m.find("b: 4611686018427387903 elements of 4 bytes overflow int64 bytes"), std::string::npos) << m;
  // A zero dim does not excuse the others: their product is every stride of the shape.
  expect_invalid(
      [] {
        (void)checked_numel(std::vector<int64_t>{0, kMax, 2}, "s");
      },
      {"s: shape (0,9223372036854775807,2) has too many elements"});
  expect_invalid(
      [] {
        (void)checked_numel(std::vector<int64_t>{2, -1}, "s");
      },
      {"s: dim 1 of shape (2,-1) is negative"});
}

// A shape operand of constant dims.
const UOp* dims(Graph& g, std::vector<int64_t> d) { return g.shape_uop(std::span<const int64_t>(d)); }

TEST(CheckedSizes, GraphShapes) {
  Graph g;
  const UOp* x5 = input(g, dtypes::float32, {5});
  expect_invalid(
      [&] {
        g.make(Op::Reshape, dtypes::float32, {x5, dims(g, {5, kMax})});
      },
      {"Reshape: new shape: shape (5,9223372036854775807) has too many elements"});
  // An Expand to a shape too large for int64 is caught by the check every derived shape passes.
  const UOp* one = reshape(g, x5, {5, 1});
  expect_invalid(
      [&] {
        g.make(Op::Expand, dtypes::float32, {one, dims(g, {5, kMax})});
      },
      {"Expand: shape (5,9223372036854775807) has too many elements"});
  BufferArg two{g.next_buffer_id(), kMax, Device{{"CPU", "CPU"}, true}, AddrSpace::Global};
  expect_invalid([&] { g.make(Op::Buffer, dtypes::float32, {}, std::move(two)); },
                 {"Buffer: size x devices", "9223372036854775807 * 2 overflows int64"});
  const UOp* h16 = input(g, dtypes::int16, {k2p62});
  expect_invalid([&] { g.make(Op::Bitcast, dtypes::int32, {h16}, dtypes::int32); },
                 {"Bitcast: bytes of the last axis of int16", "4611686018427387904 * 2 overflows int64"});
  expect_invalid(
      [&] {
        g.make(Op::Shrink, dtypes::float32, {x5, dims(g, {kMax}), dims(g, {1})});
      },
      {"Shrink: axis 0 offset + size: 9223372036854775807 + 1 overflows int64"});
  expect_invalid([&] { shrink(g, x5, {kMax}, {1}); }, {"shrink: axis 0 offset + size", "overflows int64"});
  expect_invalid([&] { pad(g, x5, {kMax}, {kMax}); }, {"pad: axis 0 offset + size", "overflows int64"});
}

TEST(CheckedSizes, Compositions) {
  Graph g;
  expect_invalid([&] { arange(g, kMax, dtypes::float32); }, {"arange: 9223372036854775807 values", "overflows int64"});
  expect_invalid([&] { cumsum(g, input(g, dtypes::float32, {k2p62}), 0); },
                 {"cumsum: axis of 4611686018427387904 elements", "overflows int64"});
  // 2^31 elements once overflowed the quadratic window (with a message showing -9223372034707292161); the scan in
  // blocks needs O(n) space, so that graph now builds.
  EXPECT_EQ(error_of([&] { cumsum(g, input(g, dtypes::int8, {int64_t(1) << 31}), 0); }), "");
  const UOp* big = input(g, dtypes::int8, {kMax});
  const UOp* both[] = {big, big};
  expect_invalid([&] { concat(g, both, 0); }, {"concat: length of axis 0", "overflows int64"});
  const UOp* x = input(g, dtypes::float32, {1, 1, 4, 4});
  const UOp* w = input(g, dtypes::float32, {1, 1, 3, 3});
  expect_invalid(
      [&] {
        conv2d(g, x, w, nullptr, {1, 1}, {0, 0}, {kMax, 1});
      },
      {"conv2d: dilation x (kernel - 1) along H: 9223372036854775807 * 2 overflows int64"});
  expect_invalid([&] { rand_uniform(g, {k2p62, 4}, uint64_t(1)); }, {"(4611686018427387904,4) has too many elements"});
}

// Host buffers of 8 MiB and more start on a 2 MiB boundary (transparent huge pages cover them whole)
// and every byte asked for is writable; smaller ones keep the plain alignment.
TEST(CheckedSizes, LargeHostBuffersStartOnHugePageBoundaries) {
  for (size_t bytes : {size_t(8) << 20, (size_t(9) << 20) + 3}) {
    auto* p = static_cast<unsigned char*>(host_allocate("HOST", bytes));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (size_t(2) << 20), 0u) << bytes;
    std::memset(p, 1, bytes);
    EXPECT_EQ(p[bytes - 1], 1);
    std::free(p);
  }
  void* small = host_allocate("HOST", size_t(1) << 20);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small) % kBufferAlignment, 0u);
  std::free(small);
}

TEST(CheckedSizes, AbsurdAllocationsFailCleanly) {
  Code code = Code::Ok;
  std::string m = error_of([] { host_allocate("HOST", size_t(kMax)); }, &code);
  EXPECT_EQ(code, Code::OutOfMemory);
  EXPECT_NE(m.find("HOST: cannot allocate 9223372036854775807 bytes"), std::string::npos) << m;
  m = error_of([] { host_allocate("HOST", std::numeric_limits<size_t>::max()); }, &code);
  EXPECT_EQ(code, Code::OutOfMemory) << m;
  void* p = host_allocate("HOST", 0);  // a real, aligned address even for nothing
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kBufferAlignment, 0u);
  std::free(p);
#if SN_BACKEND_CPU
  Runtime rt(RuntimeOptions{.debug = 0});
  auto cpu = rt.device("CPU");
  m = error_of([&] { Buffer::allocate(cpu, dtypes::int8, {kMax}); }, &code);
  EXPECT_EQ(code, Code::OutOfMemory);
  EXPECT_NE(m.find("CPU: cannot allocate 9223372036854775807 bytes"), std::string::npos) << m;
  m = error_of([&] { Buffer::allocate(cpu, dtypes::float32, {k2p62}); }, &code);
  EXPECT_EQ(code, Code::OutOfMemory);
  EXPECT_NE(m.find("buffer (4611686018427387904,) of float32: 4611686018427387904 elements of 4 bytes overflow"),
            std::string::npos)
      << m;
#endif
}

}  // namespace
}  // namespace sn
