// Codegen: a kernel AST (see core/schedule/schedule.h for the kernel IR) becomes a `Linear`
// list of instructions in execution order, ready for a renderer.
//
// Stages (each a small set of rewrites; `LoweredKernel::stages` keeps the graph after each):
//   optimize   core/opt: loop order, THREAD split across cores, UPCAST / UNROLL
//   expand     the contiguous UPCAST axis of a store becomes vector lanes (<k x T> values,
//              vector and masked loads); other UPCAST / UNROLL ranges become unrolled copies
//              (hash-consing shares what does not depend on them); THREAD ranges become
//              Special("core_id")
//   simplify   index expressions, gates and loop bounds through the symbolic simplifier
//   reduce     Reduce -> an accumulator (a Reg Buffer: init, update inside the loop, read after)
//   isel       floor Idiv/Mod -> C-truncating CDiv/CMod (+ correction where signs are unknown),
//              float16/bfloat16 math in float32 (rounded after each op), Threefry -> ARX rounds,
//              Exp2/Log2/Sin/Sqrt/Pow decomposed when the target lacks native math
//   linearize  toposort into Linear(...) with Range (loop open) / End (loop close) placed by the
//              loop nest; loop-invariant nodes sit in the outermost loop they can.
//
// The Linear's instructions, what a renderer sees (values may have vector dtypes, T x k):
//   Param                 buffer slot (ParamArg.slot), pointer dtype
//   DefineVar             launch-time variable (index of LoweredKernel::vars by name)
//   Special("core_id")    THREAD index in [0, threads)
//   Const                 scalar literal (renderers inline it)
//   Vectorize(lanes...)   a vector from scalar lanes
//   Buffer(Reg)           a private register/stack slot of BufferArg.size elements of its dtype
//   Index(base, idx)      address of scalar element idx (base: Param, Buffer or After); a pointer
//                         dtype with k lanes addresses k consecutive elements
//   After(base, deps...)  base itself (ordering only)
//   Load(addr[, alt, gate]), Store(addr, value[, gate])   a gate with k lanes masks each lane
//   Range(bound)          opens a loop 0..bound-1 (the Range value is the loop variable)
//   End(body, range)      closes that loop
//   elementwise ops       Add Mul Max CDiv CMod CmpLt CmpNe CmpEq CmpGt CmpGe CmpLe Xor Or And
//                         Shr Shl Where Neg Sub Div Recip Trunc Not Sqrt Exp2 Log2 Sin Pow
//                         Mulacc Cast Bitcast, on bool/int/index/float32/float64 values;
//                         float16 and bfloat16 only appear in Load/Store/Cast/Where.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ir/graph.h"

namespace sn {

// What the optimizer and the renderer need to know about the machine.
struct CpuTarget {
  std::string triple = "x86_64-pc-linux-gnu";
  std::string cpu = "generic";  // LLVM CPU name ("znver5")
  std::string features;         // LLVM feature string ("+avx512f,+fma,...")
  int cores = 1;                // THREAD split width (all cores)
  int vector_bits = 128;        // widest SIMD register
  bool has_f16c = false;        // hardware float32 <-> float16 conversion
  // Vector math library the renderer may call for exp2/log2/sin/pow in vectorized loops:
  // "libmvec-avx512", "libmvec-avx2" (glibc's libmvec), or "" (scalar libm calls only).
  std::string vector_math;
  // The renderer has Exp2/Log2/Sin/Sqrt/Pow (LLVM intrinsics, libm). When false, isel
  // decomposes them into polynomials and bit manipulation (decompose_transcendentals).
  // host_cpu_target() clears it when the environment has SN_CPU_NATIVE_MATH=0.
  bool native_math = true;
  // Exp2 by the polynomial even with native math (when it is on, the other four stay native): inline
  // it beats a libm/libmvec call (16M f32: 5.1 vs 6.1 ms; softmax 4096^2, two exp2 per element:
  // ~9.2 vs ~11.5 ms) at the same accuracy (0.81 ulp f32, 0.85 ulp f64; inf/nan/denormals exact).
  bool inline_exp2 = true;

