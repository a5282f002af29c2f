// Kernel optimizations (the spec's OptOps, CPU subset): each splits one Range of a kernel AST
// into two, giving one part a new AxisType. The part that stays keeps the range's id, so the
// loop order (Range ids, outer to inner) survives every split.
//   THREAD(axis, n)  top split: axis = t * (N/n) + rest, t in [0, n) runs on core t
//   UPCAST(axis, n)  inner split of a Loop axis: n unrolled copies of every store (codegen expand)
//   UNROLL(axis, n)  inner split of a Reduce axis: n unrolled copies of the reduced value
// The heuristic first orders the loops (the axis a store walks contiguously innermost), then
// upcasts axes that let loads be reused across copies (matmul-like register tiles), then
// splits the outermost Loop axis across the cores when there is enough work.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/codegen/codegen.h"

namespace sn {

std::string opt_str(const Opt& o);

// Applies one opt. Throws Error(InvalidArg) when the axis does not exist, the bound is not a
// constant multiple of the amount, or the axis type does not allow the opt.
const UOp* apply_opt(Graph& g, const UOp* sink, const Opt& opt);

// Gives the Loop ranges ids 0..L-1 in the order `loops` (outer to inner) and the Reduce ranges
// the following ids in the order `reduces`; ranges in neither keep their relative order after
// those. Returns the new sink.
const UOp* renumber_ranges(Graph& g, const UOp* sink, const std::vector<const UOp*>& loops,
                           const std::vector<const UOp*>& reduces);

struct OptResult {
  const UOp* sink = nullptr;
  std::vector<Opt> applied;
  int64_t threads = 1;
};

// The heuristic (hand-coded) optimizer for CPU targets.
OptResult optimize_kernel(Graph& g, const UOp* sink, const CpuTarget& target, const LowerOptions& opts);

// Ranges closed by some Reduce (reduce axes) and the others (loop axes), both by id.
void classify_ranges(const UOp* sink, std::vector<const UOp*>* loops, std::vector<const UOp*>* reduces);

}  // namespace sn
