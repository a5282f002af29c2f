// OptOps as data: printing and parsing, replaying a heuristic's choices, and the semantics of Padto
// and Swap (checked against the oracle through the compiled CPU path).
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <set>

#include "core/codegen/codegen.h"
#include "core/codegen/kernel_util.h"
#include "core/opt/opt.h"
#include "core/opt/search.h"
#include "core/pipeline.h"
#include "core/schedule/finite.h"
#include "core/schedule/schedule.h"
#include "core/tensor/compose.h"
#include "core/tensor/gradient.h"
#include "core/tensor/tensor.h"
#include "tests/unit/test_codegen_kernels.h"
#include "tests/unit/test_pipeline_util.h"
#include "tests/util/ops_case.h"
#include "tests/util/test_helpers.h"

namespace sn {
namespace {

// A CPU-like target (threads, 256-bit vectors) and a GPU-like one (work-groups, local memory).
Target cpu_like() {
  Target t;
  t.renderer = "TEST_CPU";
  t.has_threads = true;
  t.cores = 4;
  t.vector_bits = 256;
  return t;
}
// cpu_like with AVX-512's registers: 32 of 512 bits.
Target avx512_like() {
  Target t = cpu_like();
  t.vector_bits = 512;
  t.vector_registers = 32;
  return t;
}
Target gpu_like() {
  Target t;
  t.renderer = "TEST_GPU";
  t.has_local = t.has_shared = true;
  t.local_memory_bytes = 32768;
  t.max_local_size = {1024, 1024, 64};
  t.max_local_total = 1024;
  t.max_global_size = {2147483647, 65535, 65535};
  return t;
}

TEST(Opts, PrintAndParseRoundTrip) {
  std::vector<Opt> opts{Opt::upcast(1, 4),
                        Opt::unroll(2, 8),
                        Opt::thread(0, 2),
                        Opt::local(3, 16),
                        Opt::group(2, 16),
                        Opt::group(2, 16, true),
                        Opt::padto(1, 32),
                        Opt::swap(0, 2),
                        Opt::nolocals(),
                        Opt::split(4, 2, AxisType::Upcast, true),
                        Opt::split(3, 64, AxisType::Loop)};
  for (const Opt& o : opts) {
    Opt back;
    ASSERT_TRUE(parse_opt(opt_str(o), &back)) << opt_str(o);
    EXPECT_EQ(back, o) << opt_str(o);
  }
  EXPECT_EQ(opt_str(Opt::group(2, 16, true)), "GROUPTOP(2,16)");
  EXPECT_EQ(opt_str(Opt::split(4, 2, AxisType::Upcast, true)), "SPLIT(4,2,UPCAST,top)");
  EXPECT_EQ(opt_str(Opt::split(3, 64, AxisType::Loop)), "SPLIT(3,64,LOOP)");
  Opt o;
  for (const char* bad : {"", "UPCAST", "UPCAST(1)", "UPCAST(a,4)", "FOO(1,2)", "SPLIT(1,2,LOOPY)", "PADTO(1,2,3)"})
    EXPECT_FALSE(parse_opt(bad, &o)) << bad;
}

// The last scheduled kernel whose name starts with `prefix` ("r_": a reduce, "E_": elementwise), or nullptr.
const ScheduledKernel* kernel_named(const Schedule& s, const std::string& prefix) {
  const ScheduledKernel* found = nullptr;
  for (const ScheduledKernel& k : s.kernels)
    if (kernel_name(k.ast).rfind(prefix, 0) == 0) found = &k;
  return found;
}
const ScheduledKernel* kernel_named(const Schedule&& s, const std::string& prefix) = delete;  // would dangle

// The amounts of the splits into axes of `type` among `opts`, in order.
std::vector<int64_t> split_amounts(const std::vector<Opt>& opts, AxisType type) {
  std::vector<int64_t> out;
  for (const Opt& o : opts)
    if (o.op == OptOp::Split && o.type == type) out.push_back(o.amount);
  return out;
}

// Lowers every kernel of `outs` with the heuristic, then again with the opts it chose: the same
// Linear comes out (nodes are hash-consed, so equal kernels are the same node).
int expect_replays(Graph& g, const std::vector<const UOp*>& outs, const Target& t, const std::string& what) {
  Schedule s = schedule_graph(g, outs);
  int kernels = 0;
  for (const ScheduledKernel& k : s.kernels) {
    LoweredKernel a = lower_kernel(g, k.ast, t);
    LowerOptions forced;
    forced.opts = a.opts;
    LoweredKernel b = lower_kernel(g, k.ast, t, forced);
    std::string opts;
    for (const Opt& o : a.opts) opts += opt_str(o) + " ";
    EXPECT_EQ(a.linear, b.linear) << what << " on " << t.renderer << ": " << a.name << " {" << opts << "}";
    EXPECT_EQ(a.threads, b.threads) << what;
    kernels++;
  }
  return kernels;
}

TEST(Opts, HeuristicChoicesReplayTheSameKernel) {
  int kernels = 0;
  for (const Target& t : {cpu_like(), gpu_like()}) {
    // the benchmark's kernels, at sizes that keep the test quick
    {
      Graph g;
      const UOp *a = input(g, dtypes::float32, {256, 256}), *b = input(g, dtypes::float32, {256, 256});
      kernels += expect_replays(g, {matmul(g, a, b)}, t, "matmul");
    }
    {
      Graph g;
      const UOp* x = input(g, dtypes::float32, {512, 512});
      kernels += expect_replays(g, {softmax(g, x, 1), reduce(g, x, Op::Add, {0, 1}), add(g, x, x)}, t, "softmax");
    }
    {
      Graph g;
      const UOp *x = input(g, dtypes::float32, {1, 16, 28, 28}), *w = input(g, dtypes::float32, {16, 16, 3, 3});
      kernels += expect_replays(g, {conv2d(g, x, w, nullptr, {1, 1}, {1, 1})}, t, "conv2d");
    }
    // every conformance program
    int cases = testutil::run_ops_cases([&](Graph& g, const testutil::OpsCase& c) {
      kernels += expect_replays(g, {c.program.root}, t, "case");
      return oracle::evaluate(c.program.root, [&] {
        oracle::BufferData buffers;
        for (const auto& [input_name, buf] : c.program.buffers) buffers[buf] = c.data.at(input_name);
        return buffers;
      }());
    });
    EXPECT_EQ(cases, testutil::kOpsCases);
  }
  EXPECT_GT(kernels, 200);
}

// A matrix-vector product has one output axis: its vector lanes take extra copies along that same
// axis (several adjacent vectors of each row per reduce step), and the kernel replays.
TEST(Opts, MatvecWidensItsVectorAxis) {
  Graph g;
  const UOp *x = input(g, dtypes::float32, {1, 512}), *w = input(g, dtypes::float32, {512, 512});
  std::vector<const UOp*> outs{matmul(g, x, w)};
  Schedule s = schedule_graph(g, outs);
  ASSERT_EQ(s.kernels.size(), 1u);
  LoweredKernel k = lower_kernel(g, s.kernels[0].ast, cpu_like());
  int upcasts = 0;
  for (const Opt& o : k.opts) upcasts += o.op == OptOp::Split && o.type == AxisType::Upcast;
  EXPECT_EQ(upcasts, 2) << opts_str(k.opts);
  EXPECT_EQ(expect_replays(g, outs, cpu_like(), "matvec"), 1);
}

// A tensor of one-byte elements may have 2^63 - 2 of them and compile (no device could hold it):
// the heuristics leave its kernels untiled, where padding the axis to whole vectors overflowed
// int64 (libFuzzer, tests/fuzz/regressions/heuristic-pads-an-axis-of-2-pow-63-minus-2), and a
// forced PADTO whose padded length passes int64 is an error that says so.
TEST(Opts, AnAxisPastAnyDeviceIsLeftUntiledAndCannotBePadded) {
  Graph g;
  const int64_t n = std::numeric_limits<int64_t>::max() - 1;
  const UOp* x = input(g, dtypes::fp8e4m3, {n});
  std::vector<const UOp*> outs{mul(g, x, x)};
  Schedule s = schedule_graph(g, outs);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_TRUE(lower_kernel(g, s.kernels[0].ast, cpu_like()).opts.empty());
  EXPECT_TRUE(optimize_kernel(g, s.kernels[0].ast, gpu_like(), LowerOptions{}).applied.empty());
  OptState k = start_optimization(g, s.kernels[0].ast, cpu_like());
  try {
    apply_opt(g, k, Opt::padto(0, 16), cpu_like());
    ADD_FAILURE() << "PADTO(0,16) of an axis of " << n << " was applied";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::InvalidArg);
    EXPECT_NE(e.message().find("padded length"), std::string::npos) << e.message();
  }
}

// BEAM's steps split an axis by the amounts that divide it among 2, 3, 4, 5, 7, 8, 16, and by the
// whole axis (up to 32): a 14-wide row by 7 and 14, a 3-tap filter by 3 (before, only 2, 4, 8, 16
// for unrolls and 2, 3, 4, 8, 16 for upcasts, so neither a row of 14 nor a filter tap could be).
TEST(Opts, BeamActionsSplitByWholeAxesAndOddAmounts) {
  Graph g;
  const UOp *x = input(g, dtypes::float32, {1, 16, 14, 14}), *w = input(g, dtypes::float32, {16, 16, 3, 3});
  std::vector<const UOp*> outs{conv2d(g, x, w, nullptr, {1, 1}, {1, 1})};
  Schedule s = schedule_graph(g, outs);
  const ScheduledKernel* conv = nullptr;
  for (const ScheduledKernel& k : s.kernels)
    if (kernel_name(k.ast).find("_3_3") != std::string::npos) conv = &k;
  ASSERT_NE(conv, nullptr);
  LowerOptions plain;
  plain.opts.emplace();  // no opts: the plain loop nest
  LoweredKernel k = lower_kernel(g, conv->ast, cpu_like(), plain);
  const UOp* sink = nullptr;
  for (const auto& [name, root] : k.stages)
    if (name == "optimized") sink = root;
  ASSERT_NE(sink, nullptr);
  std::vector<Opt> acts = beam_actions(sink, cpu_like(), {}, true);
  std::map<int64_t, std::pair<int64_t, AxisType>> axes;  // id -> (bound, type)
  for (const UOp* r : ranges_of(sink)) axes[r->as<RangeArg>().id] = {const_bound(r), r->as<RangeArg>().type};
  std::map<int64_t, std::set<int64_t>> amounts;  // axis id -> amounts of its upcasts or unrolls
  std::set<std::string> seen;
  for (const Opt& o : acts) {
    EXPECT_TRUE(seen.insert(opt_str(o)).second) << "twice: " << opt_str(o);
    if (o.op == OptOp::Split && (o.type == AxisType::Upcast || o.type == AxisType::Unroll))
      amounts[o.axis].insert(o.amount);
  }
  const std::map<int64_t, std::set<int64_t>> want = {{14, {2, 7, 14}}, {16, {2, 4, 8, 16}}, {3, {3}}};
  int checked = 0;
  for (const auto& [id, axis] : axes) {  // every axis: output channels, rows, columns, input channels, taps
    SCOPED_TRACE(cat("axis ", id, " of ", axis.first));
    EXPECT_EQ(amounts[id], want.at(axis.first));
    checked++;
  }
  EXPECT_EQ(checked, 6);
}

// On a CPU, BEAM also offers a sum's reduce axis in blocks of 8 and 64 steps looping on their own
// (SPLIT(k, blocks, LOOP, top)), not a max's, and not on a GPU.
TEST(Opts, BeamActionsOfferReduceBlocksForSums) {
  Graph g;
  const UOp* w = input(g, dtypes::float32, {512, 1024});
  for (const Op op : {Op::Add, Op::Max})
    for (const Target& t : {cpu_like(), gpu_like()}) {
      std::vector<const UOp*> outs{reduce(g, w, op, {0})};
      Schedule s = schedule_graph(g, outs);
      ASSERT_EQ(s.kernels.size(), 1u);
      LowerOptions plain;
      plain.opts.emplace();
      LoweredKernel k = lower_kernel(g, s.kernels[0].ast, t, plain);
      const UOp* sink = nullptr;
      for (const auto& [name, root] : k.stages)
        if (name == "optimized") sink = root;
      ASSERT_NE(sink, nullptr);
      std::vector<const UOp*> loops, reduces;
      classify_ranges(sink, &loops, &reduces);
      ASSERT_EQ(reduces.size(), 1u);
      std::vector<int64_t> blocks;
      for (const Opt& o : beam_actions(sink, t, {}, true))
        if (o.op == OptOp::Split && o.type == AxisType::Loop && o.top && o.axis == reduces[0]->as<RangeArg>().id)
          blocks.push_back(o.amount);
      const bool offered = op == Op::Add && t.renderer == "TEST_CPU";
      const std::vector<int64_t> want = offered ? std::vector<int64_t>{64, 8} : std::vector<int64_t>{};
      EXPECT_EQ(blocks, want) << t.renderer;
    }
}

// BEAM does not offer the swap that undoes the last opt (the kernel of two steps back), and still
// offers every other swap.
TEST(Opts, BeamActionsDoNotUndoTheLastSwap) {
  Graph g;
  std::vector<const UOp*> outs{add(g, input(g, dtypes::float32, {8, 16, 32}), input(g, dtypes::float32, {8, 16, 32}))};
  Schedule s = schedule_graph(g, outs);
  ASSERT_EQ(s.kernels.size(), 1u);
  auto optimized = [&](const std::vector<Opt>& opts) {
    LowerOptions lo;
    lo.opts = opts;
    LoweredKernel k = lower_kernel(g, s.kernels[0].ast, cpu_like(), lo);
    for (const auto& [name, root] : k.stages)
      if (name == "optimized") return root;
    return static_cast<const UOp*>(nullptr);
  };
  auto swaps = [](const std::vector<Opt>& acts) {
    std::set<std::pair<int64_t, int64_t>> out;  // unordered pairs
    for (const Opt& o : acts)
      if (o.op == OptOp::Swap) out.insert({std::min(o.axis, o.amount), std::max(o.axis, o.amount)});
    return out;
  };
  const UOp* plain = optimized({});
  ASSERT_NE(plain, nullptr);
  std::set<std::pair<int64_t, int64_t>> all = swaps(beam_actions(plain, cpu_like(), {}, true));
  ASSERT_EQ(all.size(), 3u);  // three loops: three pairs
  const Opt first = Opt::swap(all.begin()->first, all.begin()->second);
  const UOp* swapped = optimized({first});
  ASSERT_NE(swapped, nullptr);
  std::set<std::pair<int64_t, int64_t>> after = swaps(beam_actions(swapped, cpu_like(), {first}, true));
  std::set<std::pair<int64_t, int64_t>> want = all;
  want.erase(*all.begin());
  EXPECT_EQ(after, want);
  // one opt later, the pair may be swapped again
  const Opt up = Opt::upcast(all.rbegin()->second, 2);
  const UOp* later = optimized({first, up});
  ASSERT_NE(later, nullptr);
  EXPECT_EQ(swaps(beam_actions(later, cpu_like(), {first, up}, true)), all);
}

// A convolution's register tile unrolls its filter width (the innermost axis of the sum, not a max
// pool's window around it), and the unrolled products go into the accumulators as one chain of
// Mulaccs: no float multiply is left on its own.
TEST(Opts, ConvolutionUnrollsItsFilterWidthIntoFmaChains) {
  for (bool pooled : {false, true}) {
    Graph g;
    const UOp *x = input(g, dtypes::float32, {2, 8, 32, 32}), *w = input(g, dtypes::float32, {16, 8, 3, 3});
    const UOp* y = relu(g, conv2d(g, x, w, nullptr, {1, 1}, {1, 1}));
    std::vector<const UOp*> outs{pooled ? max_pool2d(g, y, {2, 2}, {2, 2}) : y};
    Schedule s = schedule_graph(g, outs);
    const ScheduledKernel* conv = nullptr;
    for (const ScheduledKernel& k : s.kernels)
      if (kernel_name(k.ast).find("_3_3") != std::string::npos) conv = &k;
    ASSERT_NE(conv, nullptr);
    LoweredKernel k = lower_kernel(g, conv->ast, cpu_like());
    std::vector<int64_t> unrolled;
    for (const Opt& o : k.opts)
      if (o.op == OptOp::Split && o.type == AxisType::Unroll) unrolled.push_back(o.amount);
    EXPECT_EQ(unrolled, std::vector<int64_t>{3}) << (pooled ? "pooled: " : "") << opts_str(k.opts);
    int mulaccs = 0, muls = 0;
    for (const UOp* u : toposort(k.linear)) {
      mulaccs += u->op == Op::Mulacc;
      muls += u->op == Op::Mul && u->dtype.is_float();
    }
    EXPECT_GE(mulaccs, 3) << linear_str(k.linear);
    EXPECT_EQ(muls, 0) << linear_str(k.linear);
    EXPECT_EQ(expect_replays(g, outs, cpu_like(), pooled ? "conv+pool" : "conv"), int(s.kernels.size()));
  }
}

// On an AVX-512-like target, a 3x3 convolution whose rows do not fill 16 lanes (28, 14 or 7 wide) reads its
// weight with the output channels innermost and makes 32 of them the vector lanes, with 7 columns as copies:
// no row padded to 16 lanes (14), no 4 copies where 7 divide (28). The kernels replay.
TEST(Opts, NarrowRowsTakeOutputChannelLanesAndSevenColumns) {
  Target t = avx512_like();
  for (int64_t hw : {28, 14, 7}) {
    Graph g;
    const UOp *x = input(g, dtypes::float32, {1, 16, hw, hw}), *w = input(g, dtypes::float32, {64, 16, 3, 3});
    std::vector<const UOp*> outs{conv2d(g, x, w, nullptr, {1, 1}, {1, 1})};
    Schedule s = schedule_graph(g, outs);
    const ScheduledKernel* conv = kernel_named(s, "r_");
    ASSERT_NE(conv, nullptr) << hw;
    EXPECT_EQ(s.kernels.size(), 2u) << hw << ": the weight is copied with its output channels innermost";
    LoweredKernel k = lower_kernel(g, conv->ast, t);
    for (const Opt& o : k.opts) EXPECT_NE(o.op, OptOp::Padto) << hw << ": " << opts_str(k.opts);
    EXPECT_EQ(split_amounts(k.opts, AxisType::Upcast), (std::vector<int64_t>{32, 7})) << hw << ": " << opts_str(k.opts);
    EXPECT_EQ(expect_replays(g, outs, t, "conv " + std::to_string(hw)), 2);
  }
}

// With AVX2's 16 vector registers a 3x3 convolution's tile fits the accumulators in 8 of them: 16
// output-channel lanes (two registers) x 4 columns where 4 copies divide the map (56, 28; also
// where the rows would fill one register of lanes), with the filter's height unrolled beside its
// width; one register of 8 channel lanes x 7 columns where 4 copies divide nothing (14, 7), with
// the filter's height unrolled too where the 7 columns are not the whole row (14). The kernels
// compiled with those opts on this machine match the oracle.
class Avx2Tiles : public testrt::OracleFixture<20261128> {
 protected:
  // The last kernel of outs' schedule whose name starts with `prefix` (the schedule stays here),
  // scheduled as a compile for this machine's CPU schedules it (its matmul panels).
  // `panel`: the packed panels' width (0: this machine's).
  const ScheduledKernel* scheduled(const std::vector<const UOp*>& outs, const std::string& prefix, int64_t panel = 0) {
    if (panel == 0) panel = machine_panel();
    sched_ = schedule_graph(g, outs, {}, ScheduleOptions{.packed_panel = panel});
    return kernel_named(sched_, prefix);
  }
  static int64_t machine_panel() { return testrt::runtime().device()->target().packed_panel; }
  // outs, compiled with `opts` forced on kernel k and run on this machine, match the oracle.
  void expect_forced_match(const std::vector<const UOp*>& outs, const ScheduledKernel* k, const std::vector<Opt>& opts,
                           const std::string& what) {
    CompileOptions forced;
    forced.kernel_opts[k->ast->content_hash()] = opts;
    testrt::expect_matches_oracle(g, outs, data, what, 1e-4, 1e-4, forced);
  }
  // This machine's CPU target with `bytes` of cache per core (0: unknown) on 2 cores; as AVX2
  // (16 registers of 256 bits, no gathers, 8-wide panels) where avx2 is set.
  static Target with_caches(int64_t bytes, bool avx2 = false) {
    Target t = testrt::runtime().device()->target();
    t.cache_bytes = bytes;
    t.cores = 2;
    if (avx2) {
      t.vector_bits = 256;
      t.vector_registers = 16;
      t.has_gather_scatter = false;
      t.packed_panel = kAvx2Panel;
    }
    return t;
  }
  // The copy that packs B of a 64x256 @ 256xn matmul into `panel`-wide panels (AVX2's 8 unless
  // said), as a machine with those panels schedules it; the matmul in *outs.
  static constexpr int64_t kAvx2Panel = 8;
  const ScheduledKernel* packing_copy(int64_t n, std::vector<const UOp*>* outs, int64_t panel = kAvx2Panel) {
    const UOp* a = in(dtypes::float32, {64, 256});
    const UOp* b = in(dtypes::float32, {256, n});
    *outs = {matmul(g, a, b)};
    return scheduled(*outs, "E_", panel);
  }
  // The innermost loop of a lowered kernel, or nullptr.
  static const UOp* innermost_range(const LoweredKernel& k) {
    const UOp* innermost = nullptr;
    for (const UOp* u : k.linear->src())
      if (u->op == Op::Range) innermost = u;
    return innermost;
  }
  // Whether this machine schedules outs as packing_copy does (its panels are AVX2's), so that opts
  // chosen for that copy can be forced on a program compiled here.
  static bool runs_avx2_panels_here() { return machine_panel() == kAvx2Panel; }