  // Identifies everything that changes generated code (part of kernel cache keys).
  std::string key() const;
};

// One buffer argument of a kernel: bufs[slot] points to `size` elements of `dtype`.
struct KernelParam {
  int64_t slot = 0;
  DType dtype;  // element dtype
  int64_t size = 0;
  bool read = false;     // some Load reads it
  bool written = false;  // some Store writes it
};

// A launch-time variable: vars[i] holds the value of the variable named vars_[i].name.
struct KernelVar {
  std::string name;
  int64_t min = 0, max = 0;
};

// One kernel optimization (the spec's OptOps, CPU subset); see core/opt/opt.h.
enum class OptOp : uint8_t { Thread, Upcast, Unroll };
struct Opt {
  OptOp op;
  int64_t axis;    // Range id in the kernel
  int64_t amount;  // split factor; must divide the (constant) range bound
  bool operator==(const Opt&) const = default;
};

struct LowerOptions {
  bool optimize = true;  // run the heuristic optimizer (false: as scheduled, one thread)
  // When set, exactly these opts are applied in order (axis = Range id of the AST) instead of
  // the heuristic; for tests, BEAM search and forced kernel options.
  std::optional<std::vector<Opt>> opts;
  bool allow_threads = true;  // allow a THREAD split across the target's cores
  int64_t min_ops_per_thread = 1 << 16;
  bool simplify = true;  // run the symbolic simplifier over index math
  // Called after each stage with its name and the graph ("ast", "optimized", "expanded",
  // "simplified", "reduce", "isel", "linear"); SN_DEBUG printing hooks in here.
  std::function<void(std::string_view stage, const UOp* root)> on_stage;
};

struct LoweredKernel {
  std::string name;  // readable name, e.g. "r_256_2_16_4_64" (not unique)
  CpuTarget target;  // what it was lowered for
  const UOp* ast = nullptr;
  const UOp* linear = nullptr;                             // Linear(...)
  std::vector<KernelParam> params;                         // sorted by slot; slots are dense 0..n-1
  std::vector<KernelVar> vars;                             // sorted by name; vars[i] is the i-th launch value
  int64_t threads = 1;                                     // launch core_id = 0..threads-1
  std::vector<std::string> applied_opts;                   // "THREAD(0,2)", "UPCAST(1,4)", ...
  uint64_t key = 0;                                        // content hash of the AST + target + options (cache key)
  std::vector<std::pair<std::string, const UOp*>> stages;  // graph after each stage
};

// Lowers a kernel AST (Sink root, kernel IR) for the target. Throws Error(InvalidArg) when the
// AST breaks the kernel IR contract, Error(Unsupported) for what codegen cannot lower yet.
LoweredKernel lower_kernel(Graph& g, const UOp* kernel_ast, const CpuTarget& target, const LowerOptions& opts = {});

// Cache key of lower_kernel(ast, target, opts) without lowering.
uint64_t kernel_key(const UOp* kernel_ast, const CpuTarget& target, const LowerOptions& opts = {});

// Printable listing of a Linear: one instruction per line, loop bodies indented.
std::string linear_str(const UOp* linear);

// ---- the stages, for tests and for other backends -----------------------------------------
// Each takes and returns a Sink.
const UOp* expand_kernel(Graph& g, const UOp* sink);  // UPCAST/UNROLL copies, THREAD -> Special
// One kernel Store rebuilt with `range` (an UPCAST range of constant bound k) as k vector lanes,
// or nullptr when the store's address is not contiguous along it.
const UOp* vectorize_store(Graph& g, const UOp* store, const UOp* range);
const UOp* simplify_indices(Graph& g, const UOp* sink);  // symbolic simplification of index math
const UOp* lower_reduces(Graph& g, const UOp* sink);     // Reduce -> accumulators
// isel; target.native_math = false adds decompose_transcendentals.
const UOp* select_instructions(Graph& g, const UOp* sink, const CpuTarget& target = {});
// Exp2/Log2/Sin/Sqrt/Pow on float32/float64 values -> ops every renderer emits (polynomials
// with range reduction; see transcendental.cpp for the algorithms and their accuracy).
// Decomposes the listed ops (of Exp2, Log2, Sin, Sqrt, Pow) into polynomials and bit manipulation.
const UOp* decompose_transcendentals(Graph& g, const UOp* sink,
                                     std::initializer_list<Op> ops = {Op::Exp2, Op::Log2, Op::Sin, Op::Sqrt, Op::Pow});
const UOp* linearize(Graph& g, const UOp* sink);  // -> Linear

}  // namespace sn
