// Multi-device tensors: placing a tensor on other devices (Copy), sharding it over an n-tuple device,
// and the spec's collectives, each built from the primitives exactly as the spec composes them
// ("Multi-Device Collectives"). A tensor on an n-tuple device D = (d0, ..., dn-1) keeps its full
// (global) shape; its `axis` property says how the devices hold it: axis k >= 0, device i holds
// the i-th of n equal blocks along axis k; axis null (-1), every device holds all of it
// (replicated). A Copy to an n-tuple device shards on axis 0. How such a graph runs: core/multi.h.
//
// Device names are canonical ("CPU:0" is "CPU"); a tuple lists distinct devices. Every builder
// throws Error(InvalidArg) naming the builder and what is wrong (a device listed twice, an axis out
// of range, an axis length that does not divide among the devices, a tensor that is not sharded
// where it must be).
#pragma once
#include <cstdint>
#include <string>

#include "core/ir/graph.h"

namespace sn {

// A device or device tuple from its name: "CPU:1", "CPU:0,CPU:1" or "(CPU:0,CPU:1)". Names are made
// canonical; a tuple must name distinct devices (a tuple of one is allowed). Throws InvalidArg
// naming `what` for an empty or malformed name or a duplicate.
Device parse_device_names(const std::string& text, const char* what);

// The spec's Copy: x on device d. A single device takes the whole tensor; an n-tuple device shards
// axis 0 (its length must divide by n). x may itself be on a tuple (a copy back gathers it).
const UOp* to_device(Graph& g, const UOp* x, const Device& d);
// x split along `axis` (negative counts from the end) over the n-tuple device d: Copy shards axis 0,
// so another axis is permuted to the front, copied and permuted back. x must be on one device (or
// already sharded the same way, then it is returned as is).
const UOp* shard(Graph& g, const UOp* x, const Device& d, int64_t axis);

// The collectives. x of shape (s, ...) on one device for broadcast and scatter; x sharded on axis 0
// of an n-tuple device (shape (n*s, ...), each device holding (s, ...)) for the others. The trailing
// axes ride along; the spec's shapes are those of the leading axis.
//   broadcast       x replicated on every device of d                 (s, ...) on d, axis null
//   scatter         x split into n blocks, one per device             (s, ...) on d, axis 0
//   gather          every block onto the first device of x's tuple    (n*s, ...) on d0
//   reduce          gather, then the sum of the n blocks              (s, ...) on d0
//   allgather       every block onto every device                     (n*s, ...) on D, axis null
//   reduce_scatter  the blocks summed over devices, then scattered    (s, ...) on D, axis 0 (s % n == 0)
//   allreduce       reduce_scatter then allgather                     (s, ...) on D, axis null
const UOp* broadcast(Graph& g, const UOp* x, const Device& d);
const UOp* scatter(Graph& g, const UOp* x, const Device& d);
const UOp* gather(Graph& g, const UOp* x);
const UOp* reduce_devices(Graph& g, const UOp* x);
const UOp* allgather(Graph& g, const UOp* x);
const UOp* reduce_scatter(Graph& g, const UOp* x);
const UOp* allreduce(Graph& g, const UOp* x);

}  // namespace sn