 private:
  Schedule sched_;
};
TEST_F(Avx2Tiles, ConvolutionTilesFitSixteenRegisters) {
  Target t = cpu_like();
  t.vector_bits = 256;
  t.vector_registers = 16;
  struct Want {
    int64_t hw, channels;
    std::vector<int64_t> upcasts, unrolls;
  };
  for (const Want& want : {Want{56, 4, {16, 4}, {3, 3}}, Want{28, 32, {16, 4}, {3, 3}}, Want{14, 4, {8, 7}, {3, 3}},
                           Want{7, 32, {8, 7}, {3}}}) {
    const int64_t hw = want.hw;
    const UOp *x = in(dtypes::float32, {1, want.channels, hw, hw}), *w = in(dtypes::float32, {64, want.channels, 3, 3});
    std::vector<const UOp*> outs{conv2d(g, x, w, nullptr, {1, 1}, {1, 1})};
    const ScheduledKernel* conv = scheduled(outs, "r_");
    ASSERT_NE(conv, nullptr) << hw;
    LoweredKernel k = lower_kernel(g, conv->ast, t);
    for (const Opt& o : k.opts) EXPECT_NE(o.op, OptOp::Padto) << hw << ": " << opts_str(k.opts);
    EXPECT_EQ(split_amounts(k.opts, AxisType::Upcast), want.upcasts) << hw << ": " << opts_str(k.opts);
    EXPECT_EQ(split_amounts(k.opts, AxisType::Unroll), want.unrolls) << hw << ": " << opts_str(k.opts);
    EXPECT_EQ(expect_replays(g, outs, t, "conv " + std::to_string(hw)), 2);
    expect_forced_match(outs, conv, k.opts, "conv " + std::to_string(hw) + " with AVX2's tile");
  }
}

// The copy that packs a 3x3 convolution's weight (output channels innermost) reads each output
// channel's filters, Cin x 3 x 3 contiguous weights in both layouts and one axis of the copy, in
// square tiles when it copies 2^19 elements or more: 8 lanes of stored channels (AVX2's vector) by
// 8 copies along the filters, the copies' loop innermost. Expand loads each tile's 8 rows as
// vectors, whose columns the renderer transposes in registers, with or without gathers: no load of
// the kernel reads its lanes apart. A smaller copy keeps its lanes only (a tile costs more compile
// time than it saves). The programs with these choices match the oracle.
TEST_F(Avx2Tiles, WeightPackingTransposesSquareTiles) {
  auto swaps = [](const std::vector<Opt>& os) {
    return std::count_if(os.begin(), os.end(), [](const Opt& o) { return o.op == OptOp::Swap; });
  };
  for (const int64_t in_channels : {8, 128}) {  // 64x8x3x3: 4608 elements; 512x128x3x3: 589824
    const int64_t out_channels = in_channels == 8 ? 64 : 512;
    const UOp *x = in(dtypes::float32, {1, in_channels, 4, 4}),
              *w = in(dtypes::float32, {out_channels, in_channels, 3, 3});
    std::vector<const UOp*> outs{conv2d(g, x, w, nullptr, {1, 1}, {1, 1})};
    const ScheduledKernel* pack = scheduled(outs, "E_");
    ASSERT_NE(pack, nullptr);
    const int64_t panel = machine_panel(), run = in_channels * 9;
    EXPECT_EQ(kernel_name(pack->ast), cat("E_", out_channels / panel, "_", run, "_", panel));
    for (const bool gathers : {false, true}) {
      Target t = cpu_like();
      t.vector_registers = 16;
      t.has_gather_scatter = gathers;
      const LoweredKernel k = lower_kernel(g, pack->ast, t);
      const bool large = in_channels == 128;
      const std::vector<int64_t> want = large ? std::vector<int64_t>{8, 8} : std::vector<int64_t>{8};
      EXPECT_EQ(split_amounts(k.opts, AxisType::Upcast), want) << opts_str(k.opts);
      // the filters' loop goes innermost: by a swap where the panel is wider than the lanes, else
      // it is innermost once the panel's channels are all lanes
      EXPECT_EQ(swaps(k.opts), large && panel > 8 ? 1 : 0) << opts_str(k.opts);
      const UOp* innermost = innermost_range(k);
      size_t apart = 0;  // loads of lanes apart: gathers, scalar loads put together
      for (const UOp* u : k.linear->src()) {
        if (u->op == Op::Load && u->src(0)->src(1)->dtype.lanes > 1) apart++;
        if (u->op == Op::Vectorize && u->src(0)->op == Op::Load) apart++;
      }
      ASSERT_NE(innermost, nullptr) << linear_str(k.linear);
      // (small: the rest of a wider panel's loop, or the filters' where the panel is all lanes)
      EXPECT_EQ(const_bound(innermost), large ? run / 8 : panel > 8 ? panel / 8 : run) << linear_str(k.linear);
      EXPECT_EQ(apart == 0, large) << linear_str(k.linear);
      expect_forced_match(outs, pack, k.opts, "conv with its weight packed in square tiles, " + opts_str(k.opts));
    }
  }
}

// A transpose of 2^19 elements (512x1024 -> 1024x512) is copied in square tiles, 8 x 8 with AVX2's
// vectors, with or without gathers: no load reads its lanes apart. With those opts forced, and
// with this machine's own choice, the program matches the oracle exactly.
TEST_F(Avx2Tiles, TransposesReadSquareTiles) {
  std::vector<const UOp*> outs{permute(g, in(dtypes::float32, {512, 1024}), {1, 0})};
  const ScheduledKernel* copy = scheduled(outs, "E_");
  ASSERT_NE(copy, nullptr);
  for (const bool gathers : {false, true}) {
    Target t = cpu_like();
    t.vector_registers = 16;
    t.has_gather_scatter = gathers;
    const LoweredKernel k = lower_kernel(g, copy->ast, t);
    EXPECT_EQ(split_amounts(k.opts, AxisType::Upcast), (std::vector<int64_t>{8, 8})) << opts_str(k.opts);
    size_t apart = 0, rows = 0;
    for (const UOp* u : k.linear->src()) {
      if (u->op == Op::Load) (u->src(0)->src(1)->dtype.lanes > 1 ? apart : rows) += u->dtype.lanes == 8;
      if (u->op == Op::Vectorize && u->src(0)->op == Op::Load) apart++;
    }
    EXPECT_EQ(apart, 0u) << linear_str(k.linear);
    EXPECT_EQ(rows, 8u) << linear_str(k.linear);
    expect_forced_match(outs, copy, k.opts, "transpose in square tiles, " + opts_str(k.opts));
  }
  testrt::expect_matches_oracle(g, outs, data, "transpose", 0, 0);
}

// The copy that packs a matmul's B into panels reads, per panel, a few columns of every row of B:
// less than a cache line per step of its outer loop (the panels), rows 8 KiB apart in its inner one.
// From a B larger than the caches of all cores, the rows are blocked by 16 and the blocks loop
// outside the panels (a SPLIT and a SWAP): the innermost loop walks 16 rows, and consecutive panels
// read on along the same lines (a target of 2 cores with 256 KiB each, against 2 MiB of B). A B the
// caches hold, or rows under a page apart (N = 256), keep their order. The program with the blocked
// copy matches the oracle (on a machine with AVX2's panels: a 32-wide panel reads whole lines).
TEST_F(Avx2Tiles, PackingCopyReadsRowsInBlocks) {
  const Target small_caches = with_caches(int64_t(256) << 10, /*avx2=*/true);
  for (const int64_t n : {2048, 256}) {
    std::vector<const UOp*> outs;
    const ScheduledKernel* pack = packing_copy(n, &outs);
    ASSERT_NE(pack, nullptr);
    const LoweredKernel k = lower_kernel(g, pack->ast, small_caches);
    const bool blocked = n == 2048;
    EXPECT_EQ(split_amounts(k.opts, AxisType::Loop), blocked ? std::vector<int64_t>{16} : std::vector<int64_t>{})
        << opts_str(k.opts);
    const UOp* innermost = innermost_range(k);
    ASSERT_NE(innermost, nullptr) << linear_str(k.linear);
    if (!blocked) continue;
    EXPECT_EQ(const_bound(innermost), 16) << linear_str(k.linear);
    if (runs_avx2_panels_here())
      expect_forced_match(outs, pack, k.opts, "matmul with B packed in blocks of rows, " + opts_str(k.opts));
    // 2 MiB of B with this machine's caches (Target::cache_bytes per core; 0, unknown, never blocks)
    const Target cpu = with_caches(testrt::runtime().device()->target().cache_bytes, /*avx2=*/true);
    const bool blocked_here = cpu.all_cache_bytes() > 0 && (int64_t(2) << 20) > cpu.all_cache_bytes();
    const LoweredKernel here = lower_kernel(g, pack->ast, cpu);
    EXPECT_EQ(split_amounts(here.opts, AxisType::Loop),
              blocked_here ? std::vector<int64_t>{16} : std::vector<int64_t>{})
        << opts_str(here.opts) << ", " << cpu.cache_bytes << " bytes of cache per core";
  }
}

// Into AVX-512's 32-wide panels the copy reads 128 bytes, whole lines, of each row per panel, but still
// from a page of its own per row: from a B larger than the caches its rows are blocked by 8 (8 streams).
// Rows under a page apart (N = 256) keep their order. The program with the blocked copy matches the
// oracle where this machine's panels are 32 wide.
TEST_F(Avx2Tiles, PackingCopyOfWholeLinesReadsRowsInBlocksOfEight) {
  Target t = with_caches(int64_t(256) << 10);
  t.vector_bits = 512;
  t.vector_registers = 32;
  t.packed_panel = 32;
  for (const int64_t n : {2048, 256}) {
    std::vector<const UOp*> outs;
    const ScheduledKernel* pack = packing_copy(n, &outs, t.packed_panel);
    ASSERT_NE(pack, nullptr);
    const LoweredKernel k = lower_kernel(g, pack->ast, t);
    const bool blocked = n == 2048;
    EXPECT_EQ(split_amounts(k.opts, AxisType::Loop), blocked ? std::vector<int64_t>{8} : std::vector<int64_t>{})
        << n << ": " << opts_str(k.opts);
    const UOp* innermost = innermost_range(k);
    ASSERT_NE(innermost, nullptr) << linear_str(k.linear);
    if (!blocked) continue;
    EXPECT_EQ(const_bound(innermost), 8) << linear_str(k.linear);
    if (machine_panel() == t.packed_panel)
      expect_forced_match(outs, pack, k.opts, "matmul with B packed in blocks of 8 rows, " + opts_str(k.opts));
  }
}

// Where the panels do not divide B's columns (1020 = 31 x 32 + 28), the copy's load is gated along the
// stored axis (the last panel is padded with zeros), which LLVM's loop vectorizer leaves as scalar
// loads and stores. The stored axis becomes vector lanes (up to two vectors: a 32-wide panel's whole
// row per step on AVX-512, 8 lanes on AVX2), read by masked vector loads: no scalar load is left.
// The programs with those opts, AVX2's forced where this machine's panels are AVX2's, match the oracle.
TEST_F(Avx2Tiles, PaddedPanelsAreCopiedInVectors) {
  const Target here = with_caches(testrt::runtime().device()->target().cache_bytes),
               avx2 = with_caches(here.cache_bytes, /*avx2=*/true);
  for (const bool on_avx2 : {false, true}) {
    const Target& t = on_avx2 ? avx2 : here;
    const int64_t panel = t.packed_panel, vw = t.vector_bits / 32;
    const UOp* a = in(dtypes::float32, {64, 256});
    std::vector<const UOp*> outs{matmul(g, a, in(dtypes::float32, {256, 1020}))};
    const ScheduledKernel* pack = scheduled(outs, "E_", panel);
    ASSERT_NE(pack, nullptr);
    const LoweredKernel k = lower_kernel(g, pack->ast, t);
    EXPECT_EQ(split_amounts(k.opts, AxisType::Upcast), std::vector<int64_t>{std::min(panel, 2 * vw)})
        << t.vector_bits << "-bit vectors: " << opts_str(k.opts);
    size_t masked = 0, scalar = 0;
    for (const UOp* u : k.linear->src())
      if (u->op == Op::Load) (u->dtype.lanes == 1 ? scalar : masked) += u->nsrc() == 3;
    EXPECT_GT(masked, 0u) << linear_str(k.linear);
    EXPECT_EQ(scalar, 0u) << linear_str(k.linear);
    if (!on_avx2 || runs_avx2_panels_here())
      expect_forced_match(outs, pack, k.opts, "matmul 64x256 @ 256x1020, B's copy " + opts_str(k.opts));
  }
}

// From a B the caches hold (2 MiB against 16 MiB per core), the packing copy reads 4 panels per step
// of the panels' loop (UPCAST by 4 of the axis whose step is the next panel): 128 bytes of each row,
// whole lines. Rows under a page apart (N = 256) or unknown caches: no copies. The program with the
// copies matches the oracle (on a machine with AVX2's panels).
TEST_F(Avx2Tiles, PackingCopyReadsWholeLinesFromTheCaches) {
  const Target large_caches = with_caches(int64_t(16) << 20, true), unknown = with_caches(0, true);
  for (const int64_t n : {2048, 256}) {
    std::vector<const UOp*> outs;
    const ScheduledKernel* pack = packing_copy(n, &outs);
    ASSERT_NE(pack, nullptr);
    const LoweredKernel k = lower_kernel(g, pack->ast, large_caches);
    const bool copies = n == 2048;
    EXPECT_EQ(split_amounts(k.opts, AxisType::Upcast), copies ? std::vector<int64_t>{4} : std::vector<int64_t>{})
        << n << ": " << opts_str(k.opts);
    EXPECT_EQ(split_amounts(lower_kernel(g, pack->ast, unknown).opts, AxisType::Upcast), std::vector<int64_t>{}) << n;
    if (copies && runs_avx2_panels_here())
      expect_forced_match(outs, pack, k.opts, "matmul with B packed 4 panels per step, " + opts_str(k.opts));
  }
}

// x @ W with W's rows a page apart (1024 floats) and x of a few rows: a tile of columns would read a
// piece of each of W's rows before the next tile reads on along them. The reduce runs over blocks of
// rows instead, the blocks' loop the outermost loop (SPLIT(k, blocks, LOOP, top)), the output taking
// the blocks' sums: blocks of 8 rows where W (4 MiB) is larger than the caches of all cores (a target
// of 2 cores with 256 KiB each); where the caches hold it, blocks of at least 8 rows that read 4 times
// the output's bytes (1 row: 8 rows, 128 blocks; 4 rows: 16 rows, 64 blocks; 32 rows: 128 rows, 8
// blocks). Not with rows under a page apart (512 floats). The programs match the oracle.
TEST_F(Avx2Tiles, FewRowsReadTheMatrixInBlocksOfRows) {
  Target small_caches = testrt::runtime().device()->target();
  small_caches.cache_bytes = int64_t(256) << 10;
  small_caches.cores = 2;
  Target large_caches = small_caches;
  large_caches.cache_bytes = int64_t(16) << 20;
  struct Want {
    int64_t rows, cols, from_memory, from_cache;  // blocks (0: none)
  };
  for (const Want& want :
       {Want{1, 1024, 128, 128}, Want{4, 1024, 128, 64}, Want{32, 1024, 128, 8}, Want{1, 512, 0, 0}}) {
    const UOp *x = in(dtypes::float32, {want.rows, 1024}), *w = in(dtypes::float32, {1024, want.cols});
    std::vector<const UOp*> outs{matmul(g, x, w)};
    const ScheduledKernel* mm = scheduled(outs, "r_");
    ASSERT_NE(mm, nullptr);
    for (const Target* t : {&small_caches, &large_caches}) {
      const LoweredKernel k = lower_kernel(g, mm->ast, *t);
      const int64_t blocked = t == &small_caches ? want.from_memory : want.from_cache;
      const std::string what = cat(want.rows, "x1024 @ 1024x", want.cols, " with ", t->cache_bytes >> 10,
                                   " KiB of cache per core {", opts_str(k.opts), "}");
      std::vector<int64_t> blocks;
      for (const Opt& o : k.opts)
        if (o.op == OptOp::Split && o.type == AxisType::Loop && o.top) blocks.push_back(o.amount);
      EXPECT_EQ(blocks, blocked ? std::vector<int64_t>{blocked} : std::vector<int64_t>{}) << what;
      if (!blocked) continue;
      const UOp* outer = nullptr;  // the outermost loop of the kernel's code
      for (const UOp* u : k.linear->src())
        if (u->op == Op::Range && u->as<RangeArg>().type == AxisType::Loop) {
          outer = u;
          break;
        }
      ASSERT_NE(outer, nullptr) << what;
      EXPECT_EQ(const_bound(outer), blocked) << what << "\n" << linear_str(k.linear);
      expect_forced_match(outs, mm, k.opts, what);
    }
  }
}

// SPLIT(r, blocks, LOOP, top) of a reduce axis: the blocks' loop accumulates the sum in the output.
// A column sum in 4 blocks, the blocks' loop outside the columns', a matmul with padded rows (gated
// stores), vector lanes and threads in 8 blocks of K, and a convolution in blocks of its input
// channels (its taps reduced inside each block) match the oracle. A max, a half sum (its
// partial sums would round between blocks), a sum stored through relu, a split that keeps the blocks
// inside, and threads or lanes over the blocks are refused by name.
TEST_F(Avx2Tiles, ReduceBlocksAccumulateInTheOutput) {
  auto ids = [](const UOp* ast) {
    std::vector<const UOp*> loops, reduces;
    classify_ranges(ast, &loops, &reduces);
    int64_t next = 0;
    for (const UOp* r : ranges_of(ast)) next = std::max(next, r->as<RangeArg>().id + 1);
    return std::tuple{loops.at(0)->as<RangeArg>().id, reduces.at(0)->as<RangeArg>().id, next};
  };
  const UOp* x = in(dtypes::float32, {64, 48});
  std::vector<const UOp*> colsum{reduce(g, x, Op::Add, {0})};
  const ScheduledKernel* cs = scheduled(colsum, "r_");
  ASSERT_NE(cs, nullptr);
  auto [col, row, next] = ids(cs->ast);
  expect_forced_match(colsum, cs, {Opt::split(row, 4, AxisType::Loop, true), Opt::swap(col, next)},
                      "column sum in 4 blocks");

  const UOp *a = in(dtypes::float32, {15, 64}), *b = in(dtypes::float32, {64, 32});
  std::vector<const UOp*> mm{matmul(g, a, b)};
  const ScheduledKernel* m = scheduled(mm, "r_");
  ASSERT_NE(m, nullptr);
  const UOp* mm_ast = m->ast;  // (the next scheduled() replaces the schedule m points into)
  // ranges: 0 rows (15), 1 columns (32), 2 K (64)
  const std::vector<Opt> tiled{
      Opt::upcast(1, 8), Opt::padto(0, 4), Opt::upcast(0, 4), Opt::thread(0, 2), Opt::split(2, 8, AxisType::Loop, true),
      Opt::swap(1, 6)};
  expect_forced_match(mm, m, tiled, "matmul in 8 blocks of K, " + opts_str(tiled));
  // A Reduce over several axes (a padded 3x3 convolution's input channels and taps): blocks of one
  // of them, the others still reduced inside each block.
  const UOp *cx = in(dtypes::float32, {1, 8, 6, 6}), *cw = in(dtypes::float32, {16, 8, 3, 3});
  std::vector<const UOp*> conv{conv2d(g, cx, cw, nullptr, {1, 1}, {1, 1})};
  const ScheduledKernel* cv = scheduled(conv, "r_");
  ASSERT_NE(cv, nullptr);
  std::vector<const UOp*> cloops, creduces;
  classify_ranges(cv->ast, &cloops, &creduces);
  ASSERT_EQ(creduces.size(), 3u);
  int split_channels = 0;
  for (const UOp* r : creduces)
    if (const_bound(r) == 8) {
      const std::vector<Opt> blocks{Opt::split(r->as<RangeArg>().id, 4, AxisType::Loop, true)};
      expect_forced_match(conv, cv, blocks, "conv2d in 4 blocks of its input channels, " + opts_str(blocks));
      split_channels++;
    }
  EXPECT_EQ(split_channels, 1);

  auto error_for = [&](const UOp* ast, std::vector<Opt> opts) {
    LowerOptions o;
    o.opts = std::move(opts);
    return testutil::error_of([&] { lower_kernel(g, ast, cpu_like(), o); });
  };
  std::vector<const UOp*> colmax{reduce(g, x, Op::Max, {0})};
  const ScheduledKernel* cm = scheduled(colmax, "r_");
  ASSERT_NE(cm, nullptr);
  EXPECT_NE(error_for(cm->ast, {Opt::split(std::get<1>(ids(cm->ast)), 4, AxisType::Loop, true)}).find("not a sum"),
            std::string::npos);
  std::vector<const UOp*> halfsum{reduce(g, in(dtypes::float16, {64, 48}), Op::Add, {0})};
  const ScheduledKernel* hs = scheduled(halfsum, "r_");
  ASSERT_NE(hs, nullptr);
  EXPECT_NE(error_for(hs->ast, {Opt::split(std::get<1>(ids(hs->ast)), 4, AxisType::Loop, true)}).find("round"),
            std::string::npos);
  std::vector<const UOp*> relu_mm{relu(g, matmul(g, a, b))};
  const ScheduledKernel* rm = scheduled(relu_mm, "r_");
  ASSERT_NE(rm, nullptr);
  EXPECT_NE(error_for(rm->ast, {Opt::split(2, 4, AxisType::Loop, true)}).find("not stored as it is"),
            std::string::npos);
  EXPECT_NE(error_for(mm_ast, {Opt::split(2, 4, AxisType::Loop)}).find("outer part"), std::string::npos);
  // The blocks' loop runs its steps in order: each reads what the one before stored. Threads over
  // it, or its steps as lanes or copies (UPCAST: BEAM reached such candidates, whose sums were
  // wrong), are refused; a SWAP that moves it, and UPCAST of the other axes after that, are not.
  for (const std::vector<Opt>& opts : {std::vector<Opt>{Opt::split(2, 4, AxisType::Loop, true), Opt::thread(3, 2)},
                                       {Opt::split(2, 4, AxisType::Loop, true), Opt::upcast(3, 2)},
                                       {Opt::split(2, 4, AxisType::Loop, true), Opt::upcast(3, 4)},
                                       {Opt::split(2, 4, AxisType::Loop, true), Opt::swap(0, 3), Opt::upcast(0, 2)}})
    EXPECT_NE(error_for(mm_ast, opts).find("must run one after another"), std::string::npos) << opts_str(opts);
  const std::vector<Opt> moved{Opt::split(2, 4, AxisType::Loop, true), Opt::swap(0, 3), Opt::upcast(1, 8),
                               Opt::upcast(3, 3)};
  const ScheduledKernel* m2 = scheduled(mm, "r_");
  ASSERT_NE(m2, nullptr);
  expect_forced_match(mm, m2, moved, "matmul in 4 blocks of K, the blocks' loop outermost, " + opts_str(moved));
}

// A product with few output columns that no lane count divides (a classifier's 10 classes at batch
// 8): the columns, which B's load of every reduce step walks contiguously, are padded to 16 lanes
// beside copies of the rows, where at least half of the padded lanes are used; scalar code would
// use one lane. 3 columns in 8 lanes use fewer than half: no lanes. The kernels match the oracle.
TEST_F(Avx2Tiles, NarrowProductsPadTheirColumnsToLanes) {
  for (const int64_t cols : {10, 3}) {
    const UOp *x = in(dtypes::float32, {8, 512}), *w = in(dtypes::float32, {512, cols});
    std::vector<const UOp*> outs{matmul(g, x, w)};
    const ScheduledKernel* mm = scheduled(outs, "r_");
    ASSERT_NE(mm, nullptr);
    Target t = cpu_like();
    t.vector_registers = 16;
    const std::vector<Opt> opts = lower_kernel(g, mm->ast, t).opts;
    const std::vector<int64_t> lanes = cols == 10 ? std::vector<int64_t>{16} : std::vector<int64_t>{};
    std::vector<int64_t> padded;
    for (const Opt& o : opts)
      if (o.op == OptOp::Padto) padded.push_back(o.amount);
    EXPECT_EQ(padded, lanes) << cols << ": " << opts_str(opts);
    const std::vector<int64_t> upcasts = split_amounts(opts, AxisType::Upcast);
    EXPECT_EQ(std::count(upcasts.begin(), upcasts.end(), int64_t(16)), cols == 10 ? 1 : 0)
        << cols << ": " << opts_str(opts);
    expect_forced_match(outs, mm, opts, "matmul 8x512x" + std::to_string(cols) + " " + opts_str(opts));
  }
}

// A matmul's tile on 16 registers is 6 rows x 16 lanes (12 accumulators: a plain product needs only
// its B vector and one broadcast beside them), its rows padded to a multiple of 6; with 32 registers
// it stays 8 rows. Where A's rows outgrow a quarter of the core's cache (Target::cache_bytes) the
// rows' loop is split into cache blocks, the blocks' loop outermost (threads split the blocks), the
// loop padded to whole blocks where no divisor fits; a target that does not know its cache, or rows
// that fit, get no blocks. The kernels replay and, run on this machine, match the oracle.
TEST_F(Avx2Tiles, MatmulTakesSixRowsAndCacheBlocks) {
  const UOp *a = in(dtypes::float32, {512, 256}), *b = in(dtypes::float32, {256, 512});
  std::vector<const UOp*> outs{matmul(g, a, b)};
  const ScheduledKernel* mm = scheduled(outs, "r_");
  ASSERT_NE(mm, nullptr);
  auto target = [](int registers, int64_t cache) {
    Target t = cpu_like();
    t.vector_registers = registers;
    t.cache_bytes = cache;
    return t;
  };
  auto padded = [](const std::vector<Opt>& opts) {
    std::vector<int64_t> out;
    for (const Opt& o : opts)
      if (o.op == OptOp::Padto) out.push_back(o.amount);
    return out;
  };
  // 16 registers: 516 rows in 86 steps of 6 rows x 256 floats (6 KiB); a quarter of 256 KiB holds
  // 10 steps, no divisor of 86 from 5 to 10: the block from 5 to 10 that pads least, 8 (88 steps in
  // 11 blocks; blocks of 10 would compute 90)
  const std::vector<Opt> avx2 = lower_kernel(g, mm->ast, target(16, 256 << 10)).opts;
  EXPECT_EQ(split_amounts(avx2, AxisType::Upcast), (std::vector<int64_t>{16, 6})) << opts_str(avx2);
  EXPECT_EQ(padded(avx2), (std::vector<int64_t>{6, 8})) << opts_str(avx2);
  EXPECT_EQ(split_amounts(avx2, AxisType::Loop), std::vector<int64_t>{8}) << opts_str(avx2);
  // 32 registers: 64 steps of 8 rows (8 KiB), blocks of 8 steps
  const std::vector<Opt> wide = lower_kernel(g, mm->ast, target(32, 256 << 10)).opts;
  EXPECT_EQ(split_amounts(wide, AxisType::Upcast), (std::vector<int64_t>{16, 8})) << opts_str(wide);
  EXPECT_EQ(split_amounts(wide, AxisType::Loop), std::vector<int64_t>{8}) << opts_str(wide);
  for (int64_t cache : {int64_t(0), int64_t(4) << 20}) {
    const std::vector<Opt> none = lower_kernel(g, mm->ast, target(16, cache)).opts;
    EXPECT_EQ(split_amounts(none, AxisType::Loop), std::vector<int64_t>{}) << cache << ": " << opts_str(none);
  }
  EXPECT_EQ(expect_replays(g, outs, target(16, 256 << 10), "blocked matmul"), 2);
  for (const std::vector<Opt>& opts : {avx2, wide}) {
    expect_forced_match(outs, mm, opts, "matmul " + opts_str(opts));
  }
}

// PADTO of an output axis that no load or store walks contiguously (a matmul's rows) recomputes the
// last valid row in its padding instead of gating each load: only the store is gated. Padding the
// columns, which B and the output walk contiguously (they may become vector lanes), keeps B's load
// gated. Both, with the padded axis upcast, match the oracle.
TEST_F(Avx2Tiles, PaddedRowsClampTheirLoadsAndGateTheirStore) {
  const UOp *a = in(dtypes::float32, {13, 8}), *b = in(dtypes::float32, {8, 20});
  std::vector<const UOp*> outs{matmul(g, a, b)};
  const ScheduledKernel* mm = scheduled(outs, "r_");
  ASSERT_NE(mm, nullptr);
  // ranges: 0 the rows (13), 1 the columns (20), 2 the reduce (8)
  auto gated = [&](const std::vector<Opt>& opts) {
    OptState k = start_optimization(g, mm->ast, cpu_like());
    for (const Opt& o : opts) apply_opt(g, k, o, cpu_like());
    std::pair<int, int> loads_stores{0, 0};
    for (const UOp* u : toposort(k.sink)) {
      if (u->op == Op::Load && u->nsrc() == 3) loads_stores.first++;
      if (u->op == Op::Store && u->nsrc() == 3) loads_stores.second++;
    }
    return loads_stores;
  };
  EXPECT_EQ(gated({}), (std::pair<int, int>{0, 0}));
  EXPECT_EQ(gated({Opt::padto(0, 4)}), (std::pair<int, int>{0, 1}));
  EXPECT_EQ(gated({Opt::padto(1, 8)}), (std::pair<int, int>{1, 1}));
  for (const std::vector<Opt>& opts :
       {std::vector<Opt>{Opt::padto(0, 4), Opt::upcast(0, 4)}, std::vector<Opt>{Opt::padto(1, 8), Opt::upcast(1, 8)}}) {
    expect_forced_match(outs, mm, opts, "padded matmul " + opts_str(opts));
  }
}

// A matmul whose columns no two vector registers divide (250 on AVX2's 16 lanes) has them padded
// to 16 and takes 16 lanes, not 2 (the most lanes that divide 250). Its B is packed in panels as
// wide as this machine's tiles (16 columns with AVX2: 16 panels; 32 with AVX-512: 8), the last
// padded with zeros, so the padded lanes read inside the panels:
// PADTO leaves B's load ungated and gates only the store (where the padding would read past B,
// unpacked 20 columns padded to 24, the load stays gated: PaddedRowsClampTheirLoadsAndGateTheirStore).
// The heuristic's kernel replays and, run on this machine, matches the oracle.
TEST_F(Avx2Tiles, ColumnsPaddedToTwoRegistersReadInsideTheirPanels) {
  const UOp *a = in(dtypes::float32, {64, 96}), *b = in(dtypes::float32, {96, 250});
  std::vector<const UOp*> outs{matmul(g, a, b)};
  const int64_t panel = testrt::runtime().device()->target().packed_panel;
  const std::string packing = "E_" + std::to_string((250 + panel - 1) / panel) + "_96_" + std::to_string(panel);
  EXPECT_NE(scheduled(outs, packing), nullptr) << "B is packed in panels of " << panel;
  const ScheduledKernel* mm = scheduled(outs, "r_");
  ASSERT_NE(mm, nullptr);
  Target t = cpu_like();
  t.vector_registers = 16;
  const std::vector<Opt> opts = lower_kernel(g, mm->ast, t).opts;
  ASSERT_FALSE(opts.empty());
  EXPECT_EQ(opts[0].op, OptOp::Padto) << opts_str(opts);
  EXPECT_EQ(opts[0].amount, 16) << opts_str(opts);
  EXPECT_EQ(split_amounts(opts, AxisType::Upcast), (std::vector<int64_t>{16, 6})) << opts_str(opts);
  // ranges: 0 the rows (64), 1 the columns (250), 2 the reduce (96)
  OptState k = start_optimization(g, mm->ast, t);
  apply_opt(g, k, Opt::padto(1, 16), t);
  int gated_loads = 0, gated_stores = 0;
  for (const UOp* u : toposort(k.sink)) {
    gated_loads += u->op == Op::Load && u->nsrc() == 3;
    gated_stores += u->op == Op::Store && u->nsrc() == 3;
  }
  EXPECT_EQ(gated_loads, 0);
  EXPECT_EQ(gated_stores, 1);
  EXPECT_EQ(expect_replays(g, outs, t, "matmul 64x96x250"), 2);
  expect_forced_match(outs, mm, opts, "matmul 64x96x250 " + opts_str(opts));
}

// A convolution with output channels 16 does not divide (60) still packs its weight with the
// channels innermost, its last panel of 16 padded with zeros (64), and on AVX2 the channels are
// padded to whole vectors and become the lanes: their padded lanes read inside the panels (PADTO
// adds no gated load; only the store is gated). The heuristic's kernel replays and, run on this
// machine, matches the oracle.
TEST_F(Avx2Tiles, OddChannelCountsPadTheirWeightPanelsAndLanes) {
  const UOp *x = in(dtypes::float32, {1, 8, 14, 14}), *w = in(dtypes::float32, {60, 8, 3, 3});
  std::vector<const UOp*> outs{conv2d(g, x, w, nullptr, {1, 1}, {1, 1})};
  const ScheduledKernel* pack = scheduled(outs, "E_");
  ASSERT_NE(pack, nullptr) << "the weight is packed";
  // 16-wide panels where 32 does not divide the channels (compose.cpp), or this machine's where narrower
  const int64_t panel = std::min<int64_t>(16, machine_panel());
  const std::string panels = "E_" + std::to_string((60 + panel - 1) / panel) + "_";
  EXPECT_EQ(kernel_name(pack->ast).rfind(panels, 0), 0u) << kernel_name(pack->ast) << ": panels of " << panel;
  const ScheduledKernel* conv = scheduled(outs, "r_");
  ASSERT_NE(conv, nullptr);
  Target t = cpu_like();
  t.vector_registers = 16;
  const std::vector<Opt> opts = lower_kernel(g, conv->ast, t).opts;
  ASSERT_GE(opts.size(), 2u);
  EXPECT_EQ(opts[0].op, OptOp::Padto) << opts_str(opts);
  EXPECT_EQ(opts[0].amount, 8) << opts_str(opts);
  EXPECT_TRUE(opts[1].op == OptOp::Split && opts[1].type == AxisType::Upcast) << opts_str(opts);
  EXPECT_EQ(opts[1].axis, opts[0].axis) << opts_str(opts);
  auto gated = [&](const std::vector<Opt>& applied) {
    OptState k = start_optimization(g, conv->ast, t);
    for (const Opt& o : applied) apply_opt(g, k, o, t);
    std::pair<int, int> loads_stores{0, 0};
    for (const UOp* u : toposort(k.sink)) {
      loads_stores.first += u->op == Op::Load && u->nsrc() == 3;
      loads_stores.second += u->op == Op::Store && u->nsrc() == 3;
    }
    return loads_stores;
  };
  const std::pair<int, int> unpadded = gated({});
  EXPECT_EQ(gated({opts[0]}), (std::pair<int, int>{unpadded.first, unpadded.second + 1}));
  EXPECT_EQ(expect_replays(g, outs, t, "conv 8->60 at 14x14"), 2);
  expect_forced_match(outs, conv, opts, "conv 8->60 at 14x14 " + opts_str(opts));
}

// A convolution's weight gradient, dW[co,ci,ky,kx] = sum over n, y, x of dy[n,co,y,x] *
// x[n,ci,y+ky,x+kx]: no output axis is contiguous in either load, so none takes lanes. The columns
// (the innermost reduce axis, contiguous in both) become vector accumulators, in a tile of output
// channels (which move dy) x filter rows (which move x): 4 x 3 with 32 registers, 2 x 3 within
// AVX2's 8 accumulators. 14 columns are padded to whole vectors. Each tile, compiled on this
// machine, matches the oracle; so does the heuristic's own choice here.
class ConvolutionGradients : public testrt::OracleFixture<20261201> {
 protected:
  // The gradient of sum(conv2d(x, w) * r) (3x3, padding 1) by w or by x, x of shape `xs`, w of
  // (co, ci, 3, 3) and r of the output's shape random in [-1, 1].
  std::vector<const UOp*> conv_gradient(std::vector<int64_t> xs, int64_t co, int64_t stride, bool by_weight) {
    const UOp* x = in(dtypes::float32, xs, -1, 1);
    const UOp* w = in(dtypes::float32, {co, xs[1], 3, 3}, -1, 1);
    const UOp* y = conv2d(g, x, w, nullptr, {stride, stride}, {1, 1});
    const UOp* r = in(dtypes::float32, static_shape(y), -1, 1);
    const UOp* loss = reduce(g, mul(g, y, r), Op::Add, {0, 1, 2, 3});
    return gradient(g, loss, std::vector<const UOp*>{by_weight ? w : x});
  }
};
TEST_F(ConvolutionGradients, TheWeightGradientTakesVectorAccumulatorsInATile) {
  for (int64_t width : {16, 14}) {
    const int64_t c = width == 16 ? 16 : 8;
    std::vector<const UOp*> outs = conv_gradient({8, c, width, width}, 2 * c, 1, true);
    const std::string what = cat(width, " columns");
    Schedule s = schedule_graph(g, outs);
    ASSERT_EQ(s.kernels.size(), 1u) << what;  // dW reads x and dy (r) only
    for (bool avx2 : {false, true}) {
      Target t = cpu_like();
      t.vector_bits = avx2 ? 256 : 512;
      t.vector_registers = avx2 ? 16 : 32;
      LoweredKernel k = lower_kernel(g, s.kernels[0].ast, t);
      const int64_t lanes = avx2 ? 8 : 16;
      // the kernel's axes: co (0), ci (1), ky (2), kx (3), then the reduce's n (4), y (5), x (6)
      EXPECT_EQ(split_amounts(k.opts, AxisType::Unroll), std::vector<int64_t>{lanes})
          << what << ": " << opts_str(k.opts);
      EXPECT_EQ(split_amounts(k.opts, AxisType::Upcast), (std::vector<int64_t>{avx2 ? 2 : 4, 3}))
          << what << ": " << opts_str(k.opts);
      std::set<int64_t> upcast_axes;
      bool padded = false;
      for (const Opt& o : k.opts) {
        if (o.op == OptOp::Split && o.type == AxisType::Upcast) upcast_axes.insert(o.axis);
        padded = padded || (o.op == OptOp::Padto && o.axis == 6 && o.amount == lanes);
      }
      EXPECT_EQ(upcast_axes, (std::set<int64_t>{0, 2})) << what << ": " << opts_str(k.opts);
      EXPECT_EQ(padded, width % lanes != 0) << what << ": " << opts_str(k.opts);
      // each copy keeps a vector accumulator: the columns' lanes are vector loads and adds
      const std::string linear = linear_str(k.linear);
      EXPECT_NE(linear.find(avx2 ? "float32x8" : "float32x16"), std::string::npos) << what << ": " << linear;
      CompileOptions forced;
      forced.kernel_opts[s.kernels[0].ast->content_hash()] = k.opts;
      testrt::expect_matches_oracle(g, outs, data, what + (avx2 ? ", AVX2's tile" : ", AVX-512's tile"), 1e-4, 1e-4,
                                    forced);
    }
    testrt::expect_matches_oracle(g, outs, data, what + ", the heuristic here", 1e-4, 1e-4);
    EXPECT_EQ(expect_replays(g, outs, cpu_like(), what), 1);
  }
}

// A stride-2 convolution's weight gradient reads its input at stride 2 along the columns: that
// load's lanes are two vector loads and a shuffle (expand's strided load) beside dy's contiguous
// one, so the columns still become vector accumulators.
TEST_F(ConvolutionGradients, AStrideTwoWeightGradientReadsItsInputInWideLoads) {
  std::vector<const UOp*> outs = conv_gradient({4, 8, 32, 32}, 16, 2, true);
  Schedule s = schedule_graph(g, outs);
  ASSERT_EQ(s.kernels.size(), 1u);
  Target t = avx512_like();
  LoweredKernel k = lower_kernel(g, s.kernels[0].ast, t);
  EXPECT_EQ(split_amounts(k.opts, AxisType::Unroll), std::vector<int64_t>{16}) << opts_str(k.opts);
  EXPECT_EQ(split_amounts(k.opts, AxisType::Upcast), (std::vector<int64_t>{4, 3})) << opts_str(k.opts);
  // the input's 16 lanes at stride 2: one load of 32 lanes
  EXPECT_NE(linear_str(k.linear).find("float32x32"), std::string::npos) << opts_str(k.opts);
  CompileOptions forced;
  forced.kernel_opts[s.kernels[0].ast->content_hash()] = k.opts;
  testrt::expect_matches_oracle(g, outs, data, "stride-2 weight gradient, AVX-512's tile", 1e-4, 1e-4, forced);
  testrt::expect_matches_oracle(g, outs, data, "stride-2 weight gradient, the heuristic here", 1e-4, 1e-4);
}

// A convolution's input gradient sums each filter tap's tiles into place (the windows' expand):
// a window of 4 tiles unrolled whole (3b) inside its innermost loop, which the stores walk
// contiguously. That loop takes vector lanes
// as an elementwise one would (its loads gather: their indexes are remainders of the tiled row),
// 58 columns padded to 4 x 16. Compiled here, the gradient matches the oracle.
TEST_F(ConvolutionGradients, TheInputGradientsTilesAreSummedInLanes) {
  std::vector<const UOp*> outs = conv_gradient({1, 16, 56, 56}, 16, 1, false);
  Schedule s = schedule_graph(g, outs);
  const ScheduledKernel* tiles = kernel_named(s, "r_16_3_56_58_4");
  ASSERT_NE(tiles, nullptr);
  Target t = avx512_like();
  LoweredKernel k = lower_kernel(g, tiles->ast, t);
  // the kernel's axes: channels (0), taps (1), rows (2), columns (3), then the tiles (4)
  EXPECT_EQ(opts_str(k.opts), "UNROLL(4,4) PADTO(3,16) UPCAST(3,16) THREAD(0,4)");
  testrt::expect_matches_oracle(g, outs, data, "input gradient", 1e-4, 1e-4);
}

// A convolution's input gradient sums over the output channels per filter tap (its taps then
// summed into place by another kernel): the columns, walked by dy, are the only axis a load walks
// contiguously. A 14- or 7-wide map's columns take lanes padded to a whole or a half vector (16 or
// 8 on AVX-512), where before no axis took lanes. Compiled here, the gradient matches the oracle.
TEST_F(ConvolutionGradients, TheInputGradientPadsShortColumnsToLanes) {
  for (int64_t width : {14, 7}) {
    std::vector<const UOp*> outs = conv_gradient({1, 32, width, width}, 32, 1, false);
    const std::string what = cat(width, " columns");
    Schedule s = schedule_graph(g, outs);
    const ScheduledKernel* taps = kernel_named(s, cat("r_32_", width, "_", width, "_3_3_32"));
    ASSERT_NE(taps, nullptr) << what;
    Target t = avx512_like();
    LoweredKernel k = lower_kernel(g, taps->ast, t);
    const int64_t lanes = width == 14 ? 16 : 8;
    // the kernel's axes: input channels (0), rows (1), columns (2), ky (3), kx (4), then the reduce's
    bool padded = false, upcast = false;
    for (const Opt& o : k.opts) {
      padded = padded || (o.op == OptOp::Padto && o.axis == 2 && o.amount == lanes);
      upcast = upcast || (o.op == OptOp::Split && o.type == AxisType::Upcast && o.axis == 2 && o.amount == lanes);
    }
    EXPECT_TRUE(padded && upcast) << what << ": " << opts_str(k.opts);
    testrt::expect_matches_oracle(g, outs, data, what, 1e-4, 1e-4);
  }
}

// PADTO of an axis a load walks contiguously leaves the load ungated where its padded index stays
// inside its buffer, but not in a kernel where an address depends on a loaded value (a gather: its
// index, read in the padding, could point anywhere); outside the buffer it stays gated.
TEST(Opts, PaddedLoadsInsideTheirBufferGoUngatedUnlessAnAddressIsLoaded) {
  Graph g;
  testk::KernelBuilder b{g};
  const UOp *A = b.param(0, dtypes::float32, 24), *I = b.param(1, dtypes::int32, 20);
  const UOp* O = b.param(2, dtypes::float32, 20);
  auto gated_loads = [&](const UOp* sink) {
    OptState k = start_optimization(g, sink, cpu_like());
    apply_opt(g, k, Opt::padto(0, 8), cpu_like());
    int n = 0;
    for (const UOp* u : toposort(k.sink)) n += u->op == Op::Load && u->nsrc() == 3;
    return n;
  };
  const UOp* j = b.range(20, 0);
  const UOp* plain = b.sink({b.store(O, j, b.load(A, j))}, "E_20");
  EXPECT_EQ(gated_loads(plain), 0) << "A[j] for j < 24 is inside A's 24 elements";
  const UOp* shifted = b.sink({b.store(O, j, b.load(A, b.add(j, b.c(1))))}, "E_20");
  EXPECT_EQ(gated_loads(shifted), 1) << "A[j + 1] reaches A[24]";
  const UOp* at = g.make(Op::Cast, dtypes::index, {b.load(I, j)}, dtypes::index);
  const UOp* gather = b.sink({b.store(O, j, g.alu(Op::Add, b.load(A, j), b.load(A, at)))}, "E_20");
  EXPECT_EQ(gated_loads(gather), 3) << "A[j], I[j] and A[I[j]]";
  EXPECT_TRUE(addresses_depend_on_loads(toposort(gather)));
  EXPECT_FALSE(addresses_depend_on_loads(toposort(plain)));
}

// A 7-wide filter (a ResNet stem's 7x7, stride 2) is unrolled whole, and its copies take the
// registers a second tile axis would: the tile is the lanes and one axis of copies. Its columns are
// read with stride 2 and each filter tap moves them (two vector loads and a permute per tap), so the
// output channels, walked by the packed weight, are the lanes: with 32 registers one register of
// them (8 channels) and 16 columns of copies, with 16 registers two (16 channels) and 4 columns.
TEST(Opts, AWideFilterIsUnrolledWithOneAxisOfCopies) {
  Graph g;
  const UOp *x = input(g, dtypes::float32, {1, 3, 64, 64}), *w = input(g, dtypes::float32, {64, 3, 7, 7});
  std::vector<const UOp*> outs{conv2d(g, x, w, nullptr, {2, 2}, {3, 3})};
  Schedule s = schedule_graph(g, outs);
  ASSERT_EQ(s.kernels.size(), 2u);  // the weight's packing and the convolution
  const ScheduledKernel* conv = kernel_named(s, "r_");
  ASSERT_NE(conv, nullptr);
  for (int registers : {32, 16}) {
    Target t = cpu_like();
    t.vector_registers = registers;
    t.has_gather_scatter = registers == 32;
    LoweredKernel k = lower_kernel(g, conv->ast, t);
    EXPECT_EQ(split_amounts(k.opts, AxisType::Unroll), std::vector<int64_t>{7})
        << registers << ": " << opts_str(k.opts);
    const std::vector<int64_t> want = registers == 16 ? std::vector<int64_t>{16, 4} : std::vector<int64_t>{8, 16};
    EXPECT_EQ(split_amounts(k.opts, AxisType::Upcast), want) << registers << ": " << opts_str(k.opts);
  }
  EXPECT_EQ(expect_replays(g, outs, cpu_like(), "7x7 stem"), 2);
}

// A stride-2 convolution's columns as lanes cost every filter tap two vector loads and a permute
// (the tap moves the stride-2 load by one element): its output channels, walked by the packed weight,
// take the lanes instead. A 1x1 stride-2 convolution has no taps: its columns keep the lanes.
TEST(Opts, AStrideTwoFilterTakesItsChannelsAsLanes) {
  for (int64_t k : {3, 1}) {
    Graph g;
    const UOp *x = input(g, dtypes::float32, {1, 16, 128, 128}), *w = input(g, dtypes::float32, {32, 16, k, k});
    std::vector<const UOp*> outs{conv2d(g, x, w, nullptr, {2, 2}, {k / 2, k / 2})};
    Schedule s = schedule_graph(g, outs);
    const ScheduledKernel* conv = kernel_named(s, "r_");
    ASSERT_NE(conv, nullptr);
    Target t = cpu_like();
    t.vector_registers = 32;
    t.has_gather_scatter = true;
    LoweredKernel lk = lower_kernel(g, conv->ast, t);
    auto first = std::find_if(lk.opts.begin(), lk.opts.end(),
                              [](const Opt& o) { return o.op == OptOp::Split && o.type == AxisType::Upcast; });
    ASSERT_NE(first, lk.opts.end()) << opts_str(lk.opts);
    // the kernel's axes: output channels (0), rows (1), columns (2), then the reduce's
    EXPECT_EQ(first->axis, k == 3 ? 0 : 2) << k << "x" << k << ": " << opts_str(lk.opts);
    EXPECT_EQ(expect_replays(g, outs, cpu_like(), k == 3 ? "3x3 stride 2" : "1x1 stride 2"), 2);
  }
}

// A 14-wide map's row is taken whole (14 copies of one register of output-channel lanes) where
// its padded taps multiply weights known finite: each copy's padded taps are then constant zeros
// whose products lower_reduces leaves out. With weights that may not be finite (an input), 32
// channel lanes x 7 columns as before.
TEST(Opts, ARowWithPaddedTapsOfFiniteWeightsIsTakenWhole) {
  for (bool finite : {true, false}) {
    Graph g;
    const UOp* x = input(g, dtypes::float32, {1, 32, 14, 14});
    const UOp* w = input(g, dtypes::float32, {64, 32, 3, 3});
    if (finite) {
      std::vector<float> v(size_t(64 * 32 * 9), 0.25f);
      std::string bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
      w = reshape(g, slice(g, binary_data(g, bytes), 0, int64_t(v.size()), dtypes::float32), {64, 32, 3, 3});
    }
    std::vector<const UOp*> outs{conv2d(g, x, w, nullptr, {1, 1}, {1, 1})};
    Schedule s = schedule_graph(g, outs);
    const ScheduledKernel* conv = kernel_named(s, "r_");
    ASSERT_NE(conv, nullptr);
    Target t = avx512_like();
    LowerOptions lo;
    lo.finite_params = finite_params(s)[size_t(conv - s.kernels.data())];
    EXPECT_EQ(lo.finite_params.empty(), !finite);
    LoweredKernel lk = lower_kernel(g, conv->ast, t, lo);
    std::map<int64_t, int64_t> upcasts;  // axis -> amount
    for (const Opt& o : lk.opts)
      if (o.op == OptOp::Split && o.type == AxisType::Upcast) upcasts[o.axis] = o.amount;
    // the kernel's axes: output channels (0), rows (1), columns (2), then the reduce's
    EXPECT_EQ(upcasts[0], finite ? 16 : 32) << opts_str(lk.opts);
    EXPECT_EQ(upcasts[2], finite ? 14 : 7) << opts_str(lk.opts);
  }
}

// A pool's row of vectors is taken whole as copies (ResNet-18's 3x3 stride-2 max pool, pad 1): each
// copy's window gates are constants, where a loop over the row computed them every step. Its 56
// columns are padded to whole 16-lane vectors (an eighth wasted): 4 copies of 16 lanes; with 8
// lanes they divide, 7 copies.
TEST(Opts, APoolTakesItsRowWhole) {
  Graph g;
  const UOp* x = input(g, dtypes::float32, {1, 64, 112, 112});
  std::vector<const UOp*> outs{max_pool2d(g, x, {3, 3}, {2, 2}, {1, 1})};
  Schedule s = schedule_graph(g, outs);
  ASSERT_EQ(s.kernels.size(), 1u);
  for (int bits : {512, 256}) {
    Target t = cpu_like();
    t.vector_bits = bits;
    t.vector_registers = 32;
    LoweredKernel k = lower_kernel(g, s.kernels[0].ast, t);
    const std::vector<int64_t> want = bits == 512 ? std::vector<int64_t>{16, 4} : std::vector<int64_t>{8, 7};
    EXPECT_EQ(split_amounts(k.opts, AxisType::Upcast), want) << bits << ": " << opts_str(k.opts);
    EXPECT_EQ(split_amounts(k.opts, AxisType::Unroll), (std::vector<int64_t>{3, 3}))
        << bits << ": " << opts_str(k.opts);
  }
  EXPECT_EQ(expect_replays(g, outs, cpu_like(), "3x3 stride-2 pool"), 1);
}

// On a GPU too a pool's window is unrolled whole: each tap reads a strided view of its own (the
// pool's windows are stacked views, compose.cpp), which a loop over the window's rows would load at
// every row, masked. Run on OpenCL, the pool matches the oracle.
TEST(Opts, AGpuPoolUnrollsItsWindowWhole) {
  Graph g;
  testutil::Rng rng(11);
  oracle::BufferData data;
  const UOp* x = input(g, dtypes::float32, {1, 8, 28, 28}, "CL");
  data[buffer_of(x)] = testrt::random_array(rng, dtypes::float32, {8 * 28 * 28});
  std::vector<const UOp*> outs{max_pool2d(g, x, {3, 3}, {2, 2}, {1, 1})};
  Schedule s = schedule_graph(g, outs);
  ASSERT_EQ(s.kernels.size(), 1u);
  LoweredKernel k = lower_kernel(g, s.kernels[0].ast, gpu_like());
  EXPECT_EQ(split_amounts(k.opts, AxisType::Unroll), (std::vector<int64_t>{3, 3})) << opts_str(k.opts);
  size_t window_loops = 0;
  for (const UOp* u : k.linear->src()) window_loops += u->op == Op::Range && u->as<RangeArg>().type == AxisType::Reduce;
  EXPECT_EQ(window_loops, 0u) << linear_str(k.linear);
  SN_SKIP_WITHOUT_DEVICE("CL", testrt::cl_required());
  testrt::expect_matches_oracle(g, outs, data, "3x3 stride-2 max pool on OpenCL", -1, -1, {}, "CL");
}

// A 2x2 max pool over relu(x + bias) reads the bias inside its window but not per window tap:
// copies along the output axes would share nothing, so the pool gets its vector lanes and no
// register tile; its window is unrolled whole (2 x 2 steps: constant offsets, no loops of 2). (Over
// a convolution, relu(conv + bias) is stored by the convolution's kernel: see ScheduleTest.)
TEST(Opts, APoolKernelGetsNoRegisterTileForItsBias) {
  Graph g;
  const UOp* x = input(g, dtypes::float32, {8, 16, 32, 32});
  const UOp* b = input(g, dtypes::float32, {1, 16, 1, 1});
  std::vector<const UOp*> outs{max_pool2d(g, relu(g, add(g, x, expand(g, b, {8, 16, 32, 32}))), {2, 2}, {2, 2})};
  Schedule s = schedule_graph(g, outs);
  ASSERT_EQ(s.kernels.size(), 1u);
  const ScheduledKernel* pool = &s.kernels[0];
  LoweredKernel k = lower_kernel(g, pool->ast, cpu_like());
  int upcasts = 0, unrolls = 0;
  for (const Opt& o : k.opts)
    if (o.op == OptOp::Split && o.type != AxisType::Thread) {
      (o.type == AxisType::Unroll ? unrolls : upcasts)++;
      if (o.type == AxisType::Unroll) {
        EXPECT_EQ(o.amount, 2) << opts_str(k.opts);
      }
    }
  EXPECT_EQ(upcasts, 1) << opts_str(k.opts);  // the lanes
  EXPECT_EQ(unrolls, 2) << opts_str(k.opts);  // the window's two axes, whole
  size_t window_loops = 0;                    // no loop of the window is left
  for (const UOp* u : k.linear->src()) window_loops += u->op == Op::Range && u->as<RangeArg>().type == AxisType::Reduce;
  EXPECT_EQ(window_loops, 0u) << linear_str(k.linear);
  EXPECT_EQ(expect_replays(g, outs, cpu_like(), "x+bias+relu, pool"), 1);
}

// The GPU heuristic's register tile: a matmul's 8x8 (N's 8 copies a work-group apart, after its
// LOCAL, so N is the work-group's dimension 0), smaller as the GPU has more multiprocessors to fill
// (4 work-groups of 128 each), none where even one copy per work-item leaves some idle.
TEST(Opts, GpuTilesShrinkToFillTheMultiprocessors) {
  Graph g;
  const UOp *a = input(g, dtypes::float32, {256, 256}), *b = input(g, dtypes::float32, {256, 256});
  std::vector<const UOp*> outs{gemm(g, a, b)};
  Schedule s = schedule_graph(g, outs);  // the GEMM is the last kernel (after B's repack)
  auto opts_with = [&](int units) {
    Target t = gpu_like();
    t.compute_units = units;
    return opts_str(lower_kernel(g, s.kernels.back().ast, t).opts);
  };
  // 65536 outputs; ranges: 0 rows, 1 columns, 2 the reduce axis
  EXPECT_EQ(opts_with(0), "UPCAST(0,4) UPCAST(0,2) UNROLL(2,4) LOCAL(0,4) LOCAL(1,32) UPCAST(1,8)");  // unknown: 8x8
  EXPECT_EQ(opts_with(2),
            "UPCAST(0,4) UPCAST(0,2) UNROLL(2,4) LOCAL(0,4) LOCAL(1,32) UPCAST(1,8)");     // 65536/64 >= 1024
  EXPECT_EQ(opts_with(16), "UPCAST(0,4) UNROLL(2,4) LOCAL(0,4) LOCAL(1,32) UPCAST(1,2)");  // 8 copies: 8192 items
  EXPECT_EQ(opts_with(132), "UNROLL(2,4) LOCAL(0,4) LOCAL(1,32)");                         // 65536 < 4 x 132 x 128
  Target t = gpu_like();
  t.compute_units = 16;
  EXPECT_GE(expect_replays(g, outs, t, "matmul on 16 units"), 1);
}

TEST(Opts, RulesNameTheProblem) {
  Graph g;
  const UOp *a = input(g, dtypes::float32, {12, 8}), *b = input(g, dtypes::float32, {8, 10});
  std::vector<const UOp*> outs{gemm(g, a, b)};
  Schedule s = schedule_graph(g, outs);
  const UOp* ast = s.kernels.at(0).ast;
  auto error_for = [&](const Target& t, std::vector<Opt> opts) {
    LowerOptions o;
    o.opts = std::move(opts);
    return testutil::error_of([&] { lower_kernel(g, ast, t, o); });
  };
  // ranges: 0 and 1 are the output axes (12, 10), 2 the reduce axis (8)
  EXPECT_NE(error_for(cpu_like(), {Opt::local(0, 4)}).find("LOCAL"), std::string::npos);
  EXPECT_NE(error_for(cpu_like(), {Opt::group(2, 4)}).find("local memory"), std::string::npos);
  EXPECT_NE(error_for(gpu_like(), {Opt::thread(0, 2)}).find("THREAD"), std::string::npos);
  EXPECT_NE(error_for(gpu_like(), {Opt::nolocals(), Opt::local(0, 4)}).find("NOLOCALS"), std::string::npos);
  EXPECT_NE(error_for(gpu_like(), {Opt::local(0, 5)}).find("does not divide"), std::string::npos);
  EXPECT_NE(error_for(gpu_like(), {Opt::unroll(0, 2)}).find("REDUCE"), std::string::npos);
  EXPECT_NE(error_for(gpu_like(), {Opt::padto(0, 64)}).find("4x"), std::string::npos);
  EXPECT_NE(error_for(gpu_like(), {Opt::swap(0, 7)}).find("no range"), std::string::npos);
  EXPECT_NE(
      error_for(gpu_like(), {Opt::local(0, 2), Opt::local(0, 3), Opt::local(1, 2), Opt::group(2, 2)}).find("at most 3"),
      std::string::npos);
}

}  // namespace
}  // namespace sn
