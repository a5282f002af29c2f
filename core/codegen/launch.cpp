#include "core/codegen/launch.h"

#include <algorithm>

#include "core/ir/graph.h"
#include "core/util/error.h"

namespace sn {

LaunchExpr LaunchExpr::of(const UOp* root, std::span<const KernelVar> vars) {
  LaunchExpr e;
  e.code_.clear();
  // Postfix emission of the tree (shared subterms are emitted again: grid sizes are tiny).
  std::vector<std::pair<const UOp*, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [u, expanded] = stack.back();
    stack.pop_back();
    if (u->op == Op::Const) {
      e.code_.push_back({Op::Const, int64_t(u->const_int())});
      continue;
    }
    if (u->op == Op::DefineVar) {
      auto it =
          std::find_if(vars.begin(), vars.end(), [&](const KernelVar& v) { return v.name == u->as<VarArg>().name; });
      if (it == vars.end())
        fail(Code::Internal, "launch size: variable ", u->as<VarArg>().name, " is not a kernel variable");
      e.code_.push_back({Op::DefineVar, int64_t(it - vars.begin())});
      continue;
    }
    switch (u->op) {
      case Op::Add:
      case Op::Mul:
      case Op::Idiv:
      case Op::Mod:
      case Op::Max:
      case Op::CmpLt:
      case Op::Where:
        break;
      default:
        fail(Code::Unsupported, "launch size: cannot evaluate ", op_name(u->op), " at launch");
    }
    if (expanded) {
      e.code_.push_back({u->op, 0});
      continue;
    }
    stack.push_back({u, true});
    for (size_t i = u->nsrc(); i-- > 0;) stack.push_back({u->src(i), false});
  }
  return e;
}

int64_t LaunchExpr::eval(const int64_t* vars) const {
  int64_t st[64];
  size_t n = 0;
  for (const Step& s : code_) {
    if (s.op == Op::Const || s.op == Op::DefineVar) {
      if (n == 64) fail(Code::Internal, "launch size: expression too deep");
      st[n++] = s.op == Op::Const ? s.value : vars[s.value];
      continue;
    }
    if (s.op == Op::Where) {
      int64_t c = st[n - 3], a = st[n - 2], b = st[n - 1];
      n -= 2;
      st[n - 1] = c ? a : b;
      continue;
    }
    int64_t a = st[n - 2], b = st[n - 1];
    n--;
    int64_t& r = st[n - 1];
    switch (s.op) {
      case Op::Add:
        r = a + b;
        break;
      case Op::Mul:
        r = a * b;
        break;
      case Op::Max:
        r = std::max(a, b);
        break;
      case Op::CmpLt:
        r = a < b;
        break;
      case Op::Idiv:
      case Op::Mod: {
        if (b == 0) fail(Code::InvalidArg, "launch size: division by zero");
        int64_t q = a / b, m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) q--, m += b;  // floor
        r = s.op == Op::Idiv ? q : m;
        break;
      }
      default:
        fail(Code::Internal, "launch size: ", op_name(s.op));
    }
  }
  return n == 1 ? st[0] : 1;
}

std::string LaunchExpr::str(std::span<const KernelVar> vars) const {
  std::vector<std::string> st;
  for (const Step& s : code_) {
    if (s.op == Op::Const) {
      st.push_back(std::to_string(s.value));
    } else if (s.op == Op::DefineVar) {
      st.push_back(size_t(s.value) < vars.size() ? vars[size_t(s.value)].name : cat("var", s.value));
    } else if (s.op == Op::Where) {
      std::string b = st.back();
      st.pop_back();
      std::string a = st.back();
      st.pop_back();
      st.back() = cat("(", st.back(), " ? ", a, " : ", b, ")");
    } else {
      std::string b = st.back();
      st.pop_back();
      st.back() = cat("(", st.back(), " ", op_name(s.op), " ", b, ")");
    }
  }
  return st.empty() ? "1" : st.back();
}

}  // namespace sn
