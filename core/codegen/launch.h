// What the runtime needs to know to launch a compiled kernel, without any UOp (compiled kernels
// outlive the graph they came from): its buffer parameters, its launch-time variables, and the
// shape of its launch (CPU cores, or a GPU grid that may depend on the variables).
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/ir/dtype.h"
#include "core/ir/ops.h"

namespace sn {

class UOp;

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

// An integer expression of launch-time variables (a grid size that follows a symbolic shape),
// kept as a small postfix program so it needs no graph to evaluate.
class LaunchExpr {
 public:
  LaunchExpr(int64_t value = 1) : code_{Step{Op::Const, value}} {}  // NOLINT: a constant is an expression
  // Encodes an index expression of Const, DefineVar (by its position in `vars`) and integer
  // Add/Mul/Idiv/Mod/Max/CmpLt/Where. Throws Error(Unsupported) for anything else.
  static LaunchExpr of(const UOp* u, std::span<const KernelVar> vars);
  // Its value for vars[i] = the value of the i-th variable.
  int64_t eval(const int64_t* vars) const;
  bool is_const() const { return code_.size() == 1 && code_[0].op == Op::Const; }
  std::string str(std::span<const KernelVar> vars = {}) const;
  bool operator==(const LaunchExpr&) const = default;

 private:
  struct Step {
    Op op;          // Const (push value), DefineVar (push vars[value]), or a binary/ternary op
    int64_t value;  // the constant, or the variable's position
    bool operator==(const Step&) const = default;
  };
  std::vector<Step> code_;
};

// The shape of a GPU launch: work-groups per dimension (gidx0..2) and work-items per work-group
// (lidx0..2). All ones for kernels without GLOBAL/LOCAL axes.
struct LaunchDims {
  std::array<LaunchExpr, 3> global{1, 1, 1};
  std::array<int64_t, 3> local{1, 1, 1};
  int64_t local_items() const { return local[0] * local[1] * local[2]; }
};

// What a lowered kernel uses of the GPU model (for tests and debug output).
struct KernelFeatures {
  bool local_axes = false;    // some LOCAL (lidx) axis
  bool group_reduce = false;  // a GROUP_REDUCE: a two-stage reduction through local memory
  int64_t local_bytes = 0;    // DefineLocal (work-group shared) memory
  int barriers = 0;           // Barrier instructions
  int gated_blocks = 0;       // If/Endif blocks around stores
};

}  // namespace sn
