// The spec's Index (gather along the leading axes), Stack and Slice: compiled on every device and
// compared with the oracle; their gradients against finite differences live in test_gradient.cpp.
#include <gtest/gtest.h>

#if SN_BACKEND_CPU
#include "core/tensor/compose.h"
#include "tests/unit/test_pipeline_util.h"

namespace sn {
namespace {

using namespace testrt;
using Dims = std::vector<int64_t>;

struct IndexOpsCase {
  std::string name;
  std::function<std::vector<const UOp*>(Graph&, Rng&, oracle::BufferData&)> build;
};

std::string g_device = "CPU";  // where the cases make their inputs (run_cases sets it)

const UOp* in(Graph& g, Rng& rng, oracle::BufferData& data, DType dt, Dims s, double lo = -3, double hi = 3) {
  const UOp* t = input(g, dt, s, g_device);
  data[buffer_of(t)] = random_array(rng, dt, {numel(s)}, lo, hi);
  return t;
}

std::vector<IndexOpsCase> cases() {
  const DType f32 = dtypes::float32, i32 = dtypes::int32;
  return {
      {"gather rows (embedding lookup), indices out of range read 0",
       [=](Graph& g, Rng& r, oracle::BufferData& d) {
         const UOp* table = in(g, r, d, f32, {6, 5});
         const UOp* ids[] = {in(g, r, d, i32, {9}, -2, 7)};
         return std::vector<const UOp*>{index(g, table, ids)};
       }},
      {"scalar index removes the axis; two indices; trailing axes kept",
       [=](Graph& g, Rng& r, oracle::BufferData& d) {
         const UOp* x = in(g, r, d, f32, {4, 3, 5});
         const UOp* a[] = {in(g, r, d, dtypes::int64, {}, 0, 3)};
         const UOp* b[] = {in(g, r, d, i32, {7}, 0, 3), in(g, r, d, dtypes::uint8, {2}, 0, 2)};
         return std::vector<const UOp*>{index(g, x, a), index(g, x, b)};
       }},
      {"gather of a computed value by computed indices, then reduced",
       [=](Graph& g, Rng& r, oracle::BufferData& d) {
         const UOp* x = in(g, r, d, f32, {8, 16});
         const UOp* y = unary(g, Op::Sin, mul(g, x, constant(g, f32, 3)));
         const UOp* ids[] = {mod(g, mul(g, arange(g, 12, i32), constant(g, i32, 5)), constant(g, i32, 8))};
         const UOp* rows = index(g, y, ids);
         return std::vector<const UOp*>{reduce(g, rows, Op::Add, {1}), add(g, rows, constant(g, f32, 1))};
       }},
      {"stack of inputs and computed values, permuted and reduced",
       [=](Graph& g, Rng& r, oracle::BufferData& d) {
         const UOp* a = in(g, r, d, f32, {3, 4});
         const UOp* b = in(g, r, d, f32, {3, 4});
         const UOp* xs[] = {a, mul(g, a, b), b};
         const UOp* s = stack_leading(g, xs);
         return std::vector<const UOp*>{s, reduce(g, permute(g, s, {1, 2, 0}), Op::Max, {2})};
       }},
      {"stack of int8, one tensor",
       [=](Graph& g, Rng& r, oracle::BufferData& d) {
         const UOp* a[] = {in(g, r, d, dtypes::int8, {5}, -100, 100)};
         return std::vector<const UOp*>{stack_leading(g, a)};
       }},
      {"slices: same dtype, to bytes, bytes to float32, int16 to int64",
       [=](Graph& g, Rng& r, oracle::BufferData& d) {
         const UOp* x = in(g, r, d, f32, {3, 4});
         const UOp* u8 = in(g, r, d, dtypes::uint8, {20}, 0, 255);
         const UOp* i16 = in(g, r, d, dtypes::int16, {16}, -30000, 30000);
         return std::vector<const UOp*>{slice(g, x, 5, 6, f32), slice(g, x, 1, 7, dtypes::uint8),
                                        slice(g, u8, 4, 3, f32), slice(g, i16, 4, 2, dtypes::int64),
                                        add(g, slice(g, x, 2, 4, f32), constant(g, f32, 1))};
       }},
      {"binary: constant bytes, viewed as float32 and int16, gathered",
       [=](Graph& g, Rng& r, oracle::BufferData& d) {
         std::string bytes;
         for (float v : {1.5f, -2.25f, 1e-3f, 7.0f}) bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
         const UOp* data = binary_data(g, bytes);
         const UOp* x = in(g, r, d, f32, {2, 4});
         const UOp* table = bitcast(g, data, f32);
         const UOp* ids[] = {mod(g, arange(g, 6, i32), constant(g, i32, 4))};
         return std::vector<const UOp*>{add(g, x, table), bitcast(g, data, dtypes::int16), index(g, table, ids),
                                        slice(g, data, 4, 2, dtypes::int16), data};
       }},
      {"binary: float32 weights sliced at aligned offsets (one float32 constant buffer)",
       [=](Graph& g, Rng& r, oracle::BufferData& d) {
         std::string bytes;
         for (int k = 0; k < 12; k++) {
           float v = float(k) * 0.75f - 3.0f;
           bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
         }
         const UOp* data = binary_data(g, bytes);
         const UOp* x = in(g, r, d, f32, {2, 3});
         const UOp* w1 = reshape(g, slice(g, data, 0, 6, f32), {2, 3});
         const UOp* w2 = reshape(g, slice(g, data, 24, 6, f32), {2, 3});  // the offset counts bytes
         // bytes 2.. of another copy: not whole floats, so read as bytes and joined
         const UOp* odd = reshape(g, slice(g, binary_data(g, "xy" + bytes), 2, 6, f32), {2, 3});
         return std::vector<const UOp*>{add(g, x, w1), mul(g, w2, x), sub(g, odd, x)};
       }},
  };
}

void run_cases(const std::string& device) {
  g_device = device;
  for (const IndexOpsCase& k : cases()) {
    SCOPED_TRACE(k.name + " on " + device);
    Graph g;
    Rng rng(3);
    oracle::BufferData data;
    std::vector<const UOp*> outs = k.build(g, rng, data);
    expect_matches_oracle(g, outs, data, k.name, -1, -1, {}, device);
  }
}

TEST(IndexOps, MatchTheOracleOnTheCpu) { run_cases("CPU"); }

TEST(IndexOps, MatchTheOracleOnOpenCL) {
  SN_SKIP_WITHOUT_DEVICE("CL", cl_required());
  run_cases("CL");
}

TEST(IndexOps, MatchTheOracleOnCuda) {
  SN_SKIP_WITHOUT_DEVICE("CUDA", cuda_required());
  run_cases("CUDA");
}

TEST(IndexOps, MatchTheOracleOnAmd) {
  SN_SKIP_WITHOUT_DEVICE("AMD", amd_required());
  run_cases("AMD");
}

TEST(IndexOps, BadArgumentsAreClearErrors) {
  Graph g;
  const UOp* x = input(g, dtypes::float32, {2, 3});
  auto msg = [](const std::function<void()>& f) { return testutil::error_of(f); };
  const UOp* f_idx[] = {input(g, dtypes::float32, {2})};
  const UOp* m_idx[] = {input(g, dtypes::int32, {2, 2})};
  const UOp* three[] = {input(g, dtypes::int32, {}), input(g, dtypes::int32, {}), input(g, dtypes::int32, {})};
  EXPECT_NE(msg([&] { index(g, x, f_idx); }).find("integer"), std::string::npos);
  EXPECT_NE(msg([&] { index(g, x, m_idx); }).find("shape () or (n,)"), std::string::npos);
  EXPECT_NE(msg([&] { index(g, x, three); }).find("3 indices for the 2 axes"), std::string::npos);
  const UOp* mixed[] = {x, input(g, dtypes::float32, {3, 2})};
  EXPECT_NE(msg([&] { stack_leading(g, mixed); }).find("shapes must match"), std::string::npos);
  EXPECT_NE(msg([&] { slice(g, x, 4, 3, dtypes::float32); }).find("run past"), std::string::npos);
  EXPECT_EQ(msg([&] { slice(g, x, 0, 3, dtypes::float64); }), "");
}

}  // namespace
}  // namespace sn
#endif
