// S-expressions of integer index math for tests: a parser, a builder of UOps, an evaluator of the
// parsed expression (exact integers, floor division) and an evaluator of UOp graphs. Both
// evaluators are written independently of the simplifier so they can judge its output.
//
// Language (the conformance README's): integers are index constants, `true`/`false` bools, other
// atoms are variables. Ops: add sub neg mul max floordiv floormod cdiv cmod cmplt cmpne cmpeq where
// and or xor shl shr not cast.int cast.weakint cast.bool trunc.
#pragma once

#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/ir/graph.h"

namespace sn::testutil {

struct SExpr {
  std::string atom;  // empty for a list
  std::vector<SExpr> items;
  bool is_list() const { return atom.empty(); }
};

inline SExpr parse_sexpr(const std::string& text) {
  size_t pos = 0;
  auto skip = [&] {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  };
  std::vector<SExpr> stack;
  std::optional<SExpr> done;
  for (;;) {
    skip();
    if (pos >= text.size()) break;
    char ch = text[pos];
    if (ch == '(') {
      stack.emplace_back();
      ++pos;
    } else if (ch == ')') {
      if (stack.empty()) throw std::runtime_error("sexpr: unbalanced ')' in " + text);
      SExpr e = std::move(stack.back());
      stack.pop_back();
      ++pos;
      if (e.items.empty()) throw std::runtime_error("sexpr: empty list in " + text);
      if (stack.empty()) {
        if (done) throw std::runtime_error("sexpr: trailing text in " + text);
        done = std::move(e);
      } else {
        stack.back().items.push_back(std::move(e));
      }
    } else {
      size_t start = pos;
      while (pos < text.size() && !std::isspace(static_cast<unsigned char>(text[pos])) && text[pos] != '(' &&
             text[pos] != ')')
        ++pos;
      SExpr a;
      a.atom = text.substr(start, pos - start);
      if (stack.empty()) {
        if (done) throw std::runtime_error("sexpr: trailing text in " + text);
        done = std::move(a);
      } else {
        stack.back().items.push_back(std::move(a));
      }
    }
  }
  if (!stack.empty() || !done) throw std::runtime_error("sexpr: unbalanced '(' in " + text);
  return *done;
}

inline bool is_int_literal(const std::string& s) {
  size_t i = (s.size() > 1 && s[0] == '-') ? 1 : 0;
  if (i >= s.size()) return false;
  for (; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// ---- exact values with a small dtype tag --------------------------------------------------

enum class VKind { Index, Int32, Bool };

struct Value {
  i128 v = 0;
  VKind kind = VKind::Index;
};

inline i128 wrap32(i128 v) {
  uint32_t u = static_cast<uint32_t>(static_cast<uint64_t>(v));
  return static_cast<int32_t>(u);
}
inline i128 floor_div(i128 a, i128 b) {
  i128 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline i128 floor_mod(i128 a, i128 b) { return a - floor_div(a, b) * b; }

using Env = std::map<std::string, i128>;

// Evaluates the parsed expression directly; nullopt where it is undefined (division by zero,
// shift out of range).
inline std::optional<Value> eval_sexpr(const SExpr& e, const Env& env) {
  if (!e.is_list()) {
    if (e.atom == "true") return Value{1, VKind::Bool};
    if (e.atom == "false") return Value{0, VKind::Bool};
    if (is_int_literal(e.atom)) return Value{i128(std::stoll(e.atom)), VKind::Index};
    auto it = env.find(e.atom);
    if (it == env.end()) throw std::runtime_error("sexpr eval: unbound variable " + e.atom);
    return Value{it->second, VKind::Index};
  }
  const std::string& op = e.items[0].atom;
  std::vector<Value> a;
  for (size_t i = 1; i < e.items.size(); ++i) {
    auto v = eval_sexpr(e.items[i], env);
    if (!v) return std::nullopt;
    a.push_back(*v);
  }
  auto need = [&](size_t n) {
    if (a.size() != n) throw std::runtime_error("sexpr eval: " + op + " needs " + std::to_string(n) + " operands");
  };
  // result kind of an integer op: int32 if either side is int32, else index
  auto ik = [&]() {
    for (auto& x : a)
      if (x.kind == VKind::Int32) return VKind::Int32;
    return VKind::Index;
  };
  auto fix = [](i128 v, VKind k) {
    return Value{k == VKind::Int32 ? wrap32(v) : k == VKind::Bool ? i128(v != 0) : v, k};
  };
  if (op == "where") {
    need(3);
    VKind k = a[1].kind == VKind::Index ? a[2].kind : a[1].kind;
    return Value{a[0].v != 0 ? a[1].v : a[2].v, k};
  }
  if (op == "neg" || op == "not" || op == "trunc" || op.rfind("cast.", 0) == 0) {
    need(1);
    if (op == "neg") return fix(-a[0].v, a[0].kind);
    if (op == "not") return a[0].kind == VKind::Bool ? Value{i128(a[0].v == 0), VKind::Bool} : fix(~a[0].v, a[0].kind);
    if (op == "trunc") return a[0];
    if (op == "cast.int") return fix(a[0].v, VKind::Int32);
    if (op == "cast.weakint") return Value{a[0].v, VKind::Index};
    if (op == "cast.bool") return Value{i128(a[0].v != 0), VKind::Bool};
    throw std::runtime_error("sexpr eval: unknown op " + op);
  }
  need(2);
  const i128 x = a[0].v, y = a[1].v;
  const bool boolean = a[0].kind == VKind::Bool && a[1].kind == VKind::Bool;
  const VKind k = boolean ? VKind::Bool : ik();
  if (op == "add") return fix(x + y, k);
  if (op == "sub") return fix(x - y, k);
  if (op == "mul") return fix(x * y, k);
  if (op == "max") return fix(x > y ? x : y, k);
  if (op == "floordiv" || op == "floormod" || op == "cdiv" || op == "cmod") {
    if (y == 0) return std::nullopt;
    if (op == "floordiv") return fix(floor_div(x, y), k);
    if (op == "floormod") return fix(floor_mod(x, y), k);
    if (op == "cdiv") return fix(x / y, k);
    return fix(x % y, k);
  }
  if (op == "cmplt") return Value{i128(x < y), VKind::Bool};
  if (op == "cmpne") return Value{i128(x != y), VKind::Bool};
  if (op == "cmpeq") return Value{i128(x == y), VKind::Bool};
  if (op == "and") return fix(x & y, k);
  if (op == "or") return fix(x | y, k);
  if (op == "xor") return fix(x ^ y, k);
  if (op == "shl" || op == "shr") {
    if (y < 0 || y >= 62) return std::nullopt;
    return op == "shl" ? fix(x * (i128(1) << int(y)), k) : fix(floor_div(x, i128(1) << int(y)), k);
  }
  throw std::runtime_error("sexpr eval: unknown op " + op);
}

// ---- building UOps --------------------------------------------------------------------------

struct VarBounds {
  int64_t lo, hi;
};

// Builds the expression in `g`; variables come from `vars` (name -> inclusive bounds). An integer
// literal next to a non-index operand takes that operand's dtype.
inline const UOp* build_sexpr(Graph& g, const SExpr& e, const std::map<std::string, VarBounds>& vars) {
  if (!e.is_list()) {
    if (e.atom == "true") return g.cbool(true);
    if (e.atom == "false") return g.cbool(false);
    if (is_int_literal(e.atom)) return g.cint(std::stoll(e.atom));
    auto it = vars.find(e.atom);
    if (it == vars.end()) throw std::runtime_error("sexpr build: unbound variable " + e.atom);
    return g.var(e.atom, it->second.lo, it->second.hi);
  }
  const std::string& op = e.items[0].atom;
  std::vector<const UOp*> s;
  for (size_t i = 1; i < e.items.size(); ++i) s.push_back(build_sexpr(g, e.items[i], vars));
  // unify literal dtypes with their siblings
  size_t first = op == "where" ? 1 : 0;
  for (size_t i = first; i < s.size(); ++i) {
    for (size_t j = first; j < s.size(); ++j) {
      if (i == j || s[i]->dtype == s[j]->dtype || s[i]->op != Op::Const || s[j]->op == Op::Const) continue;
      if (s[i]->dtype.is_index() && !s[j]->dtype.is_float()) s[i] = g.cint(int64_t(s[i]->const_int()), s[j]->dtype);
    }
  }
  static const std::map<std::string, Op> kOps = {
      {"add", Op::Add},         {"sub", Op::Sub},      {"neg", Op::Neg},     {"mul", Op::Mul},   {"max", Op::Max},
      {"floordiv", Op::Idiv},   {"floormod", Op::Mod}, {"cdiv", Op::CDiv},   {"cmod", Op::CMod}, {"cmplt", Op::CmpLt},
      {"cmpne", Op::CmpNe},     {"cmpeq", Op::CmpEq},  {"where", Op::Where}, {"and", Op::And},   {"or", Op::Or},
      {"xor", Op::Xor},         {"shl", Op::Shl},      {"shr", Op::Shr},     {"not", Op::Not},   {"trunc", Op::Trunc},
      {"reciprocal", Op::Recip}};
  if (op == "cast.int") return g.cast(s.at(0), dtypes::int32);
  if (op == "cast.weakint") return g.cast(s.at(0), dtypes::index);
  if (op == "cast.bool") return g.cast(s.at(0), dtypes::bool_);
  auto it = kOps.find(op);
  if (it == kOps.end()) throw std::runtime_error("sexpr build: unknown op " + op);
  return g.alu(it->second, s);
}

// ---- evaluating UOps ------------------------------------------------------------------------

// Evaluates integer/bool UOp graphs at points (variables looked up by name). Precomputes the
// topological order once.
class UOpEvaluator {
 public:
  explicit UOpEvaluator(const UOp* root) : order_(toposort(root)) {
    for (size_t i = 0; i < order_.size(); ++i) index_[order_[i]] = i;
  }

  std::optional<i128> operator()(const Env& env) const {
    std::vector<std::optional<i128>> val(order_.size());
    for (size_t i = 0; i < order_.size(); ++i) val[i] = eval_node(order_[i], val, env);
    return val.back();
  }

 private:
  static i128 wrap(DType dt, i128 v) {
    if (dt.is_index()) return v;
    if (dt.is_bool()) return v != 0;
    int bits = dt.bits();
    i128 mod = i128(1) << bits;
    i128 r = ((v % mod) + mod) % mod;
    if (!dt.is_unsigned() && r >= (mod >> 1)) r -= mod;
    return r;
  }

  std::optional<i128> eval_node(const UOp* u, const std::vector<std::optional<i128>>& val, const Env& env) const {
    auto S = [&](size_t i) { return val[index_.at(u->src(i))]; };
    const DType dt = u->dtype;
    switch (u->op) {
      case Op::Const:
        return u->const_int();
      case Op::DefineVar: {
        auto it = env.find(u->as<VarArg>().name);
        if (it == env.end()) throw std::runtime_error("UOpEvaluator: unbound variable " + u->as<VarArg>().name);
        return it->second;
      }
      default:
        break;
    }
    std::vector<i128> a;
    for (size_t i = 0; i < u->nsrc(); ++i) {
      auto v = S(i);
      if (!v) {
        // a where only needs the branch it selects
        if (u->op == Op::Where && i > 0) {
          a.push_back(0);
          continue;
        }
        return std::nullopt;
      }
      a.push_back(*v);
    }
    switch (u->op) {
      case Op::Where: {
        size_t pick = a[0] != 0 ? 1 : 2;
        if (!S(pick)) return std::nullopt;
        return a[pick];
      }
      case Op::Cast:
        return wrap(dt, a[0]);
      case Op::Trunc:
        return a[0];
      case Op::Neg:
        return wrap(dt, -a[0]);
      case Op::Not:
        return dt.is_bool() ? i128(a[0] == 0) : wrap(dt, ~a[0]);
      case Op::Add:
        return wrap(dt, a[0] + a[1]);
      case Op::Sub:
        return wrap(dt, a[0] - a[1]);
      case Op::Mul:
        return wrap(dt, a[0] * a[1]);
      case Op::Max:
        return a[0] > a[1] ? a[0] : a[1];
      case Op::Idiv:
      case Op::Mod:
      case Op::CDiv:
      case Op::CMod:
        if (a[1] == 0) return std::nullopt;
        if (u->op == Op::Idiv) return wrap(dt, floor_div(a[0], a[1]));
        if (u->op == Op::Mod) return wrap(dt, floor_mod(a[0], a[1]));
        if (u->op == Op::CDiv) return wrap(dt, a[0] / a[1]);
        return wrap(dt, a[0] % a[1]);
      case Op::CmpLt:
        return i128(a[0] < a[1]);
      case Op::CmpNe:
        return i128(a[0] != a[1]);
      case Op::CmpEq:
        return i128(a[0] == a[1]);
      case Op::CmpGt:
        return i128(a[0] > a[1]);
      case Op::CmpGe:
        return i128(a[0] >= a[1]);
      case Op::CmpLe:
        return i128(a[0] <= a[1]);
      case Op::And:
        return wrap(dt, a[0] & a[1]);
      case Op::Or:
        return wrap(dt, a[0] | a[1]);
      case Op::Xor:
        return wrap(dt, a[0] ^ a[1]);
      case Op::Shl:
      case Op::Shr:
        if (a[1] < 0 || a[1] >= 62) return std::nullopt;
        return u->op == Op::Shl ? wrap(dt, a[0] * (i128(1) << int(a[1]))) : floor_div(a[0], i128(1) << int(a[1]));
      default:
        throw std::runtime_error(std::string("UOpEvaluator: unsupported op ") + std::string(op_name(u->op)));
    }
  }

  std::vector<const UOp*> order_;
  std::unordered_map<const UOp*, size_t> index_;
};

}  // namespace sn::testutil
