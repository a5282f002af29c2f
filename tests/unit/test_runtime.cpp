// The runtime pieces on their own: buffers and views, the device registry, the arena planner, and
// programs run concurrently.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>

#include "core/pipeline.h"
#include "core/runtime/runtime.h"
#include "core/tensor/compose.h"
#include "core/util/parallel.h"

#if SN_BACKEND_CPU
#include "tests/unit/test_pipeline_util.h"
#include "tests/util/test_helpers.h"
#endif

namespace sn {
namespace {

using testutil::error_of;

TEST(DeviceNames, Canonical) {
  EXPECT_EQ(canonical_device_name("cpu"), "CPU");
  EXPECT_EQ(canonical_device_name("CPU:0"), "CPU");
  EXPECT_EQ(canonical_device_name("cuda:1"), "CUDA:1");
  Code code = Code::Ok;
  for (const char* bad : {"", ":", "CPU:", "CPU:x", "C PU", "CPU:1:2"}) {
    error_of([&] { canonical_device_name(bad); }, &code);
    EXPECT_EQ(code, Code::Device) << "'" << bad << "'";
  }
}

// A device that only allocates host memory: enough to test the registry and buffers without a
// compiler.
class HostOnlyDevice final : public ComputeDevice {
 public:
  explicit HostOnlyDevice(std::string name) : ComputeDevice(std::move(name), Target{}) {}
  std::string unsupported_dtype(DType dt) const override { return dt == dtypes::float64 ? "no doubles here" : ""; }
  std::shared_ptr<Storage> allocate(size_t bytes) override {
    allocated += bytes;
    void* p = std::aligned_alloc(kBufferAlignment, (bytes / kBufferAlignment + 1) * kBufferAlignment);
    return std::make_shared<Storage>(shared_from_this(), p, bytes, &std::free);
  }
  void copy_in(Storage& dst, size_t off, const void* src, size_t n) override {
    std::memcpy(static_cast<char*>(dst.ptr()) + off, src, n);
  }
  void copy_out(const Storage& src, size_t off, void* dst, size_t n) override {
    std::memcpy(dst, static_cast<const char*>(src.ptr()) + off, n);
  }
  std::shared_ptr<const DeviceKernel> find(uint64_t) const override { return nullptr; }
  std::shared_ptr<const DeviceKernel> compile(const LoweredKernel&) override {
    fail(Code::Unsupported, "HOST compiles nothing");
  }
  void launch(const DeviceKernel&, std::span<const DevicePtr>, std::span<const int64_t>, const LaunchSize&) override {}
  void synchronize() override {}
  bool host_memory() const override { return true; }
  Stats stats() const override { return {}; }
  size_t allocated = 0;
};

TEST(DeviceDtypes, ADtypeTheDeviceCannotRunFailsAtCompileTime) {
  Runtime rt(RuntimeOptions{.debug = 0});
  auto dev = std::make_shared<HostOnlyDevice>("HOST");
  Graph g;
  const UOp* x = input(g, dtypes::float64, {4}, "HOST");
  Code code = Code::Ok;
  std::string msg = error_of([&] { (void)compile_program(rt, g, std::vector<const UOp*>{add(g, x, x)}, dev); }, &code);
  EXPECT_EQ(code, Code::Unsupported);
  EXPECT_NE(msg.find("float64"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no doubles here"), std::string::npos) << msg;
}

TEST(DeviceRegistry, OpensOnceAndReportsUnknownDevices) {
  DeviceRegistry reg;
  int opened = 0;
  reg.add("HOST", [&](const std::string& name, const DeviceOptions&) {
    opened++;
    if (name != "HOST") fail(Code::Device, "only HOST:0");
    return std::make_shared<HostOnlyDevice>(name);
  });
  auto a = reg.open("host");
  auto b = reg.open("HOST:0");
  EXPECT_EQ(a, b);
  EXPECT_EQ(opened, 1);
  EXPECT_EQ(a->name(), "HOST");
  Code code = Code::Ok;
  std::string msg = error_of([&] { reg.open("HOST:2"); }, &code);
  EXPECT_EQ(code, Code::Device);
  msg = error_of([&] { reg.open("METAL"); }, &code);
  EXPECT_EQ(code, Code::Device);
  EXPECT_NE(msg.find("METAL"), std::string::npos) << msg;
  EXPECT_NE(msg.find("HOST"), std::string::npos) << msg;  // names what is available
  // A factory failing with another code is reported as a device error naming the device.
  reg.add("BROKEN", [](const std::string&, const DeviceOptions&) -> std::shared_ptr<ComputeDevice> {
    fail(Code::Internal, "driver exploded");
  });
  msg = error_of([&] { reg.open("BROKEN"); }, &code);
  EXPECT_EQ(code, Code::Device);
  EXPECT_NE(msg.find("driver exploded"), std::string::npos) << msg;
  auto names = reg.names();
  EXPECT_NE(std::find(names.begin(), names.end(), "HOST"), names.end());
#if SN_BACKEND_CPU
  EXPECT_EQ(names.front(), "CPU");
  EXPECT_EQ(reg.default_device()->name(), "CPU");
#else
  error_of([&] { DeviceRegistry().default_device(); }, &code);
  EXPECT_EQ(code, Code::Device);
#endif
}

TEST(Buffers, AllocateCopyAndView) {
  auto dev = std::make_shared<HostOnlyDevice>("HOST");
  auto b = Buffer::allocate(dev, dtypes::int32, {3, 4});
  EXPECT_EQ(b->numel(), 12);
  EXPECT_EQ(b->nbytes(), 48u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->host_data()) % kBufferAlignment, 0u);
  std::vector<int32_t> v(12);
  std::iota(v.begin(), v.end(), 0);
  b->copy_in(v.data(), 48);
  std::vector<int32_t> back(12, -1);
  b->copy_out(back.data(), 48);
  EXPECT_EQ(back, v);
  EXPECT_EQ(b->str(), "int32(3,4) on HOST");

  // A view keeps the storage alive after the parent is gone.
  std::shared_ptr<Buffer> view = b->view(5, {2, 3});
  EXPECT_TRUE(view->overlaps(*b));
  b.reset();
  std::vector<int32_t> part(6);
  view->copy_out(part.data(), 24);
  EXPECT_EQ(part, (std::vector<int32_t>{5, 6, 7, 8, 9, 10}));
  auto tail = view->view(4, {2});
  EXPECT_EQ(tail->byte_offset(), 9 * 4u);
  auto head = view->view(0, {4});
  EXPECT_FALSE(tail->overlaps(*head));
  EXPECT_TRUE(view->view(3, {2})->overlaps(*head));

  // Zero-size buffers have an address and overlap nothing.
  auto empty = Buffer::allocate(dev, dtypes::float32, {0, 7});
  EXPECT_NE(empty->host_data(), nullptr);
  empty->copy_in(nullptr, 0);
  EXPECT_FALSE(empty->overlaps(*empty));
  auto scalar = Buffer::allocate(dev, dtypes::uint8, {});
  EXPECT_EQ(scalar->numel(), 1);

  Code code = Code::Ok;
  EXPECT_NE(error_of([&] { view->copy_in(v.data(), 48); }, &code).find("24"), std::string::npos);
  EXPECT_EQ(code, Code::InvalidArg);
  EXPECT_NE(error_of([&] { view->view(4, {3}); }).find("does not fit"), std::string::npos);
  EXPECT_NE(error_of([&] { view->view(-1, {1}); }).find("does not fit"), std::string::npos);
  EXPECT_NE(error_of([&] { Buffer::allocate(dev, dtypes::int8, {2, -1}); }).find("negative"), std::string::npos);
  error_of([&] { Buffer::allocate(dev, dtypes::float64, {2}); }, &code);
  EXPECT_EQ(code, Code::Unsupported);
  error_of([&] { Buffer::allocate(dev, dtypes::index, {2}); }, &code);
  EXPECT_EQ(code, Code::InvalidArg);
  error_of([&] { Buffer::allocate(dev, dtypes::int64, {int64_t(1) << 31, int64_t(1) << 30}); }, &code);
  EXPECT_EQ(code, Code::OutOfMemory);
  // The device lives as long as its buffers.
  std::weak_ptr<ComputeDevice> weak = dev;
  dev.reset();
  EXPECT_FALSE(weak.expired());
  view.reset();
  tail.reset();
  head.reset();
  empty.reset();
  scalar.reset();
  EXPECT_TRUE(weak.expired());
}

// ---- the arena planner --------------------------------------------------------------------------

void expect_valid_plan(const std::vector<size_t>& bytes, const std::vector<int>& first, const std::vector<int>& last,
                       const std::vector<size_t>& off, size_t arena, size_t align) {
  for (size_t i = 0; i < bytes.size(); i++) {
    EXPECT_EQ(off[i] % align, 0u);
    EXPECT_LE(off[i] + bytes[i], arena);
    for (size_t j = 0; j < i; j++) {
      bool live_together = first[i] <= last[j] && first[j] <= last[i];
      bool share = bytes[i] && bytes[j] && off[i] < off[j] + bytes[j] && off[j] < off[i] + bytes[i];
      EXPECT_FALSE(live_together && share) << i << " and " << j;
    }
  }
}

TEST(ArenaPlan, SharesOnlyWhatLifetimesAllow) {
  size_t arena = 0;
  // A chain: t0 (launches 0-1), t1 (1-2), t2 (2-3): t0 and t2 can share.
  std::vector<size_t> bytes{100, 100, 100};
  std::vector<int> first{0, 1, 2}, last{1, 2, 3};
  auto off = plan_arena(bytes, first, last, 64, &arena);
  EXPECT_EQ(arena, 256u);
  EXPECT_EQ(off[0], off[2]);
  expect_valid_plan(bytes, first, last, off, arena, 64);
  // All alive at once: no sharing.
  std::vector<int> f2{0, 0, 0}, l2{3, 3, 3};
  off = plan_arena(bytes, f2, l2, 64, &arena);
  EXPECT_EQ(arena, 3 * 128u);
  expect_valid_plan(bytes, f2, l2, off, arena, 64);
  // Empty input.
  off = plan_arena({}, {}, {}, 64, &arena);
  EXPECT_EQ(arena, 0u);
  // A small buffer fits in a gap left between two large ones.
  std::vector<size_t> b3{1000, 1000, 10};
  std::vector<int> f3{0, 2, 1}, l3{1, 3, 1};
  off = plan_arena(b3, f3, l3, 64, &arena);
  expect_valid_plan(b3, f3, l3, off, arena, 64);
  EXPECT_EQ(arena, 1024u + 64u);
  std::vector<int> short_last{1, 3};
  EXPECT_THROW(plan_arena(b3, f3, short_last, 64, &arena), Error);
}

TEST(ArenaPlan, RandomLifetimesNeverCollide) {
  uint64_t s = 12345;
  auto next = [&] {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  };
  for (int round = 0; round < 200; round++) {
    size_t n = next() % 12;
    std::vector<size_t> bytes;
    std::vector<int> first, last;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
      bytes.push_back(next() % 5000);
      int a = int(next() % 10), b = int(next() % 10);
      first.push_back(std::min(a, b));
      last.push_back(std::max(a, b));
      total += (bytes.back() + 63) / 64 * 64;
    }
    size_t arena = 0;
    auto off = plan_arena(bytes, first, last, 64, &arena);
    expect_valid_plan(bytes, first, last, off, arena, 64);
    EXPECT_LE(arena, total);
  }
}

TEST(Runtime, DebugLevelComesFromOptionsOrEnvironment) {
  Runtime quiet(RuntimeOptions{.debug = 0});
  EXPECT_EQ(quiet.debug(), 0);
  Runtime loud(RuntimeOptions{.debug = 4});
  EXPECT_EQ(loud.debug(), 4);
  loud.set_debug(1);
  EXPECT_EQ(loud.debug(), 1);
  Runtime from_env;
  EXPECT_EQ(from_env.debug(), debug_level_from_env());
}

#if SN_BACKEND_CPU
TEST(Runtime, ProgramsRunConcurrently) {
  using namespace testrt;
  Graph g;
  const UOp* x = input(g, dtypes::float32, {64, 33});
  // softmax over columns stores its reductions: each concurrent run needs its own arena.
  const UOp* y = softmax(g, x, 0);
  auto p = compile_program(runtime(), g, std::vector<const UOp*>{y});
  ASSERT_GT(p->arena_bytes, 0u);
  auto dev = runtime().device("CPU");
  Rng rng(5);
  std::vector<Array> xs;
  for (int t = 0; t < 4; t++) xs.push_back(random_array(rng, dtypes::float32, {64, 33}));
  std::vector<Array> want;
  for (const Array& a : xs) {
    auto in = to_buffer(dev, a);
    auto out = p->allocate_output(0);
    p->run(std::vector<std::shared_ptr<Buffer>>{in}, std::vector<std::shared_ptr<Buffer>>{out});
    want.push_back(from_buffer(*out));
  }
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; t++)
    threads.emplace_back([&, t] {
      auto in = to_buffer(dev, xs[size_t(t)]);
      CommandBuffer cb(p);
      cb.set_input(0, in);
      for (int r = 0; r < 20; r++) {
        auto out = p->allocate_output(0);
        if (r % 2) {
          cb.set_output(0, out);
          cb.run();
        } else {
          p->run(std::vector<std::shared_ptr<Buffer>>{in}, std::vector<std::shared_ptr<Buffer>>{out});
        }
        if (from_buffer(*out).f != want[size_t(t)].f) bad[size_t(t)]++;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
}
#endif

}  // namespace
}  // namespace sn

// ---- TaskQueue (a program's kernels compile while the next ones lower) -----------------------

TEST(TaskQueue, RunsEveryTaskOnceWhileTheCallerKeepsPushing) {
  std::vector<std::atomic<int>> runs(200);
  std::mutex mu;
  std::set<std::thread::id> threads;
  {
    sn::TaskQueue q;
    for (size_t i = 0; i < runs.size(); i++) {
      q.push([&, i] {
        runs[i]++;
        std::lock_guard<std::mutex> lk(mu);
        threads.insert(std::this_thread::get_id());
      });
      if (i % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the caller lowering
    }
    q.finish();
    for (size_t i = 0; i < runs.size(); i++) ASSERT_EQ(runs[i].load(), 1) << "task " << i;
    q.finish();  // a second finish does nothing
  }
  for (size_t i = 0; i < runs.size(); i++) EXPECT_EQ(runs[i].load(), 1) << "task " << i;
  // a helper took tasks (on a machine with more than one core): they ran beside the caller
  threads.erase(std::this_thread::get_id());
  if (std::thread::hardware_concurrency() > 1) {
    EXPECT_GE(threads.size(), 1u);
  }
}

TEST(TaskQueue, TheCostliestTaskWaitingRunsFirst) {
  // Pushed cheapest first, as a program's last small batch is. Each task takes 10 ms, so the
  // threads (t of them) take the tasks in waves of t: the first wave is the t costliest, the next
  // the t costliest of the rest, and so on. Within a wave the threads record their task in any
  // order, so each wave is compared as a set. (Six threads or more take all at once: one wave.)
  std::mutex mu;
  std::vector<double> started;
  std::set<std::thread::id> threads;
  const std::vector<double> costs{1, 5, 3, 5, 2, 4};
  {
    sn::TaskQueue q(/*hold=*/true);
    for (double cost : costs)
      q.push(
          [&, cost] {
            {
              std::lock_guard<std::mutex> lk(mu);
              started.push_back(cost);
              threads.insert(std::this_thread::get_id());
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          },
          cost);
    q.finish();
  }
  ASSERT_EQ(started.size(), costs.size());
  std::vector<double> want = costs;
  std::sort(want.begin(), want.end(), std::greater<double>());
  const size_t t = threads.size();
  for (size_t wave = 0; wave < want.size(); wave += t) {
    const size_t end = std::min(want.size(), wave + t);
    std::vector<double> got(started.begin() + long(wave), started.begin() + long(end));
    std::sort(got.begin(), got.end(), std::greater<double>());
    EXPECT_EQ(got, std::vector<double>(want.begin() + long(wave), want.begin() + long(end)))
        << "wave at " << wave << " of " << t << " threads";
  }
}

TEST(TaskQueue, HeldTasksWaitForFinishAndAreDroppedOnError) {
  std::atomic<int> ran{0};
  {
    sn::TaskQueue q(/*hold=*/true);
    for (int i = 0; i < 8; i++) q.push([&] { ran++; });
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(ran.load(), 0);  // no thread started: BEAM is timing kernels
    q.finish();
    EXPECT_EQ(ran.load(), 8);
  }
  ran = 0;
  {
    sn::TaskQueue q(/*hold=*/true);
    for (int i = 0; i < 8; i++) q.push([&] { ran++; });
  }  // destroyed without finish (the caller threw): what no thread took is dropped
  EXPECT_EQ(ran.load(), 0);
}
