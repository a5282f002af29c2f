// BEAM search: a kernel's opts chosen by timing candidates on the device instead of by the
// heuristic (the spec's BEAM; tinygrad's codegen/opt/search.py is the model).
//
// Two searches, each a beam: one grows the heuristic's list, one starts from the plain loop nest
// (no opts; left out where that nest runs longer than half a second). Each step extends every kept
// candidate by one of the spec's OptOps (UPCAST by 2, 3, 4, 5, 7, 8 or 16, UNROLL by 2, 3, 4, 7, 8
// or 16, both also by a whole axis of up to 32; THREAD, SWAP; LOCAL and GROUP on GPU targets),
// lowers and compiles the new lists in parallel on all cores, each in a scratch graph of its own
// (the user's graph does not grow), then times them one by one on the device (zero-filled
// buffers, early stop for the clearly slower) and keeps the `width` fastest. A search stops when a
// step brings no candidate faster than its own best, or when its part of the time budget is spent:
// the first search has half of it when the second will run, and the second at least the other half
// from its own start. A kernel reached by either search again (through another list of opts) keeps
// its first timing instead of being timed again, and the search that reached it may still grow it.
// The heuristic is timed twice (a search's first timing runs on a cold machine) before its time
// decides whether the plain loop nest is worth timing; the plain nest is then timed in full, not
// stopped early against the heuristic.
// The winner is timed against the heuristic in turns at the end, so the result is never slower
// than the heuristic as timed in the same search.
//
// Results are kept in memory and in the disk cache (core/runtime/disk_cache.h) under the kernel's
// content hash, the target, the width and Sinter's version, so a kernel is searched once.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/codegen/codegen.h"
#include "core/ir/opt_op.h"
#include "core/runtime/device.h"

namespace sn {

struct BeamOptions {
  int width = 4;           // candidates kept per step
  int max_steps = 10;      // opts added at most, beyond the heuristic's
  double budget_s = 30;    // no new step starts after this long (the best so far is kept)
  bool disk_cache = true;  // look results up in (and store them to) the disk cache
  int debug = 0;           // >= 2: one line per step on stderr
  // Tests: replaces one timed launch on the device (its milliseconds), for searches whose timings
  // are known in advance; the search runs every launch it would run on the device through it. Such a
  // search neither answers from nor adds to the results kept in memory and on disk.
  std::function<double(const DeviceKernel&)> time_launch;
};

// The opts of kernel `ast` (kernel IR, as scheduled) BEAM finds on `device`. `base` gives the
// lowering options (allow_threads, ...; its opts are ignored). A kernel with launch-time
// variables, or on a device that cannot run, gets the heuristic's opts. Throws what lowering the
// heuristic's choice throws.
std::vector<Opt> beam_search(const UOp* ast, ComputeDevice& device, const LowerOptions& base,
                             const BeamOptions& options);

// Counts since the process started, for tests and SN_DEBUG.
struct BeamStats {
  uint64_t searches = 0;      // kernels searched
  uint64_t from_scratch = 0;  // of them, searched from the plain loop nest too
  uint64_t memory_hits = 0;   // answered from this process's results
  uint64_t disk_hits = 0;     // answered from the disk cache
  uint64_t compiled = 0;      // candidates compiled
  uint64_t timed = 0;         // candidates timed
};
BeamStats beam_stats();

// The opts a search may add to kernel `sink` (its kernel IR after the opts `applied`): one step.
std::vector<Opt> beam_actions(const UOp* sink, const Target& target, const std::vector<Opt>& applied,
                              bool allow_threads);

// SN_BEAM from the environment (0 when unset or not a positive number).
int beam_width_from_env();

// Tests: forget the results kept in memory.
void reset_beam_memory();

}  // namespace sn
