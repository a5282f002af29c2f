// Codegen without a backend: optimizer opts, expand, reduce lowering, isel and the linearizer,
// checked on the structure of the Linear and by interpreting the Linear here (so these tests
// run in builds without LLVM too).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/codegen/codegen.h"
#include "core/codegen/kernel_util.h"
#include "core/opt/opt.h"
#include "core/pipeline.h"
#include "core/runtime/thread_pool.h"
#include "core/symbolic/symbolic.h"
#include "test_codegen_kernels.h"

namespace sn {
namespace {

using testk::KernelBuilder;

// ---- a reference interpreter of the Linear ----------------------------------------------------
// Values: one double per lane (floats; exact integers wrapped to their dtype for the rest).
// Buffers are vectors of doubles indexed by element. Float32 results are rounded to float.

struct Interp {
  std::map<int64_t, std::vector<double>*> bufs;  // Param slot -> data
  std::map<std::string, int64_t> vars;
  int64_t core_id = 0;

  void run(const UOp* linear) {
    auto code = linear->src();
    std::unordered_map<const UOp*, size_t> at;
    for (size_t pc = 0; pc < code.size(); pc++) at[code[pc]] = pc;
    std::unordered_map<const UOp*, size_t> end_of;  // Range -> its End, If -> its Endif
    for (size_t pc = 0; pc < code.size(); pc++)
      if (code[pc]->op == Op::End || code[pc]->op == Op::Endif)
        end_of[code[pc]->src(code[pc]->op == Op::End ? 1 : 0)] = pc;
    for (size_t pc = 0; pc < code.size(); pc++) {
      const UOp* u = code[pc];
      switch (u->op) {
        case Op::Range: {
          if (s(u->src(0)) <= 0) {
            pc = end_of.at(u);
            break;
          }
          val_[u] = {0};
          break;
        }
        case Op::End: {
          const UOp* r = u->src(1);
          double next = s(r) + 1;
          if (next < s(r->src(0))) {
            val_[r] = {next};
            pc = at.at(r);
          }
          break;
        }
        case Op::If:
          if (s(u->src(0)) == 0) pc = end_of.at(u);
          break;
        case Op::Endif:
          break;
        case Op::Store: {
          std::vector<double> x = val(u->src(1)), gate = u->nsrc() == 3 ? val(u->src(2)) : std::vector<double>{1};
          for (size_t l = 0; l < x.size(); l++)
            if (gate[gate.size() == 1 ? 0 : l] != 0) *elem(u->src(0), l) = x[l];
          break;
        }
        case Op::Load: {
          size_t lanes = u->dtype.lanes;
          std::vector<double> out(lanes);
          std::vector<double> gate = u->nsrc() == 3 ? val(u->src(2)) : std::vector<double>{1};
          std::vector<double> alt = u->nsrc() == 3 ? val(u->src(1)) : std::vector<double>(lanes);
          for (size_t l = 0; l < lanes; l++)  // masked-off lanes are never touched
            out[l] = gate[gate.size() == 1 ? 0 : l] != 0 ? *elem(u->src(0), l) : alt[alt.size() == 1 ? 0 : l];
          val_[u] = out;
          break;
        }
        case Op::Buffer:
          regs_[u].assign(size_t(u->as<BufferArg>().size) * u->dtype.lanes, 0);
          break;
        default:
          val_[u] = eval(u);
      }
    }
  }

