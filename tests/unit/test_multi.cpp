// Multi-device programs (core/tensor/multi.h, core/multi.h) on CPU:0 .. CPU:3: shard and Copy, every
// collective of the spec, elementwise ops and reductions on sharded tensors, and a sharded MLP step
// with its gradient, each compiled, run and compared with the oracle and with values computed here;
// plus the builders' argument errors.
#include <gtest/gtest.h>

#if SN_BACKEND_CPU
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/multi.h"
#include "core/tensor/compose.h"
#include "core/tensor/gradient.h"
#include "core/tensor/multi.h"
#include "core/tensor/tensor.h"
#include "tests/unit/test_pipeline_util.h"
#include "tests/util/test_helpers.h"

namespace sn {
namespace {

using testutil::expect_invalid;
using Dims = std::vector<int64_t>;
using Vals = std::vector<double>;
using oracle::Array;

const Device kTwo{{"CPU", "CPU:1"}, true};
const Device kFour{{"CPU", "CPU:1", "CPU:2", "CPU:3"}, true};

class MultiTest : public ::testing::Test {
 protected:
  Graph g;
  oracle::BufferData data;
  std::mt19937 rng{7};

  const UOp* in(const Dims& shape, Vals values = {}) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    if (values.empty()) {
      std::uniform_int_distribution<int> u(-8, 8);
      for (int64_t k = 0; k < n; k++) values.push_back(u(rng) * 0.25);
    }
    const UOp* t = input(g, dtypes::float32, shape);
    data[buffer_of(t)] = Array::from_doubles(dtypes::float32, {n}, values);
    return t;
  }
  // Compiled and run values of `out`; also checked against the oracle.
  Vals run(const UOp* out, std::shared_ptr<const Program>* prog = nullptr) {
    std::vector<Array> got = testrt::compile_and_run(g, {out}, data, {}, prog);
    std::vector<Array> want = oracle::evaluate(std::vector<const UOp*>{out}, data);
    EXPECT_EQ(got[0].shape, want[0].shape);
    EXPECT_EQ(testrt::mismatch(got[0], want[0], 1e-5, 1e-5), "");
    Vals v;
    for (size_t k = 0; k < got[0].numel(); k++) v.push_back(got[0].value_at(k));
    return v;
  }
};

TEST_F(MultiTest, DevicesAreSeparate) {
  auto& rt = testrt::runtime();
  auto c0 = rt.device("CPU:0"), c1 = rt.device("CPU:1"), c7 = rt.device("cpu:7");
  EXPECT_EQ(c0, rt.device("CPU"));
  EXPECT_NE(c0, c1);
  EXPECT_EQ(c1->name(), "CPU:1");
  EXPECT_EQ(c7->name(), "CPU:7");
  EXPECT_EQ(rt.devices().count("CPU"), 8);
  try {
    rt.device("CPU:8");
    ADD_FAILURE() << "CPU:8 opened";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("CPU:8"), std::string::npos) << e.message();
  }
}

