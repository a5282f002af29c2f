// Rangeify: lowers one materialized tensor value to a kernel AST (see schedule.h for the kernel
// IR). Index expressions are pushed from the stored value toward the buffers it reads, through
// movement ops; elementwise ops become scalar ops, Reduce gets Reduce ranges. While lowering it
// notes values that should be materialized instead of inlined (Findings); the driver then adds
// them to the plan and lowers again.
#pragma once
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/ir/graph.h"

namespace sn::sched {

struct BufferInfo {
  DType dtype;
  int64_t size;  // elements allocated (the upper bound when the shape is symbolic)
  Device device;
};

// Where values live: every schedule buffer, and which tensor node each holds. Nodes in
// `stored_in` are read with loads (input Buffers, and realized values in other kernels).
struct Plan {
  std::vector<BufferInfo> buffers;
  std::unordered_map<const UOp*, int> stored_in;
};

struct KernelSpec {
  const UOp* root;  // the tensor value the kernel stores (row-major over its shape)
  int out_buffer;
  bool compute;  // false: the root is stored in another buffer already; the kernel copies it
};

// Why lowering wants a value stored instead of inlined (the fusion rules in schedule.cpp).
enum class Why {
  Broadcast,  // a Reduce recomputed along loops it does not depend on
  Duplicate,  // a Reduce inlined at two places (another indexing or another kernel)
  Recompute,  // an elementwise value inlined at too many indexings in one kernel
};

// What lowering found that forces more materialization. A flagged value is stored from then on
// in the same round (the driver gives it a buffer and a kernel at once), so that one round does
// not explore its body again from every place that reads it. Costly values (inlined at several
// places, reading many buffers) are only noted: the driver picks which of them to store.
class Findings {
 public:
  // Records u (once, under its first reason).
  void flag(const UOp* u, Why why) {
    if (seen_.insert(u).second) lists_[int(why)].push_back(u);
  }
  bool flagged(const UOp* u) const { return seen_.count(u) != 0; }
  const std::vector<const UOp*>& list(Why why) const { return lists_[int(why)]; }
  void costly(const UOp* u) {
    if (costly_seen_.insert(u).second) costly_.push_back(u);
  }
  const std::vector<const UOp*>& costly() const { return costly_; }
  bool empty() const { return seen_.empty() && costly_.empty(); }

  // The first place each inlined Reduce was lowered: (kernel, index context). A second,
  // different place means the reduce would be computed twice.
  std::unordered_map<const UOp*, std::pair<int, std::vector<const UOp*>>> reduce_use;
  // The same for inlined elementwise values, and those found at a second place.
  std::unordered_map<const UOp*, std::pair<int, std::vector<const UOp*>>> value_use;
  std::unordered_set<const UOp*> value_shared;

 private:
  std::vector<const UOp*> lists_[3];
  std::unordered_set<const UOp*> seen_;
  std::vector<const UOp*> costly_;
  std::unordered_set<const UOp*> costly_seen_;
};

struct LoweredKernel {
  const UOp* ast = nullptr;  // nullptr: nothing to compute (zero elements)
  std::vector<int> buffers;  // Param slot -> plan buffer
};

// Lowers the kernel of `spec`. When a value is flagged, `store_now(value)` must add it to
// `plan.stored_in` (and schedule its kernel); the rest of this kernel then loads it.
LoweredKernel lower_kernel(Graph& g, Plan& plan, const KernelSpec& spec, int kernel_no, Findings& findings,
                           const std::function<void(const UOp*)>& store_now);

}  // namespace sn::sched
