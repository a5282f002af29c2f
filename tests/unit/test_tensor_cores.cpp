// Tensor cores: the fragment layouts of every TensorCoreShape (each matrix element held by the
// lanes the instruction expects), the TC opt's rules, and tensor-core kernels run for real against
// the oracle. No GPU here: the kernels run on OpenCL (pocl) with the Wmma emulated through local
// memory (core/codegen/tensor_cores.cpp), for every layout of the spec's targets (NVIDIA mma.sync
// m16n8k16, AMD MFMA 16x16x16 on 64 lanes, AMD WMMA 16x16x16 with its repeated halves), so the TC
// opt's fragments, the accumulation through C, upcast tiles and several warps per work-group are
// checked end to end. The native instructions are checked by ptxas and llvm-readobj
// (test_gpu_targets.cpp).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <set>

#include "core/codegen/target.h"
#include "core/ir/opt_op.h"

#if SN_BACKEND_CPU && SN_BACKEND_CL
#include "core/codegen/codegen.h"
#include "core/opt/opt.h"
#include "core/pipeline.h"
#include "core/schedule/schedule.h"
#include "core/tensor/compose.h"
#include "tests/unit/test_pipeline_util.h"
#endif

namespace sn {
namespace {

std::vector<TensorCoreShape> every_shape() {
  std::vector<TensorCoreShape> all = nvidia_tensor_cores(80);
  for (const char* gfx : {"gfx942", "gfx1100"})
    for (const TensorCoreShape& tc : amd_tensor_cores(gfx)) all.push_back(tc);
  return all;
}

TEST(TensorCores, EveryTargetListsItsShapes) {
  EXPECT_TRUE(nvidia_tensor_cores(75).empty());
  EXPECT_EQ(nvidia_tensor_cores(80).size(), 2u);
  EXPECT_EQ(nvidia_tensor_cores(90).size(), 2u);
  EXPECT_EQ(amd_tensor_cores("gfx908").size(), 1u);  // no bf16_1k MFMA before gfx90a
  EXPECT_EQ(amd_tensor_cores("gfx90a").size(), 2u);
  EXPECT_EQ(amd_tensor_cores("gfx1100").size(), 2u);
  EXPECT_TRUE(amd_tensor_cores("gfx1030").empty());
  for (const TensorCoreShape& tc : every_shape()) {
    Target t;
    t.tensor_cores = {tc};
    EXPECT_EQ(t.tensor_core(tc.name), &t.tensor_cores[0]);
  }
}

// Every element of A (m x k), B (k x n) and C (m x n) is held by the same number of (lane, element)
// pairs, and no pair points outside its matrix: each layout is a tiling of its matrix.
TEST(TensorCores, FragmentLayoutsTileTheirMatrices) {
  for (const TensorCoreShape& tc : every_shape()) {
    struct Operand {
      const char* name;
      int elems, rows, cols;
      const TcCoord &row, &col;
    };
    for (const Operand& o : {Operand{"A", tc.a_elems, tc.m, tc.k, tc.a_row, tc.a_col},
                             Operand{"B", tc.b_elems, tc.k, tc.n, tc.b_row, tc.b_col},
                             Operand{"C", tc.c_elems, tc.m, tc.n, tc.c_row, tc.c_col}}) {
      std::map<std::pair<int64_t, int64_t>, int> held;
      for (int64_t lane = 0; lane < tc.threads; lane++)
        for (int64_t e = 0; e < o.elems; e++) {
          int64_t r = tc_coord(o.row, lane, e), c = tc_coord(o.col, lane, e);
          ASSERT_TRUE(r >= 0 && r < o.rows && c >= 0 && c < o.cols)
              << tc.name << " " << o.name << " lane " << lane << " element " << e << " at (" << r << ", " << c << ")";
          held[{r, c}]++;
        }
      ASSERT_EQ(int64_t(held.size()), int64_t(o.rows) * o.cols) << tc.name << " " << o.name;
      const int copies = tc.threads * o.elems / (o.rows * o.cols);
      EXPECT_EQ(copies * o.rows * o.cols, tc.threads * o.elems) << tc.name << " " << o.name;
      for (const auto& [at, n] : held) EXPECT_EQ(n, copies) << tc.name << " " << o.name;
    }
  }
}

// Spot checks against the vendors' documents: PTX ISA "mma.m16n8k16" fragment figures (lane 5 is
// groupID 1, threadID_in_group 1) and the RDNA3 WMMA guide (C element e of lane l at row 2e + l/16).
TEST(TensorCores, LayoutsMatchTheVendorsFigures) {
  TensorCoreShape mma = nvidia_tensor_cores(80)[0];
  EXPECT_EQ(tc_coord(mma.a_row, 5, 0), 1);  // a0: (groupID, 2 * tig)
  EXPECT_EQ(tc_coord(mma.a_col, 5, 0), 2);
  EXPECT_EQ(tc_coord(mma.a_row, 5, 3), 9);  // a3: (groupID + 8, 2 * tig + 1)
  EXPECT_EQ(tc_coord(mma.a_col, 5, 3), 3);
  EXPECT_EQ(tc_coord(mma.a_row, 5, 6), 9);  // a6: (groupID + 8, 2 * tig + 8)
  EXPECT_EQ(tc_coord(mma.a_col, 5, 6), 10);
  EXPECT_EQ(tc_coord(mma.b_row, 5, 3), 11);  // b3: (2 * tig + 9, groupID)
  EXPECT_EQ(tc_coord(mma.b_col, 5, 3), 1);
  EXPECT_EQ(tc_coord(mma.c_row, 5, 2), 9);  // c2: (groupID + 8, 2 * tig)
  EXPECT_EQ(tc_coord(mma.c_col, 5, 2), 2);
  TensorCoreShape wmma = amd_tensor_cores("gfx1100")[0];
  EXPECT_EQ(tc_coord(wmma.c_row, 17, 3), 7);
  EXPECT_EQ(tc_coord(wmma.c_col, 17, 3), 1);
  EXPECT_EQ(tc_coord(wmma.a_row, 17, 5), 1);  // lanes 16-31 repeat lanes 0-15
  TensorCoreShape mfma = amd_tensor_cores("gfx942")[0];
  EXPECT_EQ(tc_coord(mfma.a_col, 37, 1), 9);  // block 2: k = 8 + e
  EXPECT_EQ(tc_coord(mfma.c_row, 37, 1), 9);
  EXPECT_EQ(tc_coord(mfma.c_col, 37, 1), 5);
}

TEST(TensorCores, TcOptPrintsAndParses) {
  Opt o;
  ASSERT_TRUE(parse_opt("TC(2,1)", &o));
  EXPECT_EQ(o, Opt::tc(2, 1));
  EXPECT_EQ(opt_str(o), "TC(2,1)");
  ASSERT_TRUE(parse_opt("TC(2,1,pad)", &o));
  EXPECT_EQ(o, Opt::tc(2, 1, true));
  EXPECT_EQ(opt_str(o), "TC(2,1,pad)");
  EXPECT_FALSE(parse_opt("TC(2,1,top)", &o));
}

#if SN_BACKEND_CPU && SN_BACKEND_CL
using namespace testrt;

// The CL device with tensor cores that it emulates: compiles through CL, runs on CL.
class EmulatedTensorCores : public ComputeDevice {
 public:
  EmulatedTensorCores(std::shared_ptr<ComputeDevice> base, std::vector<TensorCoreShape> shapes)
      : ComputeDevice(base->name(), with_shapes(base->target(), std::move(shapes))), base_(std::move(base)) {}