 private:
  std::vector<double> val(const UOp* u) {
    if (u->op == Op::Const) return {u->holds<double>() ? u->as<double>() : double(u->as<int64_t>())};
    return val_.at(u);
  }
  double s(const UOp* u) { return val(u).at(0); }
  // Element `lane` of the (vector) address `index`: lane 0's plus the lane, or the lane's own where
  // the index is a vector (a gather or scatter).
  double* elem(const UOp* index, size_t lane) {
    const UOp* base = index->src(0);
    while (base->op == Op::After) base = base->src(0);
    const std::vector<double> at = val(index->src(1));
    int64_t i0 = int64_t(at.at(0)), i = at.size() > 1 ? int64_t(at.at(lane)) : i0 + int64_t(lane);
    if (base->op == Op::Param) {
      std::vector<double>& b = *bufs.at(base->as<ParamArg>().slot);
      if (i < 0 || size_t(i) >= b.size()) ADD_FAILURE() << "access " << i << " is out of bounds";
      return &b.at(size_t(i));
    }
    return &regs_.at(base).at(size_t(i0) * base->dtype.lanes + lane);  // a register holds whole vectors
  }
  static double fit(DType d, double v) {
    d = d.base();
    if (d.is_float()) return d.scalar == Scalar::Float32 ? double(float(v)) : round_float(d, v);
    if (d.is_bool()) return v != 0;
    return double(wrap_int(d, i128(v)));
  }
  std::vector<double> eval(const UOp* u) {
    size_t lanes = u->dtype.is_void() ? 1 : u->dtype.lanes;
    switch (u->op) {
      case Op::Param:
      case Op::After:
      case Op::Index:
      case Op::Group:
      case Op::Stack:
        return {0};
      case Op::Const:
        return val(u);
      case Op::DefineVar:
        return {double(vars.at(u->as<VarArg>().name))};
      case Op::Special:
        return {double(core_id)};
      case Op::Vectorize: {
        std::vector<double> out;
        for (const UOp* x : u->src()) out.push_back(s(x));
        return out;
      }
      case Op::Gep: {  // one lane, or a list of lanes (a shuffle)
        std::vector<double> v = val(u->src(0)), out;
        if (u->holds<int64_t>()) return {v.at(size_t(u->as<int64_t>()))};
        for (int64_t i : u->as<std::vector<int64_t>>()) out.push_back(v.at(size_t(i)));
        return out;
      }
      default:
        break;
    }
    std::vector<std::vector<double>> in;
    for (const UOp* x : u->src()) in.push_back(val(x));
    std::vector<double> out(lanes);
    for (size_t l = 0; l < lanes; l++) {
      auto x = [&](size_t i) { return in[i][in[i].size() == 1 ? 0 : l]; };
      out[l] = lane(u, x);
    }
    return out;
  }
  template <class X>
  double lane(const UOp* u, X x) {
    DType d = u->dtype;
    switch (u->op) {
      case Op::Cast: {
        double v = x(0);
        if (d.is_bool()) return v != 0 || std::isnan(v);
        if (!d.is_float()) v = std::trunc(v);
        return fit(d, v);
      }
      case Op::Add:
        return fit(d, x(0) + x(1));
      case Op::Sub:
        return fit(d, x(0) - x(1));
      case Op::Mul:
        return fit(d, x(0) * x(1));
      case Op::Mulacc:
        return fit(d, x(0) * x(1) + x(2));
      case Op::Div:
        return fit(d, x(0) / x(1));
      case Op::Neg:
        return fit(d, -x(0));
      case Op::Max:
        return std::isnan(x(0)) || std::isnan(x(1)) ? NAN : std::max(x(0), x(1));
      case Op::CDiv:
        return fit(d, std::trunc(x(0) / x(1)));
      case Op::CMod:
        return fit(d, std::fmod(x(0), x(1)));
      case Op::CmpLt:
        return x(0) < x(1);
      case Op::CmpNe:
        return x(0) != x(1);
      case Op::CmpEq:
        return x(0) == x(1);
      case Op::CmpGt:
        return x(1) < x(0);
      case Op::CmpGe:
        return !(x(0) < x(1));
      case Op::CmpLe:
        return !(x(1) < x(0));
      case Op::And:
        return double(int64_t(x(0)) & int64_t(x(1)));
      case Op::Or:
        return double(int64_t(x(0)) | int64_t(x(1)));
      case Op::Xor:
        return double(int64_t(x(0)) ^ int64_t(x(1)));
      case Op::Not:
        return x(0) == 0;
      case Op::Where:
        return x(0) != 0 ? x(1) : x(2);
      case Op::Sqrt:
        return fit(d, std::sqrt(x(0)));
      case Op::Exp2:
        return fit(d, std::exp2(x(0)));
      default:
        ADD_FAILURE() << "interp: " << op_name(u->op);
        return 0;
    }
  }
  std::unordered_map<const UOp*, std::vector<double>> val_;
  std::unordered_map<const UOp*, std::vector<double>> regs_;
};

Target test_target(int cores = 2) {
  Target t;
  t.has_threads = true;
  t.cores = cores;
  t.vector_bits = 512;
  return t;
}

// Runs every THREAD index of a lowered kernel in the interpreter.
void interpret(const LoweredKernel& k, std::map<int64_t, std::vector<double>*> bufs,
               std::map<std::string, int64_t> vars = {}) {
  for (int64_t t = 0; t < k.threads; t++) {
    Interp in;
    in.bufs = bufs;
    in.vars = vars;
    in.core_id = t;
    in.run(k.linear);
  }
}

size_t count(const UOp* linear, Op op) {
  size_t n = 0;
  for (const UOp* u : linear->src()) n += u->op == op;
  return n;
}

// position of the first instruction with op (and predicate)
template <class F>
size_t first(const UOp* linear, F pred) {
  for (size_t i = 0; i < linear->nsrc(); i++)
    if (pred(linear->src(i))) return i;
  return size_t(-1);
}

// ---- matmul through every stage -----------------------------------------------------------------

struct Matmul {
  Graph g;
  const UOp* sink;
  int64_t M, N, K;
  Matmul(int64_t m, int64_t n, int64_t k) : M(m), N(n), K(k) {
    KernelBuilder b{g};
    auto *A = b.param(0, dtypes::float32, M * K), *B = b.param(1, dtypes::float32, K * N);
    auto* C = b.param(2, dtypes::float32, M * N);
    auto *i = b.range(M, 0), *j = b.range(N, 1), *r = b.range(K, 2, AxisType::Reduce);
    auto* v = b.mul(b.load(A, b.flat({i, r}, {M, K})), b.load(B, b.flat({r, j}, {K, N})));
    sink = b.sink({b.store(C, b.flat({i, j}, {M, N}), b.reduce(Op::Add, v, {r}))});
  }
  void check(const LoweredKernel& k) {
    std::vector<double> a(size_t(M * K)), b(size_t(K * N)), c(size_t(M * N), -1);
    for (size_t x = 0; x < a.size(); x++) a[x] = double((x * 7) % 5) - 2;
    for (size_t x = 0; x < b.size(); x++) b[x] = double((x * 3) % 7) - 3;
    interpret(k, {{0, &a}, {1, &b}, {2, &c}});
    for (int64_t x = 0; x < M; x++)
      for (int64_t y = 0; y < N; y++) {
        double w = 0;
        for (int64_t z = 0; z < K; z++) w += a[size_t(x * K + z)] * b[size_t(z * N + y)];
        ASSERT_EQ(c[size_t(x * N + y)], w) << k.name << " " << x << "," << y;
      }
  }
};

TEST(Codegen, MatmulUnoptimizedLinear) {
  Matmul mm(5, 6, 7);
  LowerOptions o;
  o.optimize = false;
  LoweredKernel k = lower_kernel(mm.g, mm.sink, test_target(), o);
  EXPECT_EQ(k.threads, 1);
  EXPECT_EQ(count(k.linear, Op::Range), 3u);
  EXPECT_EQ(count(k.linear, Op::End), 3u);
  EXPECT_EQ(count(k.linear, Op::Buffer), 1u);  // one accumulator
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_TRUE(k.params[0].read && !k.params[0].written);
  EXPECT_TRUE(k.params[2].written && !k.params[2].read);
  EXPECT_EQ(k.params[2].size, 30);
  mm.check(k);
  // Each stage was recorded, in order.
  std::vector<std::string> names;
  for (auto& [n, u] : k.stages) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"ast", "optimized", "launch", "expanded", "simplified", "reduce",
                                             "parallel", "isel", "linear"}));
}

TEST(Codegen, MatmulRegisterTileAndThreads) {
  Matmul mm(64, 64, 16);
  LoweredKernel k = lower_kernel(mm.g, mm.sink, test_target());
  // 64x64x16 has enough work for two threads, and an 8x32 tile: 8 accumulators of 32 lanes.
  EXPECT_EQ(k.threads, 2) << k.name;
  size_t vector_accs = 0;
  for (const UOp* u : k.linear->src()) vector_accs += u->op == Op::Buffer && u->dtype == dtypes::float32.vec(32);
  EXPECT_EQ(vector_accs, 8u) << k.name;
  ASSERT_FALSE(k.opts.empty());
  mm.check(k);
}

TEST(Codegen, ForcedOptsUnrollAndUpcast) {
  Matmul mm(6, 8, 12);
  LowerOptions o;
  o.opts = std::vector<Opt>{Opt::unroll(2, 4), Opt::upcast(1, 2), Opt::thread(0, 3)};
  LoweredKernel k = lower_kernel(mm.g, mm.sink, test_target(), o);
  EXPECT_EQ(k.threads, 3);
  ASSERT_EQ(count(k.linear, Op::Buffer), 1u);  // the upcast axis became 2 vector lanes
  EXPECT_EQ(k.linear->src()[first(k.linear, [](const UOp* u) { return u->op == Op::Buffer; })]->dtype,
            dtypes::float32.vec(2));
  EXPECT_EQ(count(k.linear, Op::Special), 1u);
  mm.check(k);
  // The THREAD range is the core id from the launch stage on, before expand builds the kernel.
  auto stage = [&](std::string_view name) {
    for (const auto& [n, root] : k.stages)
      if (n == name) return toposort(root);
    ADD_FAILURE() << "no stage " << name;
    return std::vector<const UOp*>{};
  };
  auto threads_in = [](const std::vector<const UOp*>& nodes) {
    size_t ranges = 0, cores = 0;
    for (const UOp* u : nodes) {
      ranges += u->op == Op::Range && u->as<RangeArg>().type == AxisType::Thread;
      cores += u->op == Op::Special && u->as<std::string>() == "core_id";
    }
    return std::pair{ranges, cores};
  };
  EXPECT_EQ(threads_in(stage("optimized")), (std::pair<size_t, size_t>{1, 0}));
  EXPECT_EQ(threads_in(stage("launch")), (std::pair<size_t, size_t>{0, 1}));
  EXPECT_EQ(threads_in(stage("expanded")), (std::pair<size_t, size_t>{0, 1}));
  // Work-group axes on a target without work-groups are refused (by the opt, before the launch stage).
  o.opts = std::vector<Opt>{Opt::local(0, 2)};
  EXPECT_THROW(lower_kernel(mm.g, mm.sink, test_target(), o), Error);
  o.opts = std::vector<Opt>{Opt::group(2, 2)};
  EXPECT_THROW(lower_kernel(mm.g, mm.sink, test_target(), o), Error);
  // Bad opts name the problem.
  o.opts = std::vector<Opt>{Opt::upcast(1, 5)};
  EXPECT_THROW(lower_kernel(mm.g, mm.sink, test_target(), o), Error);
  o.opts = std::vector<Opt>{Opt::unroll(0, 2)};  // not a reduce axis
  EXPECT_THROW(lower_kernel(mm.g, mm.sink, test_target(), o), Error);
  o.opts = std::vector<Opt>{Opt::thread(9, 2)};  // no such axis
  EXPECT_THROW(lower_kernel(mm.g, mm.sink, test_target(), o), Error);
}

