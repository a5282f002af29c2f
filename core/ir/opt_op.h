// The spec's kernel optimizations (OptOps) as data: a kernel's optimizer output is a list of these,
// and applying the same list to the same AST reproduces the same kernel (core/opt/opt.h).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/ir/ops.h"

namespace sn {

enum class OptOp : uint8_t {
  Split,     // split range `axis` by `amount` = k into (n/k, k); the new part (inner, or outer when
             // `top`) gets AxisType `type`: UPCAST, UNROLL, THREAD, LOCAL, GROUP_REDUCE
  Padto,     // pad range `axis` up to a multiple of `amount`; the extra iterations are masked off
  Swap,      // exchange the loop positions of ranges `axis` and `amount`
  Nolocals,  // no LOCAL or GROUP_REDUCE axes (and no local memory) in this kernel
  TC,        // tensor cores: the matmul reduced over range `axis` becomes Wmma instructions of the
             // target's tensor core number `amount` (padding the matmul to its tile when `top`);
             // the first opt of a kernel
};

struct Opt {
  OptOp op = OptOp::Split;
  int64_t axis = 0;                  // a Range id of the kernel (unused by Nolocals)
  int64_t amount = 0;                // Split: the factor; Padto: the multiple; Swap: the other Range id
  AxisType type = AxisType::Upcast;  // Split: the AxisType of the new part
  bool top = false;                  // Split: the new part is the outer one
  bool operator==(const Opt&) const = default;

  static Opt split(int64_t axis, int64_t k, AxisType type, bool top = false) {
    return {OptOp::Split, axis, k, type, top};
  }
  static Opt upcast(int64_t axis, int64_t k) { return split(axis, k, AxisType::Upcast); }
  static Opt unroll(int64_t axis, int64_t k) { return split(axis, k, AxisType::Unroll); }
  static Opt thread(int64_t axis, int64_t k) { return split(axis, k, AxisType::Thread, true); }
  static Opt local(int64_t axis, int64_t k) { return split(axis, k, AxisType::Local); }
  static Opt group(int64_t axis, int64_t k, bool top = false) { return split(axis, k, AxisType::GroupReduce, top); }
  static Opt padto(int64_t axis, int64_t m) { return {OptOp::Padto, axis, m, AxisType::Loop, false}; }
  static Opt swap(int64_t a, int64_t b) { return {OptOp::Swap, a, b, AxisType::Loop, false}; }
  static Opt nolocals() { return {OptOp::Nolocals, 0, 0, AxisType::Loop, false}; }
  // pad: M, N and K that are not multiples of the tensor core's tile are padded (in `top`)
  static Opt tc(int64_t reduce_axis, int64_t tensor_core, bool pad = false) {
    return {OptOp::TC, reduce_axis, tensor_core, AxisType::Warp, pad};
  }
};

// "UPCAST(1,4)", "THREAD(0,2)", "GROUPTOP(2,16)", "PADTO(0,32)", "SWAP(0,2)", "NOLOCALS", "TC(2,0)", "TC(2,0,pad)".
std::string opt_str(const Opt& o);
// Parses what opt_str prints (also "SPLIT(axis,k,TYPE[,top])"); false for anything else.
bool parse_opt(std::string_view text, Opt* out);
// A list as one line, opts separated by spaces ("" for none), and its parser (false, with the
// first bad word in *bad when given, for anything else).
std::string opts_str(const std::vector<Opt>& opts);
bool parse_opts(std::string_view text, std::vector<Opt>* out, std::string* bad = nullptr);

}  // namespace sn