  // The base device's memory, as this device's (programs check that their buffers are theirs).
  std::shared_ptr<Storage> allocate(size_t bytes) override {
    std::shared_ptr<Storage> s = base_->allocate(bytes);
    return std::make_shared<Storage>(shared_from_this(), s->ptr(), s->bytes(), [s](void*) {});
  }
  void copy_in(Storage& dst, size_t offset, const void* src, size_t bytes) override {
    base_->copy_in(dst, offset, src, bytes);
  }
  void copy_out(const Storage& src, size_t offset, void* dst, size_t bytes) override {
    base_->copy_out(src, offset, dst, bytes);
  }
  std::shared_ptr<const DeviceKernel> find(uint64_t key) const override { return base_->find(key); }
  std::shared_ptr<const DeviceKernel> compile(const LoweredKernel& k) override { return base_->compile(k); }
  void launch(const DeviceKernel& k, std::span<const DevicePtr> bufs, std::span<const int64_t> vars,
              const LaunchSize& size) override {
    base_->launch(k, bufs, vars, size);
  }
  void synchronize() override { base_->synchronize(); }
  Stats stats() const override { return base_->stats(); }

 private:
  static Target with_shapes(Target t, std::vector<TensorCoreShape> shapes) {
    for (auto& s : shapes) s.emulated = true;
    t.tensor_cores = std::move(shapes);
    return t;
  }
  std::shared_ptr<ComputeDevice> base_;
};

class TensorCoreKernels : public OracleFixture<1661> {
 protected:
  void SetUp() override {
    SN_SKIP_WITHOUT_DEVICE("CL", cl_required());
    dev = std::make_shared<EmulatedTensorCores>(runtime().device("CL"), every_shape());
  }
  const UOp* cl_in(DType dt, std::vector<int64_t> shape) {
    const UOp* t = input(g, dt, shape, "CL");
    data[buffer_of(t)] = random_array(rng, dt, {numel(shape)}, -2, 2);
    return t;
  }
  // Index of the tensor core called `name` on the device.
  int64_t shape_index(const std::string& name) const {
    const auto& all = dev->target().tensor_cores;
    for (size_t i = 0; i < all.size(); i++)
      if (all[i].name == name) return int64_t(i);
    ADD_FAILURE() << "no tensor core " << name;
    return 0;
  }
  // The kernel of `out` that reduces (a large matmul's B may be repacked by a kernel before it).
  const UOp* matmul_ast(const UOp* out) {
    std::vector<const UOp*> outs{out};
    Schedule s = schedule_graph(g, outs);
    for (const auto& k : s.kernels)
      for (const UOp* u : toposort(k.ast))
        if (u->op == Op::Reduce) return k.ast;
    ADD_FAILURE() << "no kernel reduces";
    return nullptr;
  }
  // The reduce axis of that kernel (the TC opt's axis).
  int64_t reduce_axis(const UOp* out) {
    std::vector<const UOp*> loops, reduces;
    if (const UOp* ast = matmul_ast(out)) classify_ranges(ast, &loops, &reduces);
    EXPECT_FALSE(reduces.empty());
    return reduces.empty() ? -1 : reduces.back()->as<RangeArg>().id;
  }
  // Compiles `out` for the device (forced opts when given), runs it, and compares with the oracle;
  // returns the opts of its kernel that has a TC opt (none: empty).
  std::vector<Opt> check(const UOp* out, const std::string& what, const std::vector<Opt>* opts = nullptr,
                         double rtol = -1, double atol = -1) {
    CompileOptions o;
    std::vector<const UOp*> bufs;
    for (const auto& [buf, arr] : data) bufs.push_back(buf);
    std::sort(bufs.begin(), bufs.end(),
              [](const UOp* a, const UOp* b) { return a->as<BufferArg>().id < b->as<BufferArg>().id; });
    o.inputs = bufs;
    std::shared_ptr<const Program> p;
    try {
      p = compile_program(runtime(), g, std::vector<const UOp*>{out}, dev, o);
      if (opts) {                            // the kernel's identity from the heuristic's program, then its forced opts
        for (const Launch& l : p->launches)  // the kernel that reduces
          if (std::string_view(l.kernel->name).substr(0, 1) == "r") o.kernel_opts[l.ast_hash] = *opts;
        p = compile_program(runtime(), g, std::vector<const UOp*>{out}, dev, o);
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": " << e.what();
      return {};
    }
    std::vector<std::shared_ptr<Buffer>> ins;
    for (size_t i = 0; i < p->inputs.size(); i++) {
      Array a = data.at(o.inputs[i]);
      a.shape = p->inputs[i].shape;
      ins.push_back(to_buffer(dev, a));
    }
    std::vector<std::shared_ptr<Buffer>> outs{p->allocate_output(0)};
    p->run(ins, outs);
    Array got = from_buffer(*outs[0]);
    Array want = oracle::evaluate(std::vector<const UOp*>{out}, data).at(0);
    double rt = rtol >= 0 ? rtol : default_rtol(want.dtype);
    EXPECT_EQ(mismatch(got, want, rt, atol >= 0 ? atol : rt), "") << what;
    for (const Launch& l : p->launches)
      for (const Opt& x : l.kernel->opts)
        if (x.op == OptOp::TC) return l.kernel->opts;
    return {};
  }
  std::shared_ptr<ComputeDevice> dev;
};

// The heuristic picks the first tensor core of the input type (NVIDIA's mma here), for a plain
// half matmul, one with a float32 output through casts and one with a bias and relu after it.
TEST_F(TensorCoreKernels, HeuristicMatmulsMatchTheOracle) {
  const UOp* a = cl_in(dtypes::float16, {32, 48});
  const UOp* b = cl_in(dtypes::float16, {48, 24});
  std::vector<Opt> got = check(matmul(g, a, b), "f16 32x48 @ 48x24");
  ASSERT_FALSE(got.empty()) << "no TC opt";
  EXPECT_EQ(got[0], Opt::tc(got[0].axis, shape_index("m16n8k16_f16_f32"))) << opts_str(got);

  const UOp* wide = matmul(g, cast(g, a, dtypes::float32), cast(g, b, dtypes::float32));
  EXPECT_FALSE(check(wide, "f16 inputs, f32 matmul").empty());

  const UOp* x = cl_in(dtypes::bfloat16, {64, 32});
  const UOp* w = cl_in(dtypes::bfloat16, {32, 16});
  const UOp* bias = cl_in(dtypes::bfloat16, {16});
  const UOp* y = relu(g, binary(g, Op::Add, matmul(g, x, w), bias));
  got = check(y, "bf16 relu(x @ w + bias)");
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got[0].amount, shape_index("m16n8k16_bf16_f32"));
}

// Every layout, forced: TC alone, with upcast tiles (several Wmmas per warp, chained through C),
// and with several warps per work-group (LOCAL after TC); a batched matmul.
TEST_F(TensorCoreKernels, EveryLayoutMatchesTheOracle) {
  for (const char* name : {"m16n8k16_f16_f32", "m16n8k16_bf16_f32", "mfma_16x16x16_f16_f32", "mfma_16x16x16_bf16_f32",
                           "wmma_16x16x16_f16_f32", "wmma_16x16x16_bf16_f32"}) {
    int64_t t = shape_index(name);
    DType in = dev->target().tensor_cores[size_t(t)].in == Scalar::Float16 ? dtypes::float16 : dtypes::bfloat16;
    const UOp* a = cl_in(in, {64, 32});
    const UOp* b = cl_in(in, {32, 32});
    const UOp* c = matmul(g, a, b);
    int64_t k = reduce_axis(c);
    // After TC(k): M (axis 0) and N (axis 1) keep their ids for 64/16 = 4 and 32/n tiles.
    for (const std::vector<Opt>& opts :
         {std::vector<Opt>{Opt::tc(k, t)}, std::vector<Opt>{Opt::tc(k, t), Opt::upcast(0, 2), Opt::upcast(1, 2)},
          std::vector<Opt>{Opt::tc(k, t), Opt::local(0, 2)}}) {
      std::vector<Opt> got = check(c, cat(name, " ", opts_str(opts)), &opts);
      EXPECT_EQ(got, opts) << name;
    }
    const UOp* ba = cl_in(in, {2, 16, 32});
    const UOp* bb = cl_in(in, {2, 32, 16});
    EXPECT_FALSE(check(matmul(g, ba, bb), cat(name, " batched")).empty()) << name;
  }
}

// Shapes that are not multiples of the tile: TC pads M, N and K (gated loads and stores), for every
// layout, and the heuristic does so for a matmul and a convolution (its input channels as K, its
// output width as M) when no tile fits as it is.
TEST_F(TensorCoreKernels, PaddedTilesMatchTheOracle) {
  for (const char* name : {"m16n8k16_f16_f32", "mfma_16x16x16_bf16_f32", "wmma_16x16x16_f16_f32"}) {
    int64_t t = shape_index(name);
    DType in = dev->target().tensor_cores[size_t(t)].in == Scalar::Float16 ? dtypes::float16 : dtypes::bfloat16;
    const UOp* c = matmul(g, cl_in(in, {40, 24}), cl_in(in, {24, 20}));
    std::vector<Opt> opts{Opt::tc(reduce_axis(c), t, true)};
    EXPECT_EQ(check(c, cat(name, " 40x24 @ 24x20, padded"), &opts), opts) << name;
  }
  const UOp* c = matmul(g, cl_in(dtypes::float16, {40, 24}), cl_in(dtypes::float16, {24, 20}));
  std::vector<Opt> got = check(c, "heuristic 40x24 @ 24x20");
  ASSERT_FALSE(got.empty());
  EXPECT_TRUE(got[0].top) << opts_str(got);
  // conv2d 2x16x14x14 with 24 3x3 filters, pad 1, in float16. A tensor core multiplies halves
  // exactly where the oracle rounds each product to float16 (the spec's half Mul): over 144 terms
  // that differs by up to ~0.01 near 0, hence the absolute tolerance.
  const UOp* x = cl_in(dtypes::float16, {2, 16, 14, 14});
  const UOp* w = cl_in(dtypes::float16, {24, 16, 3, 3});
  const UOp* y = conv2d(g, x, w, nullptr, {1, 1}, {1, 1}, {1, 1});
  got = check(y, "heuristic conv2d 2x16x14x14 * 24x16x3x3", nullptr, -1, 0.03);
  EXPECT_FALSE(got.empty()) << "the convolution did not run on the (emulated) tensor cores";
  // a tile that needs over 4x the work is not padded: a matrix-vector product keeps plain kernels
  const UOp* mv = matmul(g, cl_in(dtypes::float16, {1, 64}), cl_in(dtypes::float16, {64, 32}));
  EXPECT_TRUE(check(mv, "heuristic 1x64 @ 64x32").empty());
}

// Applying the recorded opts again gives the same kernel.
TEST_F(TensorCoreKernels, RecordedOptsReplay) {
  const UOp* a = cl_in(dtypes::float16, {64, 64});
  const UOp* b = cl_in(dtypes::float16, {64, 64});
  const UOp* c = matmul(g, a, b);
  const UOp* ast = matmul_ast(c);
  ASSERT_NE(ast, nullptr);
  LoweredKernel first = lower_kernel(g, ast, dev->target());
  ASSERT_FALSE(first.opts.empty());
  EXPECT_EQ(first.opts[0].op, OptOp::TC) << opts_str(first.opts);
  LowerOptions lo;
  lo.opts = first.opts;
  LoweredKernel again = lower_kernel(g, ast, dev->target(), lo);
  EXPECT_EQ(linear_str(again.linear), linear_str(first.linear));
}

// On a real GPU (skipped without one; SN_REQUIRE_CUDA=1 makes that a failure): the heuristic's
// tensor-core kernels on NVIDIA's mma.sync (one padded to the tile), against the oracle.
TEST(TensorCoresOnGpu, CudaMatmulsMatchTheOracle) {
  SN_SKIP_WITHOUT_DEVICE("CUDA", cuda_required());
  auto dev = runtime().device("CUDA");
  if (dev->target().tensor_cores.empty()) GTEST_SKIP() << "the GPU (" << dev->target().arch << ") has no mma.sync";
  Rng rng(7);
  for (DType in : {dtypes::float16, dtypes::bfloat16})
    for (auto [m, k, n] : {std::array<int64_t, 3>{64, 32, 48}, std::array<int64_t, 3>{512, 256, 512},
                           std::array<int64_t, 3>{40, 24, 20}}) {  // the last one padded to the tile
      Graph g;
      oracle::BufferData data;
      auto make = [&](std::vector<int64_t> shape) {
        const UOp* t = input(g, in, shape, "CUDA");
        data[buffer_of(t)] = random_array(rng, in, {numel(shape)}, -2, 2);
        return t;
      };
      const UOp* a = make({m, k});
      const UOp* b = make({k, n});
      const UOp* mm = matmul(g, a, b);
      const UOp* y = relu(g, binary(g, Op::Add, mm, make({n})));
      std::shared_ptr<const Program> p;
      std::vector<Array> got = compile_and_run(g, {y}, data, {}, &p, "CUDA");
      std::vector<Array> want = oracle::evaluate(std::vector<const UOp*>{y, mm}, data);
      // The tolerance of each element follows from how the two compute it. The oracle rounds each
      // product a*b to the input type before a float32 sum (the spec's multiply, then sum); the
      // tensor cores multiply exactly. Each rounding is off by at most u*|a*b| (u: the type's unit
      // roundoff), so the sums differ by at most u*sum|a*b|. Then both round the sum to the input
      // type, which may land one unit in the last place of it apart, before the bias is added. A
      // wrong fragment layout errs by the size of the elements themselves, far beyond this.
      const double u = in == dtypes::bfloat16 ? 0x1p-8 : 0x1p-11;
      const Array &av = data.at(buffer_of(a)), &bv = data.at(buffer_of(b));
      std::vector<double> ad(size_t(m * k)), bd(size_t(k * n));
      for (size_t i = 0; i < ad.size(); i++) ad[i] = std::fabs(av.value_at(i));
      for (size_t i = 0; i < bd.size(); i++) bd[i] = std::fabs(bv.value_at(i));
      const double rtol = default_rtol(want[0].dtype);
      size_t bad = 0;
      std::string first;
      for (int64_t r = 0; r < m; r++)
        for (int64_t c = 0; c < n; c++) {
          double abs_sum = 0;  // sum over k of |a*b|
          for (int64_t x = 0; x < k; x++) abs_sum += ad[size_t(r * k + x)] * bd[size_t(x * n + c)];
          const size_t i = size_t(r * n + c);
          const double gv = got.at(0).value_at(i), wv = want[0].value_at(i), pv = want[1].value_at(i);
          const double tol = u * abs_sum + 4 * u * std::fabs(pv) + rtol * (std::fabs(wv) + 0.1);
          if (std::fabs(gv - wv) <= tol) continue;
          if (bad++ < 5) first += cat(" [", i, "] got ", gv, " want ", wv, " (product ", pv, ", tolerance ", tol, ")");
        }
      EXPECT_EQ(bad, 0u) << in.name() << " " << m << "x" << k << "x" << n << ":" << first;
      bool mma = false;
      for (const Launch& l : p->launches) mma = mma || l.kernel->source.find("mma.sync") != std::string::npos;
      EXPECT_TRUE(mma) << "no kernel ran on the tensor cores";
    }
}

TEST_F(TensorCoreKernels, TcOptSaysWhyItDoesNotApply) {
  const UOp* a = cl_in(dtypes::float16, {32, 40});
  const UOp* b = cl_in(dtypes::float16, {40, 24});
  const UOp* odd = matmul(g, a, b);  // K = 40: not a multiple of 16
  const UOp* f = cl_in(dtypes::float32, {32, 32});
  const UOp* f32 = matmul(g, f, f);                                          // float32 inputs
  const UOp* s = reduce(g, cl_in(dtypes::float16, {32, 32}), Op::Add, {1});  // a sum, not a product
  auto why = [&](const UOp* out, std::vector<Opt> opts) -> std::string {
    LowerOptions lo;
    lo.opts = std::move(opts);
    try {
      lower_kernel(g, matmul_ast(out), dev->target(), lo);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::InvalidArg);
      return e.what();
    }
    return "";
  };
  int64_t t = shape_index("m16n8k16_f16_f32");
  EXPECT_NE(why(odd, {Opt::tc(reduce_axis(odd), t)}).find("not a multiple of 16"), std::string::npos);
  EXPECT_NE(why(f32, {Opt::tc(reduce_axis(f32), t)}).find("not float16"), std::string::npos);
  EXPECT_NE(why(s, {Opt::tc(reduce_axis(s), t)}).find("not a product"), std::string::npos);
  int64_t k = reduce_axis(f32);
  EXPECT_NE(why(f32, {Opt::upcast(0, 2), Opt::tc(k, t)}).find("must be the first"), std::string::npos);
  EXPECT_NE(why(f32, {Opt::tc(k, 99)}).find("tensor cores"), std::string::npos);
  const UOp* h = matmul(g, cl_in(dtypes::float16, {32, 32}), cl_in(dtypes::float16, {32, 32}));
  int64_t hk = reduce_axis(h);
  EXPECT_NE(why(h, {Opt::tc(hk, t), Opt::group(hk, 2)}).find("no group reduce"), std::string::npos);
  // And the heuristic keeps plain kernels for them: the float32 matmul still matches.
  EXPECT_TRUE(check(f32, "f32 matmul, no tensor core").empty());
}
#endif

}  // namespace
}  // namespace sn