TEST(Codegen, VectorLanesWithPadAndStridedLoads) {
  // out[i, j] = sum_k (pad(a)[i, 2j + k - 1] + b[j * 3 + k] + c[j * 5 + k]) with j upcast to 8 lanes:
  // the padded stride-2 load and the stride-3 load become contiguous loads 16 and 24 lanes wide,
  // masked to the lanes they keep (by the pad's gate too), and shuffles; the stride-5 one a load
  // per lane.
  Graph g;
  KernelBuilder b{g};
  const int64_t I = 3, J = 16, K = 3, W = 2 * J;
  const int64_t NB = 3 * (J - 1) + K, NC = 5 * (J - 1) + K;  // each ends at the last lane's last element
  auto *A = b.param(0, dtypes::float32, I * W), *B = b.param(1, dtypes::float32, NB),
       *C = b.param(3, dtypes::float32, NC), *O = b.param(2, dtypes::float32, I * J);
  auto *i = b.range(I, 0), *j = b.range(J, 1), *k = b.range(K, 2, AxisType::Reduce);
  auto* x = b.add(b.mul(j, b.c(2)), b.add(k, b.c(-1)));
  auto* valid = g.alu(Op::And, g.alu(Op::CmpLt, b.c(-1), x), g.alu(Op::CmpLt, x, b.c(W)));
  auto* v =
      b.add(b.add(b.load(A, b.add(b.mul(i, b.c(W)), x), g.cfloat(0.0), valid), b.load(B, b.add(b.mul(j, b.c(3)), k))),
            b.load(C, b.add(b.mul(j, b.c(5)), k)));
  auto* sink = b.sink({b.store(O, b.flat({i, j}, {I, J}), b.reduce(Op::Add, v, {k}))});
  LowerOptions o;
  o.opts = std::vector<Opt>{Opt::upcast(1, 8)};
  LoweredKernel lk = lower_kernel(g, sink, test_target(), o);
  size_t wide = 0, lane_loads = 0, shuffles = 0;
  for (const UOp* u : lk.linear->src()) {
    if (u->op == Op::Load && u->nsrc() == 3 && (u->dtype.lanes == 16 || u->dtype.lanes == 24) &&
        u->src(2)->dtype.lanes == u->dtype.lanes)
      wide++;
    if (u->op == Op::Gep && u->src(0)->op == Op::Load && u->dtype.lanes == 8) shuffles++;
    if (u->op == Op::Vectorize && u->src(0)->op == Op::Load) lane_loads++;
  }
  EXPECT_EQ(wide, 2u) << linear_str(lk.linear);
  EXPECT_EQ(shuffles, 2u) << linear_str(lk.linear);
  EXPECT_EQ(lane_loads, 1u) << linear_str(lk.linear);
  // The interpreter fails an access out of bounds: the last lane's element is the last of each
  // buffer, so a wide load that read past its kept lanes would be caught.
  std::vector<double> a(static_cast<size_t>(I * W)), bb(static_cast<size_t>(NB)), cc(static_cast<size_t>(NC)),
      out(static_cast<size_t>(I * J));
  for (size_t q = 0; q < a.size(); q++) a[q] = double(q % 7) + 1;
  for (size_t q = 0; q < bb.size(); q++) bb[q] = double(q) * 10;
  for (size_t q = 0; q < cc.size(); q++) cc[q] = double(q) * 1000;
  interpret(lk, {{0, &a}, {1, &bb}, {2, &out}, {3, &cc}});
  for (int64_t y = 0; y < I; y++)
    for (int64_t xx = 0; xx < J; xx++) {
      double w = 0;
      for (int64_t z = 0; z < K; z++) {
        int64_t col = 2 * xx + z - 1;
        w += (col >= 0 && col < W ? a[size_t(y * W + col)] : 0) + bb[size_t(xx * 3 + z)] + cc[size_t(xx * 5 + z)];
      }
      EXPECT_EQ(out[size_t(y * J + xx)], w) << y << "," << xx;
    }
}

TEST(Codegen, StridedLoadsThatCoverARowShareOnePlainLoad) {
  // out[i, j] = max_k a[i, 2j + k] for k < 3 (a 3-wide, stride-2 pool row), j upcast to 8 lanes and
  // k unrolled: three loads 16 lanes wide, each masked to its even lanes. Those at k = 0 and 1
  // read every lane of the row from 2j between them, so they become one plain load, each
  // keeping its lanes; k = 2's would read one lane past it and stays masked.
  Graph g;
  KernelBuilder b{g};
  const int64_t I = 2, J = 16, K = 3, W = 2 * J + 1;  // a row ends at the last lane's last element
  auto *A = b.param(0, dtypes::float32, I * W), *O = b.param(1, dtypes::float32, I * J);
  auto *i = b.range(I, 0), *j = b.range(J, 1), *k = b.range(K, 2, AxisType::Reduce);
  auto* v = b.load(A, b.add(b.mul(i, b.c(W)), b.add(b.mul(j, b.c(2)), k)));
  auto* sink = b.sink({b.store(O, b.flat({i, j}, {I, J}), b.reduce(Op::Max, v, {k}))});
  LowerOptions o;
  o.opts = std::vector<Opt>{Opt::upcast(1, 8), Opt::unroll(2, 3)};
  LoweredKernel lk = lower_kernel(g, sink, test_target(), o);
  size_t plain = 0, masked = 0, shuffles_of_plain = 0;
  for (const UOp* u : lk.linear->src()) {
    if (u->op == Op::Load && u->dtype.lanes == 16) (u->nsrc() == 3 ? masked : plain)++;
    if (u->op == Op::Gep && u->src(0)->op == Op::Load && u->src(0)->nsrc() == 1 && u->dtype.lanes == 8)
      shuffles_of_plain++;
  }
  EXPECT_EQ(plain, 1u) << linear_str(lk.linear);
  EXPECT_EQ(masked, 1u) << linear_str(lk.linear);
  EXPECT_EQ(shuffles_of_plain, 2u) << linear_str(lk.linear);
  // The interpreter fails an access out of bounds (a merged load that read past the row's end).
  std::vector<double> a(static_cast<size_t>(I * W)), out(static_cast<size_t>(I * J));
  for (size_t q = 0; q < a.size(); q++) a[q] = double((q * 37) % 11) - 5;
  interpret(lk, {{0, &a}, {1, &out}});
  for (int64_t y = 0; y < I; y++)
    for (int64_t x = 0; x < J; x++) {
      double m = -1e300;
      for (int64_t z = 0; z < K; z++) m = std::max(m, a[size_t(y * W + 2 * x + z)]);
      EXPECT_EQ(out[size_t(y * J + x)], m) << y << "," << x;
    }
}

