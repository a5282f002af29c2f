// Codegen: a kernel AST (see core/schedule/schedule.h for the kernel IR) becomes a `Linear`
// list of instructions in execution order, ready for a renderer.
//
// Stages (each a small set of rewrites; `LoweredKernel::stages` keeps the graph after each):
//   optimize   core/opt (which builds on codegen, never the reverse): OptOps chosen by the target's heuristic (or
//   forced): loop order (Swap),
//              UPCAST / UNROLL, THREAD on CPUs; GLOBAL grid, LOCAL and GROUP_REDUCE on GPUs
//   launch     THREAD -> Special("core_id"), GLOBAL -> gidx0..2 (folded into the target's grid
//              limits): the grid's indices, before expand builds the kernel over them; then the
//              index math simplified, so that expand's copies start from final forms
//   expand     the contiguous UPCAST axis of a store becomes vector lanes (<k x T> values,
//              vector and masked loads; strided accesses lane by lane, or as one gather or
//              scatter on targets with those); other UPCAST / UNROLL ranges become unrolled
//              copies (hash-consing shares what does not depend on them); strided loads that
//              together read a whole row share one plain wide load; copies whose lanes together
//              read a square tile of rows load each row once, the copies taking its columns
//   simplify   index expressions, gates and loop bounds through the symbolic simplifier
//   reduce     Reduce -> an accumulator (a Reg Buffer: init, update inside the loop, read after);
//              GROUP_REDUCE partials meet in a Local Buffer behind a Barrier; a sum's products of a
//              zero constant (a padded tap) and a load of a buffer known finite are left out
//   parallel   LOCAL/GROUP_REDUCE -> lidx0..2, WARP -> lidx0: the work-group's indices, after
//              reduce (which needs GROUP_REDUCE as a range)
//   isel       emulated tensor cores through local memory, devectorize (targets without vector types), floor Idiv/Mod
//   -> C-truncating
//              CDiv/CMod (+ correction where signs are unknown), float16/bfloat16 math in float32
//              (rounded after each op), Threefry -> ARX rounds, the transcendentals the target
//              lacks decomposed
//   linearize  toposort into Linear(...) with Range (loop open) / End (loop close) placed by the
//              loop nest; loop-invariant nodes sit in the outermost loop they can; gated stores
//              inside If/Endif.
//
// The Linear's instructions, what a renderer sees (values may have vector dtypes, T x k):
//   Param                 buffer slot (ParamArg.slot), pointer dtype
//   DefineVar             launch-time variable (index of LoweredKernel::vars by name)
//   Special(bound)        "core_id": THREAD index in [0, threads); "gidx<d>": work-group index,
//                         "lidx<d>": work-item index in its group, each in [0, bound)
//   Const                 scalar literal (renderers inline it)
//   Vectorize(lanes...)   a vector from scalar lanes
//   Buffer(Reg)           a private register/stack slot of BufferArg.size elements of its dtype
//   Buffer(Local)         work-group shared memory of BufferArg.size elements (GPU targets)
//   Barrier(deps...)      every work-item of the group waits here (after deps)
//   Index(base, idx)      address of scalar element idx (base: Param, Buffer or After); a pointer
//                         dtype with k lanes addresses k consecutive elements, or with an idx of
//                         k lanes, the k elements idx names (a gather or a scatter)
//   After(base, deps...)  base itself (ordering only)
//   Load(addr[, alt, gate]), Store(addr, value[, gate])   a gate with k lanes masks each lane
//   If(gate) ... Endif(if)  stores that run only where the scalar gate holds
//   Range(bound)          opens a loop 0..bound-1 (the Range value is the loop variable)
//   End(body, range)      closes that loop
//   elementwise ops       Add Mul Max CDiv CMod CmpLt CmpNe CmpEq CmpGt CmpGe CmpLe Xor Or And
//                         Shr Shl Where Neg Sub Div Recip Trunc Not Sqrt Exp2 Log2 Sin Pow
//                         Mulacc Cast Bitcast, on bool/int/index/float32/float64 values;
//                         float16 and bfloat16 only appear in Load/Store/Cast/Where.
//   Wmma(a, b, c)         a tensor-core instruction of the warp (Target::tensor_core(arg)): the lane's
//                         fragments of A, B (Vectorize of its elements) and C in, its D fragment out
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/codegen/launch.h"
#include "core/codegen/target.h"
#include "core/ir/graph.h"
#include "core/ir/opt_op.h"

