#include "core/ir/ops.h"

#include <cctype>

namespace sn {

namespace {
constexpr OpInfo kOps[] = {
#define SN_X(name, cat, lo, hi) {#name, OpCategory::cat, lo, hi},
    SN_OPS(SN_X)
#undef SN_X
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == size_t(Op::Count_));
}  // namespace

const OpInfo& op_info(Op op) { return kOps[size_t(op)]; }

bool op_from_name(std::string_view name, Op* out) {
  for (size_t i = 0; i < size_t(Op::Count_); i++) {
    std::string_view n = kOps[i].name;
    if (n.size() != name.size()) continue;
    bool eq = true;
    for (size_t k = 0; k < n.size() && eq; k++)
      eq = std::tolower(static_cast<unsigned char>(n[k])) == std::tolower(static_cast<unsigned char>(name[k]));
    if (eq) {
      *out = Op(i);
      return true;
    }
  }
  return false;
}

const char* axis_type_name(AxisType t) {
  switch (t) {
    case AxisType::Global:
      return "GLOBAL";
    case AxisType::Local:
      return "LOCAL";
    case AxisType::Warp:
      return "WARP";
    case AxisType::Thread:
      return "THREAD";
    case AxisType::Loop:
      return "LOOP";
    case AxisType::Reduce:
      return "REDUCE";
    case AxisType::GroupReduce:
      return "GROUP_REDUCE";
    case AxisType::Upcast:
      return "UPCAST";
    case AxisType::Unroll:
      return "UNROLL";
  }
  return "?";
}
char axis_type_letter(AxisType t) {
  static const char letters[] = "glwtLRGur";
  return letters[size_t(t)];
}

}  // namespace sn