// A transpose, out[i, j] = A[j * S + i], its stored axis j as k lanes and i as k copies (a square
// tile): each copy's load walks the lanes S apart, a gather on a target with gathers, else k scalar
// loads put together. Together the k copies read k contiguous elements of k rows, so expand loads
// each row once as a vector and transposes the tile with shuffles: k row loads per tile and no
// lanes loaded apart. Where the copies read every other element (A[j * S + 2i]) the rows' elements
// are not all read and the lanes stay as they were. All match the formula in the interpreter, which
// fails an access out of bounds.
TEST(Codegen, TilesOfATransposeAreRowLoadsTransposedInRegisters) {
  for (const bool gathers : {true, false})
    for (const int64_t k : {4, 8, 16})
      for (const int64_t step : {1, 2}) {
        Graph g;
        KernelBuilder b{g};
        const int64_t I = 2 * k, J = 2 * k, S = step * I + 3;  // rows of A longer than the tile's part
        auto *A = b.param(0, dtypes::float32, J * S), *O = b.param(1, dtypes::float32, I * J);
        auto *i = b.range(I, 0), *j = b.range(J, 1);
        auto* v = b.load(A, b.add(b.mul(j, b.c(S)), b.mul(i, b.c(step))));
        auto* sink = b.sink({b.store(O, b.flat({i, j}, {I, J}), v)});
        LowerOptions o;
        o.opts = std::vector<Opt>{Opt::upcast(0, k), Opt::upcast(1, k)};
        Target t = test_target();
        t.has_gather_scatter = gathers;
        LoweredKernel lk = lower_kernel(g, sink, t, o);
        size_t apart = 0, rows = 0;  // copies whose lanes are loaded apart (gathered, lane by lane); row loads
        for (const UOp* u : lk.linear->src()) {
          if (u->op == Op::Load && u->dtype.lanes == k) (u->src(0)->src(1)->dtype.lanes == k ? apart : rows)++;
          if (u->op == Op::Vectorize && u->src(0)->op == Op::Load) apart++;
        }
        const bool tile = step == 1;
        const std::string what = cat(gathers ? "gathers, " : "no gathers, ", k, " lanes, step ", step);
        EXPECT_EQ(apart, tile ? 0u : size_t(k)) << what << "\n" << linear_str(lk.linear);
        EXPECT_EQ(rows, tile ? size_t(k) : 0u) << what << "\n" << linear_str(lk.linear);
        std::vector<double> a(static_cast<size_t>(J * S)), out(static_cast<size_t>(I * J));
        for (size_t q = 0; q < a.size(); q++) a[q] = double((q * 37) % 101) - 50;
        interpret(lk, {{0, &a}, {1, &out}});
        for (int64_t y = 0; y < I; y++)
          for (int64_t x = 0; x < J; x++)
            ASSERT_EQ(out[size_t(y * J + x)], a[size_t(x * S + step * y)]) << what << ": " << y << "," << x;
      }
}

// A kernel of J outputs, split into 8 lanes: out[j] = A[j % a + a2 * (j / a)] + B[(j + c) % a + a * (j / a)].
// Expects one 8-lane vector load (A walks the lanes contiguously) and one load lane by lane (B wraps
// around inside a vector), and the values of the formula.
// want_runs: B's loads of 4 lanes (a wrap only between aligned runs of 4), else B is loaded lane by lane.
void expect_lanes_through_mod_and_div(int64_t J, int64_t a, int64_t a2, int64_t c, size_t want_runs = 0) {
  Graph g;
  KernelBuilder b{g};
  auto *A = b.param(0, dtypes::float32, 2 * J), *B = b.param(1, dtypes::float32, J),
       *O = b.param(2, dtypes::float32, J);
  auto* j = b.range(J, 0);
  auto mod = [&](const UOp* x, int64_t m) { return g.alu(Op::Mod, x, b.c(m)); };
  auto div = [&](const UOp* x, int64_t m) { return g.alu(Op::Idiv, x, b.c(m)); };
  auto* va = b.load(A, b.add(mod(j, a), b.mul(div(j, a), b.c(a2))));
  auto* vb = b.load(B, b.add(mod(b.add(j, b.c(c)), a), b.mul(div(j, a), b.c(a))));
  auto* sink = b.sink({b.store(O, j, b.add(va, vb))});
  LowerOptions o;
  o.opts = std::vector<Opt>{Opt::upcast(0, 8)};
  LoweredKernel lk = lower_kernel(g, sink, test_target(), o);
  size_t vector_loads = 0, lane_loads = 0, run_loads = 0;
  for (const UOp* u : lk.linear->src()) {
    if (u->op == Op::Load && u->dtype.lanes == 8) vector_loads++;
    if (u->op == Op::Load && u->dtype.lanes == 4) run_loads++;
    if (u->op == Op::Vectorize && u->src(0)->op == Op::Load) lane_loads++;
  }
  EXPECT_EQ(vector_loads, 1u) << linear_str(lk.linear);
  EXPECT_EQ(lane_loads, want_runs ? 0u : 1u) << linear_str(lk.linear);
  EXPECT_EQ(run_loads, want_runs) << linear_str(lk.linear);
  std::vector<double> av(static_cast<size_t>(2 * J)), bv(static_cast<size_t>(J)), out(static_cast<size_t>(J));
  for (size_t q = 0; q < av.size(); q++) av[q] = double(q) + 1;
  for (size_t q = 0; q < bv.size(); q++) bv[q] = double(q) * 1000;
  interpret(lk, {{0, &av}, {1, &bv}, {2, &out}});
  for (int64_t x = 0; x < J; x++)
    EXPECT_EQ(out[size_t(x)], av[size_t(x % a + a2 * (x / a))] + bv[size_t((x + c) % a + a * (x / a))]) << x;
}

// Lanes through a remainder and a quotient (a packed weight's layout): A[j % 8 + 16 * (j / 8)] with j
// split into 8 lanes walks the lanes contiguously (one vector load); B[(j + 3) % 8 + 8 * (j / 8)]
// wraps around inside a vector, so it is loaded lane by lane.
TEST(Codegen, LanesThroughModAndDivOfTheirBlock) { expect_lanes_through_mod_and_div(32, 8, 16, 3); }

// The same with the lanes a part of the block (AVX2's 8-lane half of a 16-wide packed weight): j = 8 * i + u,
// A[j % 16 + 32 * (j / 16)] still walks the lanes contiguously (8 * i % 16 is 0 or 8, u below 8: no wrap), found
// without the simplifier; B[(j + 4) % 16 + 16 * (j / 16)] wraps where i is odd, between lanes 3 and 4: two loads
// of 4 lanes (found once the launch stage has simplified j's split into 8 * i + u: (8 * i + u + 4) % 16 steps by
// 1 within each aligned run of 4 lanes), none lane by lane.
TEST(Codegen, LanesThroughModOfABlockTheyAreAPartOf) { expect_lanes_through_mod_and_div(64, 16, 32, 4, 2); }

