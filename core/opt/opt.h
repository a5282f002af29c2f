// Kernel optimization: the spec's OptOps (core/ir/opt_op.h) applied to a kernel AST, and the
// hand-coded heuristics that choose them per target. Every choice a heuristic makes is an Opt, so
// the list it returns replays exactly the same kernel (LowerOptions::opts).
//
//   Split(axis, k, type[, top])  a Range of bound n becomes rest*k + part (part inner) or
//                                part*(n/k) + rest (part outer, "top"); rest keeps the id, type
//                                and loop position, part gets the next free id and `type`:
//                                  UPCAST   unrolled copies / vector lanes of a loop axis (expand)
//                                  UNROLL   unrolled copies / vector lanes of a reduce axis
//                                  THREAD   the CPU core index (outer; uneven chunks allowed)
//                                  LOCAL    a work-item index inside a work-group (GPU)
//                                  GROUP_REDUCE  a reduce axis split across the work-items of a
//                                           group, combined through local memory
//                                  LOOP     of a loop axis, the inner part as the innermost loop
//                                           (a cache block); of a reduce axis (top), the outer
//                                           part as a loop over the reduce's blocks, their sums
//                                           accumulated in the output (reduce_blocks_rule)
//   Padto(axis, m)               the bound rounds up to a multiple of m; the extra iterations
//                                load nothing, store nothing and add the reduce's identity
//   Swap(a, b)                   ranges a and b exchange ids, i.e. loop positions (loops at the
//                                same depth nest by id, outer to inner)
//   Nolocals                     no LOCAL or GROUP_REDUCE splits afterwards
//   TC(k, t[, pad])              first, on a kernel whose one Reduce sums A(M,K) * B(K,N) over range k:
//                                tensor core t of the target computes it (apply_tc in opt.cpp):
//                                a WARP range of its lanes, M, N, K divided by its m, n, k (padded
//                                to them with pad), the product a Wmma of per-lane fragments, one
//                                store per C element
//
// Before any opt, a target with GLOBAL/LOCAL axes turns every LOOP range into a GLOBAL one (the
// grid); on CPUs loops stay LOOP. The same start and the same opts give the same kernel.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/codegen/codegen.h"
#include "core/ir/opt_op.h"

namespace sn {

// A kernel AST under optimization: its current Sink and the opts applied so far.
struct OptState {
  const UOp* sink = nullptr;
  std::vector<Opt> applied;
  bool nolocals = false;

  // ranges_of(sink) and the Range with an id (nullptr when none), walked once per sink: the
  // heuristic and every opt look ranges up many times between two changes of the kernel.
  const std::vector<const UOp*>& ranges() const;
  const UOp* range(int64_t id) const;

 private:
  mutable const UOp* ranges_sink_ = nullptr;
  mutable std::vector<const UOp*> ranges_;
};

// The starting point of optimization for `target` (LOOP -> GLOBAL on GPU targets).
OptState start_optimization(Graph& g, const UOp* sink, const Target& target);

// Applies one opt and records it. Throws Error(InvalidArg) naming the opt and the rule when the
// axis does not exist, the amount does not fit, or the target or axis type does not allow it.
void apply_opt(Graph& g, OptState& k, const Opt& opt, const Target& target);

struct OptResult {
  const UOp* sink = nullptr;
  std::vector<Opt> applied;
  int64_t threads = 1;
};

// Forced opts (opts.opts), else the hand-coded heuristic of the target, else nothing
// (opts.optimize = false).
OptResult optimize_kernel(Graph& g, const UOp* sink, const Target& target, const LowerOptions& opts);

// The heuristics: each applies its choices to `k` (core/opt/heuristic_cpu.cpp, heuristic_gpu.cpp).
void cpu_heuristic(Graph& g, OptState& k, const Target& target, const LowerOptions& opts);
void gpu_heuristic(Graph& g, OptState& k, const Target& target, const LowerOptions& opts);

// ---- helpers for the heuristics ----------------------------------------------------------------

// A readable kernel name from its ranges: "r_256_16" (reduce) or "E_4096" (elementwise), the bounds by axis
// type (grid, local, loop, upcast, reduce, unroll), or the Sink's own name when it has one.
std::string kernel_name(const UOp* sink);

// Why SPLIT(r, blocks, LOOP, top) cannot put REDUCE range r's blocks in a loop of their own, the
// sum accumulated in the output (opt.cpp), or "" where it can.
std::string reduce_blocks_rule(const UOp* sink, const UOp* r);

// Ranges closed by some Reduce (reduce axes) and the others (loop axes), both by id.
void classify_ranges(const UOp* sink, std::vector<const UOp*>* loops, std::vector<const UOp*>* reduces);
// The Range with this id, or nullptr.
const UOp* range_with_id(const UOp* sink, int64_t id);
// Whether a Reduce sits in the value (a convolution inside a max pool's window).
bool contains_reduce(const UOp* value);
// A pooling window: a Reduce whose axes are each at most 4 long, at most 16 steps in all, around no
// other reduce, which the heuristics unroll whole; `windows` gets the unrolls of its axes longer
// than 1. (Axes unrolled already count: they are copies.)
bool window_reduce(const UOp* u, std::vector<Opt>* windows = nullptr);
// Swaps that give the listed ranges (ids, in the wanted order) the ascending ids they hold now
// between them: after them, order[i] sits at the i-th smallest of those ids.
void reorder_ranges(Graph& g, OptState& k, const std::vector<int64_t>& order, const Target& target);

}  // namespace sn
