// Scheduling: Callify + Rangeify + kernel split. Turns a tensor-level graph into kernels in
// launch order over a list of buffers.
//
// ---- The kernel IR (the contract between rangeify and codegen) --------------------------
// A kernel AST is a graph in the same Graph, with only these ops, every value a scalar
// (shape ()):
//   Sink(s0, s1, ...)            root, dtype void; arg: std::string kernel name
//   Store(addr, value[, gate])   write value at addr (only when the bool gate holds)
//   Param(shape_uop({n}))        buffer slot k of the kernel: dtype elem.as_ptr(Global),
//                                arg ParamArg{slot=k, device}; n = element count
//   Index(param, idx)            address of element idx (idx: index-typed scalar expression);
//                                dtype = the param's pointer dtype
//   Load(addr[, alt, gate])      read; when gate (bool) is false the result is alt (no access)
//   Range(bound)                 loop variable 0..bound-1, dtype index,
//                                arg RangeArg{id (unique in the kernel), Loop or Reduce}
//   Reduce(value, r0, r1, ...)   reduce value over the Reduce ranges r_i; ReduceArg{op, {}}
//   Const, DefineVar             constants; symbolic variables (bound at launch by name)
//   elementwise ops              every primitive and decomposed elementwise op, Cast, Bitcast,
//                                Where; index math uses Add/Mul/Idiv/Mod (floor semantics)
// The loops of a Store are the Ranges its address/value/gate use that no Reduce closes.
// Codegen decides loop order, threads, vectorization and accumulators.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/ir/graph.h"

namespace sn {

struct ScheduleBuffer {
  enum class Kind { Input, Output, Intermediate, Constant };
  Kind kind;
  DType dtype;        // element dtype
  int64_t size;       // elements (a symbolic shape allocates the largest size its variables allow)
  const UOp* source;  // Input: the tensor-level Buffer node; Output: the output root it holds;
                      // Intermediate: the tensor-level value it holds; Constant: the Binary node
                      // whose bytes it holds
  int index;          // Input: index among the inputs (Buffer order of first use); Output: output number;
                      // Intermediate: its number among the intermediates; Constant: among the constants
};

struct ScheduledKernel {
  const UOp* ast;            // kernel IR (see above), Sink root
  std::vector<int> buffers;  // Param slot k of the kernel -> index into Schedule::buffers
                             // (slot 0: the buffer it stores; then the ones it loads, in first-use order)
};

struct Schedule {
  std::vector<ScheduleBuffer> buffers;
  std::vector<ScheduledKernel> kernels;  // launch order (dependencies first)
  std::vector<const UOp*> vars;          // DefineVar nodes the kernels use (bound at launch)
  uint64_t hash = 0;                     // content hash of the callified function (buffers -> slots)
};

// What the schedule's rules take from the target the program compiles for.
struct ScheduleOptions {
  int64_t packed_panel = 32;  // Target::packed_panel: the width of packed operands' panels
  // Whether what depends on no input runs once, at compile (the device can run kernels then;
  // precompute_constants): a copy of a constant is then free at run time.
  bool precomputes = true;
  int64_t cache_bytes = 0;  // Target::all_cache_bytes: the caches of all cores together (0: unknown)
};

// Lower the tensor-level graph under `outputs` to kernels. Every output gets its own buffer;
// every tensor-level Buffer node is an input. In-place updates (After(target, Store(buffer,
// value)), tensor.h's assign) under the outputs or listed in `effects` write their value into the
// input buffer: each value is stored, then copied into the buffer by a kernel launched after every
// other (so every read of the old value comes first); an After reads as its value. Throws Error on
// unsupported programs.
Schedule schedule_graph(Graph& g, std::span<const UOp* const> outputs, std::span<const UOp* const> effects = {},
                        const ScheduleOptions& options = {});

}  // namespace sn