// A tile wider than the panels it reads (AVX2's 16 lanes over a weight packed in 8-wide panels):
// out[i, j] = sum_k A[i, k] * (B[j / 8, k, j % 8] + (k < K - 1 ? C[j / 4, k, j % 4] : 0)), j split
// into 16 lanes. B's lanes step by 1 within each half: two 8-lane loads; C's within each quarter,
// under a gate the same for every lane: four masked 4-lane loads; no load lane by lane. D[(j + 3) % 8
// + 8 * (j / 8)] wraps inside every run, so it is still loaded lane by lane. The interpreter fails
// an access out of bounds, and the values are the formula's.
TEST(Codegen, LanesInRunsLoadEachRunAsOneVector) {
  Graph g;
  const int64_t I = 3, J = 32, K = 5;
  const UOp* sink = testk::panels_kernel(g, I, J, K);
  LowerOptions o;
  o.opts = std::vector<Opt>{Opt::upcast(1, 16)};
  LoweredKernel lk = lower_kernel(g, sink, test_target(), o);
  std::map<int, size_t> loads;  // lanes -> vector loads narrower than the tile (the accumulator's are 16 wide)
  size_t lane_loads = 0;        // vectors of scalar loads (not a splat of one: A's broadcast)
  for (const UOp* u : lk.linear->src()) {
    if (u->op == Op::Load && u->dtype.lanes > 1 && u->dtype.lanes < 16) loads[u->dtype.lanes]++;
    if (u->op == Op::Vectorize && u->src(0)->op == Op::Load && u->src(1) != u->src(0)) lane_loads++;
  }
  EXPECT_EQ(loads, (std::map<int, size_t>{{4, 4}, {8, 2}})) << linear_str(lk.linear);
  EXPECT_EQ(lane_loads, 1u) << linear_str(lk.linear);  // D's
  std::vector<double> av(size_t(I * K)), bv(size_t(J * K)), cv(size_t(J * K)), out(size_t(I * J));
  std::vector<double> dv(static_cast<size_t>(J));
  for (size_t q = 0; q < av.size(); q++) av[q] = double(q % 5) + 1;
  for (size_t q = 0; q < bv.size(); q++) bv[q] = double(q) * 10;
  for (size_t q = 0; q < cv.size(); q++) cv[q] = double(q) * 1000;
  for (size_t q = 0; q < dv.size(); q++) dv[q] = double(q) * 100000;
  interpret(lk, {{0, &av}, {1, &bv}, {2, &out}, {3, &cv}, {4, &dv}});
  for (int64_t y = 0; y < I; y++)
    for (int64_t x = 0; x < J; x++)
      EXPECT_EQ(out[size_t(y * J + x)], testk::panels_reference(av, bv, cv, dv, K, y, x)) << y << "," << x;
}

// substitute_copies gives, for every map, the node substitute_nodes gives (hash-consed: the same pointer),
// with a Reduce axis among the keys (dropped from the Reduce's range list) and nodes older than every key.
TEST(Codegen, SubstituteCopiesMatchesOneSubstitutionPerMap) {
  Graph g;
  KernelBuilder b{g};
  auto *A = b.param(0, dtypes::float32, 256), *O = b.param(1, dtypes::float32, 16);
  auto* r0 = b.range(4, 0);
  auto* old = b.load(A, b.mul(r0, b.c(3)));  // older than the keys: never entered
  auto* r1 = b.range(4, 1, AxisType::Upcast);
  auto* r2 = b.range(8, 2, AxisType::Reduce);
  auto* r3 = b.range(2, 3, AxisType::Unroll);
  auto* v = b.load(A, b.add(b.add(b.mul(r1, b.c(64)), b.mul(r2, b.c(8))), b.mul(r3, b.c(4))));
  auto* red = b.reduce(Op::Add, b.mul(v, old), {r2, r3});
  auto* st = b.store(O, b.add(b.mul(r0, b.c(4)), r1), red);
  std::vector<std::unordered_map<const UOp*, const UOp*>> maps;
  for (int64_t i = 0; i < 4; i++)
    for (int64_t j = 0; j < 2; j++) maps.push_back({{r1, b.c(i)}, {r3, b.c(j)}});
  std::vector<const UOp*> copies = substitute_copies(g, st, maps);
  ASSERT_EQ(copies.size(), maps.size());
  std::set<const UOp*> distinct(copies.begin(), copies.end());
  EXPECT_EQ(distinct.size(), maps.size());
  for (size_t i = 0; i < maps.size(); i++) {
    EXPECT_EQ(copies[i], substitute_nodes(g, st, maps[i])) << i;
    for (const UOp* r : ranges_of(copies[i])) EXPECT_TRUE(r == r0 || r == r2) << i;  // r1 and r3 are gone
  }
  // A root no key reaches is every copy.
  std::vector<const UOp*> same = substitute_copies(g, old, maps);
  for (const UOp* c : same) EXPECT_EQ(c, old);
}

// A substitution folds the index math its constants make into the simplifier's forms: (x + 1) + -57 is
// x + -56, (x + 2) + y is (x + y) + 2, a constant's remainder and quotient are constants. Each result
// has the value of the expression it replaces at every point (eval_int, floor division), and the
// simplifier leaves the sums as they are.
TEST(Codegen, SubstitutionFoldsConstantsIntoTheSimplifiersForms) {
  Graph g;
  KernelBuilder b{g};
  auto* r0 = b.range(14, 0);
  auto* r1 = b.range(64, 1);
  auto* u = b.range(3, 2, AxisType::Unroll);
  auto* r2 = b.range(56, 3);
  // x and x + y as the simplifier leaves them
  const UOp* x = simplify(g, b.add(b.mul(r0, b.c(4)), b.mul(r1, b.c(3136))));
  const UOp* y = b.mul(r2, b.c(56));
  const UOp* shifted = b.add(b.add(x, u), b.c(-57));  // (x + u) + -57
  const UOp* moved = b.add(b.add(x, u), y);           // (x + u) + y
  const UOp* divs = b.add(b.add(x, g.alu(Op::Mod, b.mul(u, b.c(8)), b.c(8))),
                          b.mul(g.alu(Op::Idiv, b.mul(u, b.c(8)), b.c(8)), b.c(4608)));
  for (int64_t c = 0; c < 3; c++) {
    const std::unordered_map<const UOp*, const UOp*> at{{u, b.c(c)}};
    const UOp* s1 = substitute_nodes(g, shifted, at);
    const UOp* s2 = substitute_nodes(g, moved, at);
    const UOp* s3 = substitute_nodes(g, divs, at);
    EXPECT_EQ(s1, c - 57 == 0 ? x : b.add(x, b.c(c - 57))) << c;
    EXPECT_EQ(s2, c == 0 ? b.add(x, y) : b.add(b.add(x, y), b.c(c))) << c;
    EXPECT_EQ(s3, c == 0 ? x : b.add(x, b.c(c * 4608))) << c;
    EXPECT_EQ(simplify(g, s1), s1) << c;
    EXPECT_EQ(simplify(g, s2), s2) << c;
    for (int64_t i : {0, 5, 13})
      for (int64_t j : {0, 1, 63}) {
        std::unordered_map<const UOp*, int64_t> env{{r0, i}, {r1, j}, {r2, 55 - i}, {u, c}};
        for (auto [before, after] : {std::pair{shifted, s1}, {moved, s2}, {divs, s3}}) {
          int64_t want = 0, got = 0;
          ASSERT_TRUE(eval_int(before, env, &want));
          ASSERT_TRUE(eval_int(after, env, &got));
          EXPECT_EQ(got, want) << c << " " << i << " " << j;
        }
      }
  }
}

