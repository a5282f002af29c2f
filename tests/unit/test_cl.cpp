// The OpenCL backend and GPU-style codegen on a real device (pocl in CI): forced OptOps (LOCAL,
// GROUP_REDUCE, PADTO, SWAP, NOLOCALS) checked against the oracle, grids with more axes than
// dimensions, reductions across work-groups, buffers between devices, and clear errors.
#include <gtest/gtest.h>

#if SN_BACKEND_CPU && SN_BACKEND_CL
#include "core/codegen/codegen.h"
#include "core/pipeline.h"
#include "core/schedule/schedule.h"
#include "core/tensor/compose.h"
#include "tests/unit/test_pipeline_util.h"

namespace sn {
namespace {

using namespace testrt;

class ClTest : public OracleFixture<77> {
 protected:
  void SetUp() override {
    std::string why;
    if (runtime().devices().count("CL", &why) == 0) {
      if (cl_required()) FAIL() << "no OpenCL device: " << why;
      GTEST_SKIP() << "no OpenCL device: " << why;
    }
  }
  const UOp* cl_in(DType dt, std::vector<int64_t> shape, double lo = -3, double hi = 3) {
    const UOp* t = input(g, dt, shape, "CL");
    data[buffer_of(t)] = random_array(rng, dt, {numel(shape)}, lo, hi);
    return t;
  }
  void check(const std::vector<const UOp*>& outs, const std::string& what, const CompileOptions& o = {}) {
    expect_matches_oracle(g, outs, data, what, -1, -1, o, "CL");
  }
  // The only kernel of `out` lowered for CL with these opts, checked against the oracle when run.
  LoweredKernel lower_only(const UOp* out, std::vector<Opt> opts) {
    std::vector<const UOp*> outs{out};
    Schedule s = schedule_graph(g, outs);
    EXPECT_EQ(s.kernels.size(), 1u);
    LowerOptions lo;
    lo.opts = std::move(opts);
    return lower_kernel(g, s.kernels.at(0).ast, runtime().device("CL")->target(), lo);
  }
};

TEST_F(ClTest, SumsAcrossWorkGroupsThroughLocalMemory) {
  // 100000 elements to 1: GROUP_REDUCE over the reduce axis, padded to a multiple of the group.
  const UOp* x = cl_in(dtypes::float32, {100003});
  const UOp* s = reduce(g, x, Op::Add, {0});
  std::shared_ptr<const Program> p;
  auto got = compile_and_run(g, {s}, data, {}, &p, "CL");
  ASSERT_EQ(p->launches.size(), 1u);
  const KernelFeatures& f = p->launches[0].kernel->features;
  EXPECT_TRUE(f.group_reduce);
  EXPECT_GT(f.local_bytes, 0);
  EXPECT_EQ(f.barriers, 1);
  EXPECT_GT(f.gated_blocks, 0);  // only the first work-item stores
  check({s}, "sum of 100003", {});
  // max and a row-wise group reduce (softmax over long rows: max, sum and the scaled output)
  const UOp* m = reduce(g, x, Op::Max, {0});
  const UOp* rows = cl_in(dtypes::float32, {3, 3001});
  check({m, softmax(g, rows, 1)}, "max and softmax over long rows");
}

TEST_F(ClTest, ForcedOptsReplayOnTheDevice) {
  const UOp* a = cl_in(dtypes::float32, {24, 36});
  const UOp* b = cl_in(dtypes::float32, {36, 20});
  const UOp* mm = gemm(g, a, b);
  // ranges: 0 rows (24), 1 columns (20), 2 the reduce axis (36)
  std::vector<std::vector<Opt>> lists = {
      {Opt::local(1, 4), Opt::local(0, 8), Opt::upcast(0, 3)},
      {Opt::group(2, 4, true), Opt::local(1, 5)},
      {Opt::group(2, 6), Opt::unroll(2, 3), Opt::upcast(1, 2)},
      {Opt::padto(1, 32), Opt::local(1, 32)},
      {Opt::padto(2, 64), Opt::group(2, 16, true)},
      {Opt::swap(0, 1), Opt::local(0, 4)},
      {Opt::nolocals(), Opt::upcast(1, 4), Opt::unroll(2, 4)},
  };
  for (const auto& opts : lists) {
    std::string what;
    for (const Opt& o : opts) what += opt_str(o) + " ";
    LoweredKernel k = lower_only(mm, opts);
    EXPECT_EQ(k.opts, opts) << what;
    // Run exactly these opts: the pipeline takes them through LowerOptions; compile the kernel here
    // and launch it through a program made by the pipeline with the same forced list.
    auto dev = runtime().device("CL");
    auto kernel = dev->compile(k);
    std::vector<std::shared_ptr<Buffer>> bufs{Buffer::allocate(dev, dtypes::float32, {24 * 20}),
                                              to_buffer(dev, data.at(buffer_of(a))),
                                              to_buffer(dev, data.at(buffer_of(b)))};
    std::vector<DevicePtr> ptrs;
    for (auto& buf : bufs) ptrs.push_back(buf->address());
    LaunchSize size;
    for (size_t d = 0; d < 3; d++) {
      size.global[d] = kernel->dims.global[d].eval(nullptr);
      size.local[d] = kernel->dims.local[d];
    }
    dev->launch(*kernel, ptrs, {}, size);
    dev->synchronize();
    Array got = from_buffer(*bufs[0]);
    got.shape = {24, 20};
    Array want = oracle::evaluate(std::vector<const UOp*>{mm}, data).at(0);
    EXPECT_EQ(mismatch(got, want, 2e-5, 2e-5), "") << what;
  }
}

// The heuristic's matmul on a GPU: its N axis (the innermost, contiguous in B and C) is the
// work-group's dimension 0, so a warp's loads and stores are contiguous, and each work-item's N
// copies are a work-group apart (UPCAST after LOCAL; how many depends on the device's compute
// units: Opts.GpuTilesShrinkToFillTheMultiprocessors).
TEST_F(ClTest, AMatmulsInnermostAxisIsTheWorkGroupsFirstDimension) {
  const UOp* a = cl_in(dtypes::float32, {128, 64});
  const UOp* b = cl_in(dtypes::float32, {64, 256});
  const UOp* mm = gemm(g, a, b);
  std::shared_ptr<const Program> p;
  compile_and_run(g, {mm}, data, {}, &p, "CL");
  const DeviceKernel& k = *p->launches.back().kernel;
  // ranges: 0 rows (128), 1 columns (256), 2 the reduce axis (64)
  std::string opts = opts_str(k.opts);
  EXPECT_NE(opts.find("LOCAL(0,4) LOCAL(1,32) UPCAST(1,"), std::string::npos) << opts;
  EXPECT_EQ(k.dims.local[0], 32) << opts;
  EXPECT_EQ(k.dims.local[1], 4) << opts;
  check({mm}, "128x64 @ 64x256 with the heuristic's opts");
}

// A convolution whose weights are finite constants skips its filter rows below the image on a GPU
// too (lower_reduces gates the step's update by the rows' condition, the linearizer moves the
// step's loads and multiply-adds into the If block), with the oracle's results: with 16 output
// channels its padded input is a gated scalar per tap; with 8, the taps are lanes of one load
// whose gate has a condition per lane (the row's, the same in each, and the column's).
TEST_F(ClTest, AConvolutionSkipsItsPaddedFilterRows) {
  for (int64_t co : {16, 8}) {
    Rng weights(12);
    std::vector<float> wv(size_t(co * 8 * 3 * 3));
    for (float& v : wv) v = float(weights.uniform(-1, 1));
    std::string bytes(reinterpret_cast<const char*>(wv.data()), wv.size() * sizeof(float));
    const UOp* w =
        reshape(g, slice(g, binary_data(g, std::move(bytes)), 0, int64_t(wv.size()), dtypes::float32), {co, 8, 3, 3});
    const UOp* conv = conv2d(g, cl_in(dtypes::float32, {1, 8, 7, 7}), w, nullptr, {1, 1}, {1, 1});
    CompileOptions o;
    o.keep_stages = true;
    std::shared_ptr<const Program> p;
    compile_and_run(g, {conv}, data, o, &p, "CL");
    const MulaccCount n = count_mulaccs(p->stage_text("linear"));
    EXPECT_GT(n.all, 0u) << co;
    EXPECT_EQ(n.gated, n.all) << co;
    check({conv}, "conv2d 8->" + std::to_string(co) + " 3x3 pad 1 at 7x7 with finite constant weights");
  }
}

TEST_F(ClTest, GridsWithMoreAxesThanDimensions) {
  // Five output axes: the outer three share grid dimension 2.
  const UOp* x = cl_in(dtypes::int32, {3, 5, 2, 7, 6}, -100, 100);
  const UOp* y = cl_in(dtypes::int32, {5, 1, 7, 1}, -100, 100);
  const UOp* z = add(g, mul(g, x, y), constant(g, dtypes::int32, 3));
  CompileOptions no_opt;
  no_opt.optimize = false;  // every axis stays GLOBAL
  check({z}, "5-D elementwise, unoptimized", no_opt);
  check({z}, "5-D elementwise");
}

TEST_F(ClTest, EveryDtypeRoundTripsThroughTheDevice) {
  for (DType dt : {dtypes::bool_, dtypes::int8, dtypes::uint8, dtypes::int16, dtypes::uint16, dtypes::int32,
                   dtypes::uint32, dtypes::int64, dtypes::uint64, dtypes::float16, dtypes::bfloat16, dtypes::float32,
                   dtypes::float64, dtypes::fp8e4m3, dtypes::fp8e5m2}) {
    const UOp* x = cl_in(dt, {37}, -20, 20);
    const UOp* y = cast(g, x, dt.is_float() ? dtypes::float32 : dtypes::int64);
    check({x, y, reduce(g, x, dt.is_bool() ? Op::Max : Op::Add, {0})}, "dtype " + dt.name());
  }
}

TEST_F(ClTest, BuffersMoveBetweenDevices) {
  auto cl = runtime().device("CL");
  auto cpu = runtime().device("CPU");
  std::vector<float> v{1.5f, -2, 3, 4.25f, 5, 6};
  auto a = Buffer::allocate(cpu, dtypes::float32, {6});
  a->copy_in(v.data(), v.size() * 4);
  auto b = Buffer::allocate(cl, dtypes::float32, {2, 3});
  copy_buffer(*b, *a);  // CPU -> CL
  auto c = Buffer::allocate(cl, dtypes::float32, {6});
  copy_buffer(*c, *b);  // CL -> CL
  auto view = c->view(2, {3});
  auto d = Buffer::allocate(cpu, dtypes::float32, {3});
  copy_buffer(*d, *view);  // a CL view -> CPU
  std::vector<float> out(3);
  d->copy_out(out.data(), 12);
  EXPECT_EQ(out, (std::vector<float>{3, 4.25f, 5}));
  EXPECT_EQ(b->host_data(), nullptr);  // device memory
  Code code = Code::Ok;
  testutil::error_of([&] { copy_buffer(*d, *b); }, &code);  // 3 elements from 6
  EXPECT_EQ(code, Code::InvalidArg);
  // A program's inputs in views at an offset (the kernels take a byte offset per buffer).
  const UOp* x = input(g, dtypes::float32, {3}, "CL");
  auto p = compile_program(runtime(), g, std::vector<const UOp*>{mul(g, x, x)}, cl);
  auto out_buf = p->allocate_output(0);
  p->run(std::vector<std::shared_ptr<Buffer>>{view}, std::vector<std::shared_ptr<Buffer>>{out_buf});
  out_buf->copy_out(out.data(), 12);
  EXPECT_EQ(out, (std::vector<float>{9, 4.25f * 4.25f, 25}));
}

TEST_F(ClTest, ErrorsNameTheDeviceAndTheReason) {
  Code code = Code::Ok;
  std::string msg = testutil::error_of([&] { runtime().device("CL:57"); }, &code);
  EXPECT_EQ(code, Code::Device);
  EXPECT_NE(msg.find("OpenCL devices"), std::string::npos) << msg;
  // A buffer of one device is not an input of a program of another.
  const UOp* x = input(g, dtypes::float32, {4}, "CL");
  auto p = compile_program(runtime(), g, std::vector<const UOp*>{add(g, x, x)}, runtime().device("CL"));
  auto cpu_buf = Buffer::allocate(runtime().device("CPU"), dtypes::float32, {4});
  msg = testutil::error_of([&] {
    p->run(std::vector<std::shared_ptr<Buffer>>{cpu_buf}, std::vector<std::shared_ptr<Buffer>>{p->allocate_output(0)});
  });
  EXPECT_NE(msg.find("the buffer is on CPU"), std::string::npos) << msg;
  // Inputs placed on the CPU do not compile for CL.
  Graph g2;
  const UOp* y = input(g2, dtypes::float32, {4}, "CPU");
  msg = testutil::error_of(
      [&] { compile_program(runtime(), g2, std::vector<const UOp*>{add(g2, y, y)}, runtime().device("CL")); }, &code);
  EXPECT_EQ(code, Code::Device);
}

}  // namespace
}  // namespace sn
#endif