TEST_F(MultiTest, ShardElementwiseGather) {
  const UOp* x = in({4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  const UOp* s = shard(g, x, kTwo, 0);
  EXPECT_EQ(s->axis(), 0);
  EXPECT_TRUE(s->device().tuple);
  const UOp* y = add(g, mul(g, s, s), constant(g, dtypes::float32, 1));
  std::shared_ptr<const Program> p;
  Vals v = run(to_device(g, y, Device{{"CPU"}, false}), &p);
  ASSERT_TRUE(p->multi);
  EXPECT_EQ(v, (Vals{1, 2, 5, 10, 17, 26, 37, 50, 65, 82, 101, 122}));
  // a step on each device (they run in parallel once their inputs are there)
  std::set<std::string> devices;
  for (const auto& w : p->multi->waves)
    for (const auto& st : w.steps) devices.insert(st.program->device->name());
  EXPECT_EQ(devices, (std::set<std::string>{"CPU", "CPU:1"}));
}

TEST_F(MultiTest, ShardOtherAxisAndReduce) {
  const UOp* x = in({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  const UOp* s = shard(g, x, kTwo, 1);
  EXPECT_EQ(s->axis(), 1);
  // a reduce over another axis stays sharded; over the shard axis: partial sums + copies + sum
  EXPECT_EQ(run(reduce(g, s, Op::Add, {0})), (Vals{12, 15, 18, 21}));
  const UOp* rows = reduce(g, s, Op::Add, {1});
  EXPECT_EQ(rows->axis(), -1);
  EXPECT_EQ(run(rows), (Vals{6, 22, 38}));
  EXPECT_EQ(run(reduce(g, s, Op::Max, {0, 1})), (Vals{11}));
}

TEST_F(MultiTest, Collectives) {
  Vals xs{1, 2, 3, 4, 5, 6, 7, 8};
  const UOp* x = in({8}, xs);
  // broadcast: every device holds x; read back from the program's device
  const UOp* b = broadcast(g, x, kFour);
  EXPECT_EQ(b->axis(), -1);
  EXPECT_EQ(static_shape(b), (Dims{8}));
  EXPECT_EQ(run(b), xs);
  // broadcast then a per-device computation that reduces over devices: 4 copies summed
  const UOp* s = scatter(g, x, kFour);
  EXPECT_EQ(s->axis(), 0);
  EXPECT_EQ(run(gather(g, s)), xs);
  EXPECT_EQ(run(reduce_devices(g, s)), (Vals{1 + 3 + 5 + 7, 2 + 4 + 6 + 8}));
  EXPECT_EQ(run(allgather(g, s)), xs);
}

TEST_F(MultiTest, ReduceScatterAndAllreduce) {
  // each of 2 devices holds 4 values: (1,2,3,4) and (10,20,30,40)
  const UOp* x = in({8}, {1, 2, 3, 4, 10, 20, 30, 40});
  const UOp* s = shard(g, x, kTwo, 0);
  const UOp* rs = reduce_scatter(g, s);
  EXPECT_EQ(rs->axis(), 0);
  EXPECT_EQ(static_shape(rs), (Dims{4}));
  EXPECT_EQ(run(rs), (Vals{11, 22, 33, 44}));
  const UOp* ar = allreduce(g, s);
  EXPECT_EQ(ar->axis(), -1);
  EXPECT_EQ(run(ar), (Vals{11, 22, 33, 44}));
  // with trailing axes and four devices
  const UOp* y = in({16, 3});
  const UOp* ys = shard(g, y, kFour, 0);
  Vals yv = run(y), want(12, 0.0);
  for (size_t d = 0; d < 4; d++)
    for (size_t k = 0; k < 12; k++) want[k] += yv[d * 12 + k];
  EXPECT_EQ(run(allreduce(g, ys)), want);
}

TEST_F(MultiTest, ReplicatedWeightsShardedBatch) {
  // a linear layer and a mean loss over a batch sharded on two devices, and the weight's gradient
  const UOp* x = in({8, 4});
  const UOp* w = in({4, 3});
  const UOp* xs = shard(g, x, kTwo, 0);
  const UOp* wr = broadcast(g, w, kTwo);
  const UOp* h = relu(g, matmul(g, xs, wr));
  const UOp* loss = reduce(g, mul(g, h, h), Op::Add, {0, 1});
  const UOp* dw = gradient(g, loss, std::vector<const UOp*>{wr})[0];
  EXPECT_EQ(dw->axis(), -1);
  std::vector<Array> got = testrt::compile_and_run(g, {loss, dw}, data);
  std::vector<Array> want = oracle::evaluate(std::vector<const UOp*>{loss, dw}, data);
  EXPECT_EQ(testrt::mismatch(got[0], want[0], 1e-5, 1e-5), "");
  EXPECT_EQ(testrt::mismatch(got[1], want[1], 1e-5, 1e-5), "");
  // the same on one device
  Graph g1;
  const UOp* x1 = input(g1, dtypes::float32, {8, 4});
  const UOp* w1 = input(g1, dtypes::float32, {4, 3});
  const UOp* h1 = relu(g1, matmul(g1, x1, w1));
  const UOp* l1 = reduce(g1, mul(g1, h1, h1), Op::Add, {0, 1});
  const UOp* d1 = gradient(g1, l1, std::vector<const UOp*>{w1})[0];
  oracle::BufferData data1{{buffer_of(x1), data.at(buffer_of(x))}, {buffer_of(w1), data.at(buffer_of(w))}};
  std::vector<Array> one = testrt::compile_and_run(g1, {l1, d1}, data1);
  EXPECT_EQ(testrt::mismatch(got[0], one[0], 1e-5, 1e-5), "");
  EXPECT_EQ(testrt::mismatch(got[1], one[1], 1e-5, 1e-5), "");
}

TEST_F(MultiTest, CopyBetweenSingleDevices) {
  const UOp* x = in({5}, {1, 2, 3, 4, 5});
  const UOp* y = to_device(g, mul(g, x, x), Device{{"CPU:2"}, false});
  const UOp* z = add(g, to_device(g, add(g, y, y), Device{{"CPU"}, false}), x);
  EXPECT_EQ(run(z), (Vals{3, 10, 21, 36, 55}));
}

TEST_F(MultiTest, ReshardAndMovement) {
  const UOp* x = in({4, 6});
  Vals xv = run(x);
  const Device other{{"CPU:2", "CPU:3"}, true};
  // sharded on axis 0 of (CPU, CPU:1), copied to (CPU:2, CPU:3), and back
  const UOp* s = shard(g, x, kTwo, 0);
  EXPECT_EQ(run(to_device(g, to_device(g, s, other), Device{{"CPU"}, false})), xv);
  // sharded on axis 1, resharded on axis 0 (each device sends its piece of each block)
  EXPECT_EQ(run(to_device(g, to_device(g, shard(g, x, kTwo, 1), kFour), Device{{"CPU:1"}, false})), xv);
  // replicated, resharded on axis 0
  EXPECT_EQ(run(to_device(g, to_device(g, broadcast(g, x, kTwo), kTwo), Device{{"CPU"}, false})), xv);
  // movement ops that keep the blocks whole run block-wise; the result is gathered
  const UOp* t = shard(g, x, kTwo, 1);
  const UOp* moved = permute(g, pad(g, reshape(g, t, {4, 2, 3}), {1, 0, 0}, {5, 2, 3}), {2, 0, 1});
  EXPECT_EQ(moved->axis(), 2);
  run(moved);  // checked against the oracle
  run(shrink(g, flip(g, t, {1, 0}), {1, 0}, {2, 6}));
  // a replicated operand is cut to the block a device needs
  run(add(g, t, broadcast(g, in({4, 6}), kTwo)));
  // ops that would split a block are refused, naming the op
  std::vector<const UOp*> bad{reshape(g, t, {24})};
  try {
    compile_program(testrt::runtime(), g, bad);
    ADD_FAILURE() << "reshape across the shard boundary compiled";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("splits the devices' blocks"), std::string::npos) << e.message();
  }
  bad = {shrink(g, t, {0, 1}, {4, 4})};
  try {
    compile_program(testrt::runtime(), g, bad);
    ADD_FAILURE() << "shrink of the shard axis compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::Unsupported);
    EXPECT_NE(e.message().find("Shrink along the shard axis 1"), std::string::npos) << e.message();
  }
}

TEST_F(MultiTest, BadArguments) {
  const UOp* x = in({6, 4});
  expect_invalid([&] { shard(g, x, kFour, 0); }, {"shard", "axis 0", "6", "4 devices"});
  expect_invalid([&] { shard(g, x, kTwo, 2); }, {"shard", "axis 2", "out of range"});
  expect_invalid([&] { shard(g, x, Device{{"CPU"}, false}, 0); }, {"shard", "n-tuple"});
  expect_invalid([&] { shard(g, shard(g, x, kTwo, 0), kTwo, 1); }, {"shard", "already", "axis 0"});
  expect_invalid([&] { parse_device_names("CPU:1,cpu:1", "shard"); }, {"shard", "listed twice"});
  expect_invalid([&] { parse_device_names("CPU:1,", "to"); }, {"to", "empty or malformed"});
  EXPECT_EQ(parse_device_names("(CPU:0, CPU:1)", "d"), kTwo);
  EXPECT_EQ(parse_device_names("CPU:0,CPU:1", "d"), kTwo);
  expect_invalid([&] { allreduce(g, x); }, {"allreduce", "sharded"});
  expect_invalid([&] { gather(g, shard(g, x, kTwo, 1)); }, {"gather", "axis 0", "axis 1"});
  expect_invalid([&] { reduce_scatter(g, shard(g, in({6}), kTwo, 0)); }, {"reduce_scatter", "3 rows"});
  // operands on different devices
  const UOp* y = in({6, 4});
  expect_invalid(
      [&] {
        std::vector<const UOp*> outs{add(g, shard(g, x, kTwo, 0), y)};
        compile_program(testrt::runtime(), g, outs);
      },
      {"Add", "operands are on", "CPU:1"});
  // A node other than an input that names an n-tuple device of its own (a kernel's Param through the
  // C API; libFuzzer found compile recursing on it until the stack overflowed).
  const UOp* param = g.make(Op::Param, dtypes::float32, {g.make(Op::Stack, dtypes::index, {})}, ParamArg{0, kTwo});
  expect_invalid(
      [&] {
        std::vector<const UOp*> outs{param};
        compile_program(testrt::runtime(), g, outs);
      },
      {"Param", "n-tuple device", "(CPU,CPU:1)"});
}

}  // namespace
}  // namespace sn
#endif