// Rebuilder::run over a toposort the caller has builds what get() builds, node for node in the same
// order (so with the same ids), also when fn itself calls get() (lower_reduces does, for a reduce's
// value) and below keep_below. Each runs in a graph of its own, built alike.
TEST(Codegen, RebuilderRunOverAToposortIsGet) {
  for (bool keep : {false, true}) {
    auto rebuilt = [&](bool by_run) {
      Graph g;
      KernelBuilder b{g};
      auto *A = b.param(0, dtypes::float32, 256), *O = b.param(1, dtypes::float32, 64);
      auto *i = b.range(64, 0), *r = b.range(4, 1, AxisType::Reduce);
      const UOp* v = b.load(A, b.add(b.mul(i, b.c(4)), r));
      const UOp* sink = b.sink({b.store(O, i, b.reduce(Op::Add, g.alu(Op::Mul, v, v), {r}))});
      Rebuilder* self = nullptr;
      Rebuilder rb(g, [&](const UOp* u, std::span<const UOp* const> srcs) -> const UOp* {
        if (u->op == Op::Reduce)  // a get() from inside fn
          return g.alu(Op::Add, self->get(u->src(0)), g.cfloat(1.0, dtypes::float32));
        if (u == i) return b.range(64, 7);
        return g.replace_src(u, srcs);
      });
      self = &rb;
      if (keep) rb.keep_below(r->id);
      const UOp* out = by_run ? rb.run(toposort(sink)) : rb.get(sink);
      EXPECT_NE(out, sink);
      std::vector<std::pair<Op, uint32_t>> nodes;
      for (const UOp* u : toposort(out)) nodes.push_back({u->op, u->id});
      return nodes;
    };
    EXPECT_EQ(rebuilt(true), rebuilt(false)) << keep;
  }
}

// A substitution folds the index math over the constants it puts in (x + 0, r * 0, c1 * c2), and
// nothing else: float math stays as it is (x * 0 is not 0 for an infinite x).
TEST(Codegen, SubstitutionFoldsIndexMathOverItsConstants) {
  Graph g;
  KernelBuilder b{g};
  auto* A = b.param(0, dtypes::float32, 256);
  auto *r = b.range(4, 0), *j = b.range(64, 1);
  const UOp* idx = b.add(b.mul(r, b.c(64)), j);
  EXPECT_EQ(substitute_nodes(g, idx, {{r, b.c(0)}}), j);
  const UOp* two = substitute_nodes(g, idx, {{r, b.c(2)}});
  ASSERT_EQ(two->op, Op::Add);
  EXPECT_EQ(two->src(0), b.c(128));
  EXPECT_EQ(two->src(1), j);
  EXPECT_EQ(substitute_nodes(g, b.mul(b.add(r, b.c(3)), j), {{r, b.c(-3)}}), b.c(0));
  const UOp* v = b.load(A, j);
  const UOp* f = g.alu(Op::Mul, v, g.cast(b.add(r, b.c(0)), dtypes::float32));
  const UOp* f0 = substitute_nodes(g, f, {{r, b.c(0)}});
  ASSERT_EQ(f0->op, Op::Mul);  // the cast folds to 0.0f's Cast, the float product stays
  EXPECT_EQ(f0->src(0), v);
}

// The launch stage refuses work-group axes on a target without work-groups (the opts refuse them
// first; a kernel lowered as it is, with optimize off, reaches the stage).
// Lowering `sink` as it is (optimize off) fails with `code` and a message that holds `says`.
void expect_lowering_fails(Graph& g, const UOp* sink, Code code, const std::string& says) {
  LowerOptions o;
  o.optimize = false;
  try {
    lower_kernel(g, sink, test_target(), o);
    ADD_FAILURE() << "lowered; expected: " << says;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.message();
    EXPECT_NE(e.message().find(says), std::string::npos) << e.message();
  }
}

TEST(Codegen, WorkGroupAxesOnATargetWithoutThemAreRefused) {
  for (AxisType t : {AxisType::Local, AxisType::Global, AxisType::GroupReduce}) {
    SCOPED_TRACE(axis_type_name(t));
    Graph g;
    KernelBuilder b{g};
    auto *A = b.param(0, dtypes::float32, 64), *O = b.param(1, dtypes::float32, 64);
    auto* i = b.range(64, 0, t);
    expect_lowering_fails(g, b.sink({b.store(O, i, b.load(A, i))}), Code::Unsupported,
                          "need a target with work-groups");
  }
}

// An UNROLL range outside any reduce cannot be expanded: lowering fails with InvalidArg naming the
// range, not with a loop over it.
TEST(Codegen, UnrollRangeOutsideAReduceIsAnError) {
  Graph g;
  KernelBuilder b{g};
  auto *A = b.param(0, dtypes::float32, 64), *O = b.param(1, dtypes::float32, 64);
  auto* i = b.range(16, 0);
  auto* u = b.range(4, 7, AxisType::Unroll);
  const UOp* at = b.add(b.mul(i, b.c(4)), u);
  expect_lowering_fails(g, b.sink({b.store(O, at, b.load(A, at))}), Code::InvalidArg, "UNROLL range 7");
}

// ---- linearizer placement -------------------------------------------------------------------------

TEST(Codegen, LoopInvariantCodeIsHoisted) {
  // out[i, j] = a[j] * (b[0] + 1) + c[i]: b[0] + 1 before both loops, c[i] before the j loop.
  Graph g;
  KernelBuilder b{g};
  auto *A = b.param(0, dtypes::float32, 8), *B = b.param(1, dtypes::float32, 1), *C = b.param(2, dtypes::float32, 4);
  auto* O = b.param(3, dtypes::float32, 32);
  auto *i = b.range(4, 0), *j = b.range(8, 1);
  auto* inv = b.add(b.load(B, b.c(0)), g.cfloat(1.0));
  auto* ci = b.load(C, i);
  auto* sink = b.sink({b.store(O, b.flat({i, j}, {4, 8}), b.add(b.mul(b.load(A, j), inv), ci))});
  LowerOptions o;
  o.optimize = false;
  LoweredKernel k = lower_kernel(g, sink, test_target(), o);
  const UOp* lin = k.linear;
  size_t ri = first(lin, [&](const UOp* u) { return u->op == Op::Range && u->as<RangeArg>().id == 0; });
  size_t rj = first(lin, [&](const UOp* u) { return u->op == Op::Range && u->as<RangeArg>().id == 1; });
  size_t pinv = first(lin, [&](const UOp* u) { return u == inv; });
  size_t pci = first(lin, [&](const UOp* u) { return u == ci; });
  ASSERT_LT(ri, rj);
  EXPECT_LT(pinv, ri);
  EXPECT_GT(pci, ri);
  EXPECT_LT(pci, rj);
  std::vector<double> a(8), bb{2.5}, c(4), out(32);
  for (int x = 0; x < 8; x++) a[size_t(x)] = x;
  for (int x = 0; x < 4; x++) c[size_t(x)] = 100 * x;
  interpret(k, {{0, &a}, {1, &bb}, {2, &c}, {3, &out}});
  for (int x = 0; x < 4; x++)
    for (int y = 0; y < 8; y++) EXPECT_EQ(out[size_t(x * 8 + y)], y * 3.5 + 100 * x);
}

TEST(Codegen, ContiguousAxisBecomesInnermost) {
  // out[j*R + i] = a[i*C + j] written with i declared first: the store walks j with stride R, i
  // with stride 1, so i should be the inner loop after optimization.
  Graph g;
  KernelBuilder b{g};
  const int64_t R = 16, C = 8;
  auto *A = b.param(0, dtypes::float32, R * C), *O = b.param(1, dtypes::float32, R * C);
  auto *i = b.range(R, 0), *j = b.range(C, 1);
  auto* sink = b.sink({b.store(O, b.flat({j, i}, {C, R}), b.load(A, b.flat({i, j}, {R, C})))});
  LowerOptions o;
  o.allow_threads = false;
  LoweredKernel k = lower_kernel(g, sink, test_target(), o);
  std::vector<int64_t> loop_bounds;
  for (const UOp* u : k.linear->src())
    if (u->op == Op::Range) loop_bounds.push_back(const_bound(u));
  EXPECT_EQ(loop_bounds, (std::vector<int64_t>{C, R}));
  std::vector<double> a(size_t(R * C)), out(size_t(R * C));
  for (size_t x = 0; x < a.size(); x++) a[x] = double(x);
  interpret(k, {{0, &a}, {1, &out}});
  for (int64_t x = 0; x < R; x++)
    for (int64_t y = 0; y < C; y++) EXPECT_EQ(out[size_t(y * R + x)], a[size_t(x * C + y)]);
}