namespace sn {

struct LowerOptions {
  bool optimize = true;  // run the heuristic optimizer (false: as scheduled, one thread)
  // When set, exactly these opts are applied in order (axis = Range id of the AST) instead of
  // the heuristic; for tests, BEAM search and forced kernel options.
  std::optional<std::vector<Opt>> opts;
  bool allow_threads = true;  // allow a THREAD split across the target's cores
  int64_t min_ops_per_thread = 1 << 16;
  bool simplify = true;  // run the symbolic simplifier over index math
  // Param slots (ascending) whose every element is finite when the kernel runs (core/schedule/finite.h):
  // a sum's products of their loads with a zero constant are left out (lower_reduces).
  std::vector<int64_t> finite_params;
  // Called after each stage with its name and the graph ("ast", "optimized", "launch", "expanded",
  // "simplified", "reduce", "parallel", "isel", "linear"); SN_DEBUG printing hooks in here.
  std::function<void(std::string_view stage, const UOp* root)> on_stage;
};

struct LoweredKernel {
  std::string name;  // readable name, e.g. "r_256_2_16_4_64" (not unique)
  Target target;     // what it was lowered for
  const UOp* ast = nullptr;
  const UOp* linear = nullptr;                             // Linear(...)
  std::vector<KernelParam> params;                         // sorted by slot; slots are dense 0..n-1
  std::vector<KernelVar> vars;                             // sorted by name; vars[i] is the i-th launch value
  int64_t threads = 1;                                     // launch core_id = 0..threads-1
  LaunchDims dims;                                         // GPU grid (gidx/lidx Specials)
  KernelFeatures features;                                 // what it uses of the GPU model
  std::vector<Opt> opts;                                   // the optimizer's choices, in order (replayable)
  uint64_t key = 0;                                        // content hash of the AST + target + options (cache key)
  std::vector<std::pair<std::string, const UOp*>> stages;  // graph after each stage
  std::vector<std::pair<std::string, double>> stage_ms;    // CPU milliseconds of each stage, in order
};

// Cache key of lower_kernel(ast, target, opts) without lowering.
uint64_t kernel_key(const UOp* kernel_ast, const Target& target, const LowerOptions& opts = {});

// Printable listing of a Linear: one instruction per line, loop bodies indented.
std::string linear_str(const UOp* linear);

// ---- the stages, for tests and for other backends -----------------------------------------
// (lower_kernel in core/pipeline.h runs them in order, after core/opt's optimize_kernel.)
// Throws Error(InvalidArg) when `ast` breaks the kernel IR contract of core/schedule/schedule.h.
void check_kernel_ast(const UOp* ast);
// Each takes and returns a Sink.
// What expand may emit for an access that walks the vector lanes with a constant stride.
struct LaneAccess {
  bool gathers = false;  // one gather or scatter (an Index with a k-lane index): Target::has_gather_scatter
  bool strided = false;  // a load with stride 2 to 4 as one contiguous load that many times wider, masked to
                         // the lanes it keeps, and a shuffle: targets with vector registers (Target::vector_bits)
  bool tiles = false;    // the renderer transposes square tiles of vectors in registers (the CPU's LLVM renderer):
                         // lane-by-lane stores of copies along a contiguous axis become vector stores
  static LaneAccess of(const Target& t) {
    return {t.has_gather_scatter, t.vector_bits >= 128, t.renderer == "CPU" && t.vector_bits >= 128};
  }
};
// UPCAST/UNROLL copies and vector lanes; an access that walks the lanes with a constant stride as
// `access` allows, else one scalar access per lane.
const UOp* expand_kernel(Graph& g, const UOp* sink, LaneAccess access = {});
// One kernel Store rebuilt with `range` (an UPCAST range of constant bound k) as k vector lanes,
// or nullptr when the store's address is not contiguous along it.
const UOp* vectorize_store(Graph& g, const UOp* store, const UOp* range, LaneAccess access = {});
// Symbolic simplification of index math; under_gates: also what each gated load's gate proves about
// its address (a pad's i - 2 is non-negative where the load happens).
const UOp* simplify_indices(Graph& g, const UOp* sink, bool under_gates = true);
// Reduce -> accumulators (+ local memory). A float sum's product of a zero constant and a load of a
// `finite_params` slot is left out: it is +-0 and adds nothing (but the sign of an all-zero sum).
const UOp* lower_reduces(Graph& g, const UOp* sink, std::span<const int64_t> finite_params = {});

// The launch shape index_launch_axes and index_group_axes found.
struct ParallelDims {
  int64_t threads = 1;                                          // THREAD: launches of core_id
  std::array<const UOp*, 3> global{nullptr, nullptr, nullptr};  // work-groups per dimension (null: 1)
  std::array<int64_t, 3> local{1, 1, 1};                        // work-items per group per dimension
};
// After optimize: THREAD -> Special("core_id"), GLOBAL -> Special("gidx<d>"); resets *out. Refuses
// work-group axes on a target without work-groups.
const UOp* index_launch_axes(Graph& g, const UOp* sink, const Target& target, ParallelDims* out);
// After lower_reduces: LOCAL, GROUP_REDUCE, WARP -> Special("lidx<d>").
const UOp* index_group_axes(Graph& g, const UOp* sink, const Target& target, ParallelDims* out);

// isel, first: Wmma of emulated tensor cores through local memory (core/codegen/tensor_cores.cpp).
const UOp* emulate_tensor_cores(Graph& g, const UOp* sink, const Target& target);
// isel: floor division to C division, half math in float32, Threefry rounds, the
// transcendentals the target lacks decomposed, and (vector_bits = 0) devectorize first.
const UOp* select_instructions(Graph& g, const UOp* sink, const Target& target);
const UOp* devectorize(Graph& g, const UOp* sink);  // every vector value -> its scalar lanes
// The transcendental ops a target may have natively.
inline constexpr Op kTranscendentals[] = {Op::Exp2, Op::Log2, Op::Sin, Op::Sqrt, Op::Pow};
// Decomposes the listed ops (of Exp2, Log2, Sin, Sqrt, Pow) on float32/float64 values into
// polynomials and bit manipulation (see transcendental.cpp for the algorithms and accuracy).
const UOp* decompose_transcendentals(Graph& g, const UOp* sink, std::span<const Op> ops = kTranscendentals);
class PatternMatcher;
// The rule behind it, for passes that decompose in their own rewrite: ctx is a
// `const std::span<const Op>*` naming the ops to decompose.
const PatternMatcher& transcendental_rules();
const UOp* linearize(Graph& g, const UOp* sink);  // -> Linear
// Fills k's params, vars, features and launch grid (from `dims`) from k.linear; checks the target's local memory.
void describe_lowered(LoweredKernel& k, const Target& target, const ParallelDims& dims);

}  // namespace sn
