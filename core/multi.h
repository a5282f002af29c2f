// Programs that span devices. A graph with a Copy, a Replicated or a value on an n-tuple device
// (core/tensor/multi.h) compiles to single-device programs ("steps") and copies between them:
//
//   lower   every value on an n-tuple device becomes n per-device values (its shards, or its
//           replicas), one rule per op, following the spec's axis property: elementwise ops and
//           movement ops that keep the shard axis whole run shard-wise; a reduce over the shard
//           axis is a partial reduce on each device, copies of the partials and their combination on
//           every device (the result is replicated); Copy slices the source on its device, copies
//           the slices and joins them (Pad + Add) on the destination; Replicated drops an axis each
//           device holds one copy of. What a device computes reads only values on that device.
//   split   the per-device graph is cut at its copies: a node's wave is one more than the wave of
//           the value its latest copy carries; each (device, wave) is a step, compiled by
//           compile_program for that device (so the kernel and program caches work as for any
//           program); values that cross steps are step outputs and inputs.
//   run     MultiPlan (core/runtime/program.h): every copy and step is a task that starts when the
//           tasks making its inputs are done, so the devices work in parallel where data allows.
//
// The program's inputs and outputs are single buffers on the device it is compiled for: an input
// that the graph shards is scattered from there, a sharded output is gathered there (a replicated
// one is read from one device).
#pragma once
#include <memory>
#include <span>

#include "core/pipeline.h"

namespace sn {

// Whether the graph under `roots` needs more than one device: it has a Copy, a Replicated or a value
// on an n-tuple device.
bool spans_devices(std::span<const UOp* const> roots);

// compile_program for such a graph (it calls this itself). Throws Error(Unsupported) for what a
// multi-device program cannot do yet (effects, symbolic shapes, launch-time variables,
// kernel_opts), naming it; Error(InvalidArg) for operands on different devices or sharded on
// different axes, and for movement ops that split a shard.
std::shared_ptr<const Program> compile_multi(Runtime& rt, Graph& g, std::span<const UOp* const> outputs,
                                             std::shared_ptr<ComputeDevice> device, const CompileOptions& options);

}  // namespace sn