TEST(Codegen, SiblingLoopsAndSymbolicBound) {
  // Two stores with unrelated loops, one bounded by a variable; the second reads a full sum.
  Graph g;
  KernelBuilder b{g};
  auto* n = g.var("n", 1, 10);
  auto *A = b.param(0, dtypes::int32, 10), *O1 = b.param(1, dtypes::int32, 10), *O2 = b.param(2, dtypes::int32, 3);
  auto *i = b.range(n, 0), *j = b.range(3, 1), *k = b.range(n, 2, AxisType::Reduce);
  auto* total = b.reduce(Op::Add, b.load(A, k), {k});
  auto* sink = b.sink({b.store(O1, i, b.mul(b.load(A, i), g.cint(2, dtypes::int32))),
                       b.store(O2, j, b.add(total, g.cast(j, dtypes::int32)))});
  LoweredKernel k2 = lower_kernel(g, sink, test_target());
  ASSERT_EQ(k2.vars.size(), 1u);
  std::vector<double> a(10), o1(10, -1), o2(3, -1);
  for (int x = 0; x < 10; x++) a[size_t(x)] = x + 1;
  interpret(k2, {{0, &a}, {1, &o1}, {2, &o2}}, {{"n", 4}});
  for (int x = 0; x < 10; x++) EXPECT_EQ(o1[size_t(x)], x < 4 ? 2 * (x + 1) : -1);
  for (int x = 0; x < 3; x++) EXPECT_EQ(o2[size_t(x)], 10 + x);
}

TEST(Codegen, ReduceLowersToAccumulator) {
  Graph g;
  KernelBuilder b{g};
  auto *A = b.param(0, dtypes::float32, 12), *O = b.param(1, dtypes::float32, 3);
  auto *i = b.range(3, 0), *r = b.range(4, 1, AxisType::Reduce);
  auto* red = b.reduce(Op::Max, b.load(A, b.flat({i, r}, {3, 4})), {r});
  const UOp* s = lower_reduces(g, b.sink({b.store(O, i, red)}));
  size_t reduces = 0, accs = 0, ends = 0;
  for (const UOp* u : toposort(s)) {
    reduces += u->op == Op::Reduce;
    accs += u->op == Op::Buffer && u->as<BufferArg>().addrspace == AddrSpace::Reg;
    ends += u->op == Op::End;
  }
  EXPECT_EQ(reduces, 0u);
  EXPECT_EQ(accs, 1u);
  EXPECT_EQ(ends, 1u);
  // the identity of max is -inf
  bool has_ninf = false;
  for (const UOp* u : toposort(s))
    has_ninf = has_ninf || (u->op == Op::Const && u->dtype == dtypes::float32 && u->const_float() == -INFINITY);
  EXPECT_TRUE(has_ninf);
}

TEST(Codegen, IselFloorDivision) {
  Graph g;
  KernelBuilder b{g};
  auto* i = b.range(10, 0);
  auto* x = g.var("x", -5, 5);
  // non-negative operands: plain CDiv/CMod
  const UOp* s1 = select_instructions(g, g.alu(Op::Idiv, i, b.c(3)), test_target());
  EXPECT_EQ(s1->op, Op::CDiv);
  const UOp* s2 = select_instructions(g, g.alu(Op::Mod, i, b.c(3)), test_target());
  EXPECT_EQ(s2->op, Op::CMod);
  // maybe-negative numerator: corrected toward -inf; check every value
  for (Op op : {Op::Idiv, Op::Mod}) {
    for (int64_t d : {3, -3}) {
      const UOp* e = select_instructions(g, g.alu(op, x, b.c(d)), test_target());
      bool has_floor = false;
      for (const UOp* u : toposort(e)) has_floor = has_floor || u->op == Op::Idiv || u->op == Op::Mod;
      EXPECT_FALSE(has_floor);
      for (int64_t xv = -5; xv <= 5; xv++) {
        int64_t got = 0;
        ASSERT_TRUE(eval_int(e, {{x, xv}}, &got));
        int64_t q = int64_t(std::floor(double(xv) / double(d)));
        EXPECT_EQ(got, op == Op::Idiv ? q : xv - q * d) << op_name(op) << " " << xv << " " << d;
      }
    }
  }
}

// A comparison of index lanes (a padded convolution's column mask) whose values fit in int32
// compares int32 lanes, the casts sunk to the scalars and constants the lanes are built from; one
// whose values may not fit keeps its int64 lanes.
TEST(Codegen, IselComparesIndexLanesInInt32) {
  Graph g;
  KernelBuilder b{g};
  auto* i = b.range(100, 0);
  auto lanes = [&](const UOp* scale) {
    std::vector<const UOp*> base(8, g.alu(Op::Mul, i, scale)), iota, minus(8, b.c(-1));
    for (int64_t l = 0; l < 8; l++) iota.push_back(b.c(l));
    DType d = dtypes::index.vec(8);
    return g.alu(Op::Add, g.alu(Op::Add, g.make(Op::Vectorize, d, base), g.make(Op::Vectorize, d, iota)),
                 g.make(Op::Vectorize, d, minus));
  };
  const UOp* bound = g.make(Op::Vectorize, dtypes::index.vec(8), std::vector<const UOp*>(8, b.c(33)));
  const UOp* small = select_instructions(g, g.alu(Op::CmpLt, lanes(b.c(8)), bound), test_target());
  ASSERT_EQ(small->op, Op::CmpLt);
  EXPECT_EQ(small->src(0)->dtype, dtypes::int32.vec(8));
  EXPECT_EQ(small->src(1)->dtype, dtypes::int32.vec(8));
  for (const UOp* u : toposort(small)) {
    if (u->dtype.lanes > 1) {
      EXPECT_NE(u->dtype.scalar, Scalar::Index) << op_name(u->op);
    }
    if (u->op == Op::Cast) {
      EXPECT_EQ(u->src(0)->dtype, dtypes::index) << "a cast of lanes is left";
    }
  }
  // i * 2^40 - 1 does not fit in int32: the lanes stay int64
  const UOp* large = select_instructions(g, g.alu(Op::CmpLt, lanes(b.c(int64_t(1) << 40)), bound), test_target());
  ASSERT_EQ(large->op, Op::CmpLt);
  EXPECT_EQ(large->src(0)->dtype, dtypes::index.vec(8));
}

// eval_int_step evaluates an index at r = 0 and r = 1 in one walk (the heuristic's stride
// estimates): checked against two eval_int calls, through floor division, mod, where and a
// variable from the environment.
TEST(Codegen, EvalIntStepMatchesTwoEvaluations) {
  Graph g;
  KernelBuilder b{g};
  auto* r = b.range(16, 0);
  auto* q = b.range(7, 1);
  auto* x = g.var("x", -5, 5);
  const UOp* lin = g.alu(Op::Add, g.alu(Op::Mul, r, b.c(56)), g.alu(Op::Mul, q, b.c(3)));
  const UOp* packed = g.alu(Op::Add, g.alu(Op::Mod, g.alu(Op::Add, r, x), b.c(4)),
                            g.alu(Op::Mul, g.alu(Op::Idiv, g.alu(Op::Add, r, x), b.c(4)), b.c(100)));
  const UOp* gated = g.alu(Op::Where, g.alu(Op::CmpLt, r, b.c(1)), g.alu(Op::Neg, x), g.alu(Op::Mul, x, r));
  for (const UOp* e : {lin, packed, gated})
    for (int64_t xv : {-3, 0, 2}) {
      std::unordered_map<const UOp*, int64_t> env{{x, xv}, {q, 2}};
      int64_t at0 = 0, at1 = 0, want0 = 0, want1 = 0;
      ASSERT_TRUE(eval_int_step(e, env, r, &at0, &at1));
      ASSERT_TRUE(eval_int(e, env, &want0));
      env[r] = 1;
      ASSERT_TRUE(eval_int(e, env, &want1));
      EXPECT_EQ(at0, want0) << xv;
      EXPECT_EQ(at1, want1) << xv;
    }
  int64_t a = 0, c = 0;
  ASSERT_TRUE(eval_int_step(lin, {{q, 2}}, r, &a, &c));
  EXPECT_EQ(a, 6);
  EXPECT_EQ(c, 62);  // the stride along r is 56
  // by hand, floor semantics: x = -3 gives (-3 mod 4) + (-3 // 4) * 100 = 1 - 100, then 2 - 100
  ASSERT_TRUE(eval_int_step(packed, {{x, -3}}, r, &a, &c));
  EXPECT_EQ(a, -99);
  EXPECT_EQ(c, -98);
  // a float anywhere: not evaluable
  auto* A = b.param(0, dtypes::float32, 16);
  EXPECT_FALSE(eval_int_step(b.load(A, r), {}, r, &a, &c));
}

// isel decomposes the transcendentals the target lacks in its own rewrite: the same kernel as
// selecting first and decomposing after (interned, so the same node), for float16 math (computed in
// float32, then decomposed) and float32 math beside a floor division.
TEST(Codegen, IselDecomposesTranscendentalsInOneRewrite) {
  Graph g;
  KernelBuilder b{g};
  auto* H = b.param(0, dtypes::float16, 8);
  auto* F = b.param(1, dtypes::float32, 8);
  auto* i = b.range(8, 0);
  auto* x = g.var("x", -5, 5);
  const UOp* h = b.load(H, i);
  const UOp* f = b.load(F, g.alu(Op::Idiv, g.alu(Op::Add, i, x), b.c(2)));
  std::vector<const UOp*> values{g.alu(Op::Exp2, h), g.alu(Op::Log2, f), g.alu(Op::Sqrt, f), g.alu(Op::Sin, f),
                                 g.alu(Op::Pow, f, g.alu(Op::Exp2, f))};
  Target soft = test_target(), native = test_target();
  soft.native_math.clear();
  for (const UOp* v : values) {
    const UOp* merged = select_instructions(g, v, soft);
    EXPECT_EQ(merged, decompose_transcendentals(g, select_instructions(g, v, native))) << op_name(v->op);
    for (const UOp* u : toposort(merged)) {
      EXPECT_FALSE(u->op == Op::Exp2 || u->op == Op::Log2 || u->op == Op::Sqrt || u->op == Op::Sin || u->op == Op::Pow)
          << op_name(v->op) << " left " << op_name(u->op);
      EXPECT_FALSE(u->op == Op::Idiv || u->op == Op::Mod) << op_name(v->op);
      if (is_elementwise(u->op) && u->op != Op::Cast) {
        EXPECT_NE(u->dtype.scalar, Scalar::Float16) << op_name(u->op);
      }
    }
  }
}

TEST(Codegen, HalfMathIsComputedInFloat) {
  Graph g;
  KernelBuilder b{g};
  auto* A = b.param(0, dtypes::float16, 4);
  auto* i = b.range(4, 0);
  auto* x = b.load(A, i);
  const UOp* e = select_instructions(g, g.alu(Op::Add, x, x), test_target());
  ASSERT_EQ(e->op, Op::Cast);
  EXPECT_EQ(e->dtype, dtypes::float16);
  EXPECT_EQ(e->src(0)->op, Op::Add);
  EXPECT_EQ(e->src(0)->dtype, dtypes::float32);
}

TEST(Codegen, RejectsNonKernelIr) {
  Graph g;
  KernelBuilder b{g};
  auto* A = b.param(0, dtypes::float32, 4);
  auto* i = b.range(4, 0);
  EXPECT_THROW(lower_kernel(g, b.load(A, i), test_target()), Error);  // root is not a Sink
  auto* bad = g.make(Op::Sink, dtypes::void_,
                     {g.make(Op::Store, dtypes::void_, {b.index(A, i), g.cfloat(1.0, dtypes::float64)})});
  EXPECT_THROW(lower_kernel(g, bad, test_target()), Error);  // stores a float64 into float32
}

TEST(Codegen, KernelKeyDependsOnTargetAndOptions) {
  Matmul mm(4, 4, 4);
  LowerOptions a, b;
  b.allow_threads = false;
  EXPECT_EQ(kernel_key(mm.sink, test_target()), kernel_key(mm.sink, test_target()));
  EXPECT_NE(kernel_key(mm.sink, test_target(), a), kernel_key(mm.sink, test_target(), b));
  EXPECT_NE(kernel_key(mm.sink, test_target(2)), kernel_key(mm.sink, test_target(4)));
}

// ---- thread pool --------------------------------------------------------------------------------

TEST(ThreadPool, RunsEveryIndexOnce) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3);
  for (int64_t n : {1, 2, 3, 7, 100}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    pool.parallel_for(n, [&](int64_t i) { hits[size_t(i)]++; });
    for (int64_t i = 0; i < n; i++) ASSERT_EQ(hits[size_t(i)].load(), 1) << n << " " << i;
  }
}

TEST(ThreadPool, RethrowsAndNests) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(4,
                                 [](int64_t i) {
                                   if (i == 2) fail(Code::Internal, "task ", i);
                                 }),
               Error);
  std::atomic<int> inner{0};
  pool.parallel_for(2, [&](int64_t) { pool.parallel_for(3, [&](int64_t) { inner++; }); });
  EXPECT_EQ(inner.load(), 6);
  // still usable after an exception
  std::atomic<int> n{0};
  pool.parallel_for(5, [&](int64_t) { n++; });
  EXPECT_EQ(n.load(), 5);
}

// The caller waits for the workers' share whether it ends while the caller still spins (50 us)
// or after it has gone to sleep (20 ms), and sees what that share wrote.
TEST(ThreadPool, WaitsForALateWorker) {
  ThreadPool pool(2);
  for (int us : {50, 20000}) {
    for (int round = 0; round < 5; round++) {
      std::atomic<int> done{0};
      int written = 0;  // plain: parallel_for's return must order the worker's write before our read
      pool.parallel_for(2, [&](int64_t i) {
        if (i == 1) {
          std::this_thread::sleep_for(std::chrono::microseconds(us));
          written = 7;
        }
        done++;
      });
      ASSERT_EQ(done.load(), 2) << us;
      ASSERT_EQ(written, 7) << us;
    }
  }
}

}  // namespace
}  // namespace sn
