// The simplifier's rule table (pattern rules over graph_rewrite), bool algebra, where folding,
// max/shift/cast rules, and simplification under a validity gate.
#include "core/symbolic/symbolic.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "core/symbolic/sym_internal.h"

namespace sn {

using namespace sym;

namespace {

bool is_true(const UOp* u) { return u->op == Op::Const && u->dtype.is_bool() && u->const_int() != 0; }
bool is_false(const UOp* u) { return u->op == Op::Const && u->dtype.is_bool() && u->const_int() == 0; }
const UOp* logical_not(Graph& g, const UOp* x) { return g.make(Op::CmpNe, x->dtype, {x, g.cbool(true)}); }
// x is !y (written y != true): returns y, else nullptr
const UOp* negated(const UOp* x) {
  if (x->op == Op::CmpNe && x->src(0)->dtype.is_bool() && is_true(x->src(1))) return x->src(0);
  return nullptr;
}

bool same_shape(const UOp* a, const UOp* b) {
  const Shape *sa = a->shape(), *sb = b->shape();
  if (sa == nullptr || sb == nullptr) return sa == sb;
  return *sa == *sb;
}

// ---- interval folding --------------------------------------------------------------------

// An integer or bool value whose interval is a single point is that constant.
const UOp* fold_point(Graph& g, const UOp* u) {
  const DType dt = u->dtype;
  if (dt.lanes != 1 || dt.ptr || dt.is_float() || dt.is_void() || u->op == Op::Const) return nullptr;
  if (!(dt.is_int() || dt.is_bool())) return nullptr;
  const MinMax& m = u->minmax();
  if (m.is_float || m.lo != m.hi) return nullptr;
  return mk_int(g, dt, m.lo);
}

// ---- max ---------------------------------------------------------------------------------

const UOp* fold_max(Graph& g, const UOp* u) {
  const UOp *a = u->src(0), *b = u->src(1);
  if (a == b) return a;
  const DType dt = u->dtype;
  if (dt.lanes != 1 || dt.ptr) return nullptr;
  if (is_bool_scalar(dt)) return g.make(Op::Or, dt, {a, b});
  if (!is_int_scalar(dt)) return nullptr;
  if (vmin(a) >= vmax(b)) return a;
  if (vmin(b) >= vmax(a)) return b;
  if (is_iconst(a) && !is_iconst(b)) return g.make(Op::Max, dt, {b, a});
  // max(max(x, c1), c2) -> max(x, max(c1, c2))
  if (is_iconst(b) && a->op == Op::Max && is_iconst(a->src(1))) {
    const UOp* c = mk_int(g, dt, std::max(a->src(1)->const_int(), b->const_int()));
    return g.make(Op::Max, dt, {a->src(0), c});
  }
  if (!is_iconst(a) && !is_iconst(b) && atom_less(b, a)) return g.make(Op::Max, dt, {b, a});
  return nullptr;
}

// ---- bool algebra and bitwise ops --------------------------------------------------------

// And / Or over bools: flatten, drop duplicates and neutral constants, detect x & !x, absorb
// x & (x | y), and merge comparison clauses on the same value by their intervals.
const UOp* fold_bool_chain(Graph& g, const UOp* u) {
  const bool is_and = u->op == Op::And;
  const Op dual = is_and ? Op::Or : Op::And;
  std::vector<const UOp*> items;
  flatten(u, u->op, items);
  const size_t n0 = items.size();
  std::vector<const UOp*> out;
  std::unordered_set<const UOp*> seen;
  for (const UOp* x : items) {
    if (is_and ? is_true(x) : is_false(x)) continue;
    if (is_and ? is_false(x) : is_true(x)) return x;
    if (seen.insert(x).second) out.push_back(x);
  }
  for (const UOp* x : out) {
    const UOp* y = negated(x);
    if (y != nullptr && seen.count(y)) return g.cbool(!is_and);
  }
  // The pairwise steps below are quadratic; masks are short, long chains skip them.
  constexpr size_t kPairwiseLimit = 64;
  if (out.size() > kPairwiseLimit) {
    if (out.size() == n0) return nullptr;
    const UOp* acc = out[0];
    for (size_t i = 1; i < out.size(); ++i) acc = g.make(u->op, u->dtype, {acc, out[i]});
    return acc;
  }
  // x & (x | y) -> x ; x | (x & y) -> x
  std::erase_if(out, [&](const UOp* x) {
    if (x->op != dual) return false;
    std::vector<const UOp*> parts;
    flatten(x, dual, parts);
    return std::any_of(parts.begin(), parts.end(), [&](const UOp* p) { return p != x && seen.count(p); });
  });
  // clauses on the same value
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t i = 0; i < out.size() && !merged; ++i) {
      Clause ci;
      if (!read_clause(out[i], &ci)) continue;
      for (size_t j = i + 1; j < out.size(); ++j) {
        Clause cj;
        if (!read_clause(out[j], &cj) || cj.x != ci.x) continue;
        const bool i_in_j = ci.lo >= cj.lo && ci.hi <= cj.hi, j_in_i = cj.lo >= ci.lo && cj.hi <= ci.hi;
        if (is_and) {
          if (std::max(ci.lo, cj.lo) > std::min(ci.hi, cj.hi)) return g.cbool(false);
        } else {
          const Clause& first = ci.lo <= cj.lo ? ci : cj;
          const Clause& second = ci.lo <= cj.lo ? cj : ci;
          if (first.lo <= vmin(ci.x) && second.lo <= first.hi + 1 && std::max(first.hi, second.hi) >= vmax(ci.x))
            return g.cbool(true);
        }
        if (i_in_j || j_in_i) {
          // and: keep the tighter clause; or: keep the looser one
          out.erase(out.begin() + long((is_and == i_in_j) ? j : i));
          merged = true;
          break;
        }
      }
    }
  }
  if (out.size() == n0) return nullptr;
  if (out.empty()) return g.cbool(is_and);
  const UOp* acc = out[0];
  for (size_t i = 1; i < out.size(); ++i) acc = g.make(u->op, u->dtype, {acc, out[i]});
  return acc;
}

const UOp* fold_bitwise(Graph& g, const UOp* u) {
  const UOp *a = u->src(0), *b = u->src(1);
  const DType dt = u->dtype;
  if (dt.lanes != 1 || dt.ptr) return nullptr;
  if (!(is_int_scalar(dt) || is_bool_scalar(dt))) return nullptr;
  if (a == b) return u->op == Op::Xor ? mk_int(g, dt, 0) : a;
  if (is_iconst(a) && !is_iconst(b)) return g.make(u->op, dt, {b, a});
  if (is_iconst(b)) {
    const i128 c = b->const_int();
    const i128 ones = dt.is_bool() ? 1 : dt.is_unsigned() ? dt.int_max() : -1;
    switch (u->op) {
      case Op::And:
        if (c == 0) return b;
        if (c == ones) return a;
        break;
      case Op::Or:
        if (c == 0) return a;
        if (c == ones) return b;
        break;
      default:  // Xor
        if (c == 0) return a;
        if (dt.is_bool()) return logical_not(g, a);
        break;
    }
    // (x op c1) op c2 -> x op (c1 op c2)
    if (a->op == u->op && is_iconst(a->src(1))) {
      i128 c1 = a->src(1)->const_int();
      i128 r = u->op == Op::And ? (c1 & c) : u->op == Op::Or ? (c1 | c) : (c1 ^ c);
      const UOp* rc = mk_int(g, dt, r);
      return rc == nullptr ? nullptr : g.make(u->op, dt, {a->src(0), rc});
    }
    // x & mask keeps every bit x can have
    if (u->op == Op::And && !dt.is_bool() && vmin(a) >= 0 && small(vmax(a))) {
      i128 need = 1;
      while (need <= vmax(a)) need <<= 1;
      if ((c & (need - 1)) == need - 1) return a;
    }
  }
  if (dt.is_bool() && u->op != Op::Xor) return fold_bool_chain(g, u);
  if (!is_iconst(a) && !is_iconst(b) && atom_less(b, a)) return g.make(u->op, dt, {b, a});
  return nullptr;
}

const UOp* fold_shift(Graph& g, const UOp* u) {
  const UOp *a = u->src(0), *b = u->src(1);
  if (!is_int_scalar(u->dtype)) return nullptr;
  if (is_iconst(b, 0)) return a;
  // (x & m) >> s -> x >> s when m keeps every bit of x at position s and above
  if (u->op == Op::Shr && is_iconst(b) && a->op == Op::And && is_iconst(a->src(1))) {
    const UOp* x = a->src(0);
    i128 s = b->const_int(), m = a->src(1)->const_int();
    if (s >= 0 && s < 62 && vmin(x) >= 0 && small(vmax(x))) {
      i128 top = 1;
      while (top <= vmax(x)) top <<= 1;
      i128 need = (top - 1) & ~((i128(1) << int(s)) - 1);
      if ((m & need) == need) return g.make(Op::Shr, u->dtype, {x, b});
    }
  }
  return nullptr;
}

// ---- where -------------------------------------------------------------------------------

// The interval a clause leaves when it is false (when that is one interval).
bool complement(const Clause& c, Clause* out) {
  i128 lo = vmin(c.x), hi = vmax(c.x);
  *out = c;
  if (c.lo <= lo && c.hi < hi) {
    out->lo = c.hi + 1;
    out->hi = hi;
    return true;
  }
  if (c.hi >= hi && c.lo > lo) {
    out->lo = lo;
    out->hi = c.lo - 1;
    return true;
  }
  return false;
}

// Rewrites `branch` knowing that `cond` has value `value` there: cond itself becomes a constant and,
// when cond is a clause on X, so do clauses on X that the clause decides. Only descends through
// elementwise ops (an address computed under a gate must not change).
const UOp* assume(Graph& g, const UOp* branch, const UOp* cond, bool value) {
  Clause known{nullptr, 0, 0};
  bool have = false;
  if (Clause c; read_clause(cond, &c)) have = value ? (known = c, true) : complement(c, &known);
  std::unordered_map<const UOp*, const UOp*> memo;
  size_t budget = 4096;
  auto decide = [&](const UOp* n) -> const UOp* {
    if (n == cond) return g.cbool(value);
    if (!have || !is_bool_scalar(n->dtype)) return nullptr;
    Clause c;
    if (!read_clause(n, &c) || c.x != known.x) return nullptr;
    if (known.lo >= c.lo && known.hi <= c.hi) return g.cbool(true);
    if (known.hi < c.lo || known.lo > c.hi) return g.cbool(false);
    return nullptr;
  };
  std::vector<std::pair<const UOp*, bool>> stack{{branch, false}};
  while (!stack.empty()) {
    auto [n, expanded] = stack.back();
    stack.pop_back();
    if (memo.count(n)) continue;
    if (const UOp* d = decide(n)) {
      memo[n] = d;
      continue;
    }
    if (!is_elementwise(n->op) || budget == 0) {
      memo[n] = n;
      continue;
    }
    if (!expanded) {
      --budget;
      stack.push_back({n, true});
      for (const UOp* s : n->src()) stack.push_back({s, false});
      continue;
    }
    std::vector<const UOp*> src;
    for (const UOp* s : n->src()) src.push_back(memo.at(s));
    memo[n] = g.replace_src(n, src);
  }
  return memo.at(branch);
}

const UOp* fold_where(Graph& g, const UOp* u) {
  const UOp *c = u->src(0), *t = u->src(1), *f = u->src(2);
  const DType dt = u->dtype;
  if (c->op == Op::Const) return c->const_int() != 0 ? t : f;
  if (t == f) return t;
  if (dt.lanes != 1 || c->dtype.lanes != 1) return nullptr;
  if (is_bool_scalar(dt)) {
    if (is_true(t) && is_false(f)) return c;
    if (is_false(t) && is_true(f)) return logical_not(g, c);
  }
  if (const UOp* nc = negated(c)) return g.make(Op::Where, dt, {nc, f, t});
  // c ? (c2 ? x : f) : f -> (c & c2) ? x : f ;  c ? t : (c2 ? t : y) -> (c | c2) ? t : y
  if (t->op == Op::Where && t->src(2) == f)
    return g.make(Op::Where, dt, {g.make(Op::And, c->dtype, {c, t->src(0)}), t->src(1), f});
  if (f->op == Op::Where && f->src(1) == t)
    return g.make(Op::Where, dt, {g.make(Op::Or, c->dtype, {c, f->src(0)}), t, f->src(2)});
  // (a < b) ? b : a -> max(a, b)
  if (is_int_scalar(dt) && c->op == Op::CmpLt && c->src(1) == t && c->src(0) == f) return g.make(Op::Max, dt, {f, t});
  const UOp* nt = assume(g, t, c, true);
  const UOp* nf = assume(g, f, c, false);
  if (nt != t || nf != f) return g.make(Op::Where, dt, {c, nt, nf});
  return nullptr;
}

// op(c ? t : f, c ? tt : ff) -> c ? op(t, tt) : op(f, ff) when one side folds to a constant
// (sums do this in fold_sum, with coefficients).
const UOp* fold_where_pair(Graph& g, const UOp* u) {
  const UOp *a = u->src(0), *b = u->src(1);
  if (a->op != Op::Where || b->op != Op::Where || a->src(0) != b->src(0) || u->dtype.lanes != 1) return nullptr;
  if (!(is_int_scalar(u->dtype) || is_bool_scalar(u->dtype))) return nullptr;
  const UOp *t = a->src(1), *f = a->src(2), *tt = b->src(1), *ff = b->src(2);
  if (!((is_iconst(t) && is_iconst(tt)) || (is_iconst(f) && is_iconst(ff)))) return nullptr;
  return g.make(Op::Where, u->dtype, {a->src(0), g.make(u->op, u->dtype, {t, tt}), g.make(u->op, u->dtype, {f, ff})});
}

// ---- casts and the rest --------------------------------------------------------------------

const UOp* fold_cast(Graph& g, const UOp* u) {
  const UOp* x = u->src(0);
  if (x->dtype == u->dtype) return x;
  // b.cast(a).cast(b) -> b when a holds every value b has here
  if (x->op == Op::Cast && x->src(0)->dtype == u->dtype && is_int_scalar(u->dtype) && is_int_scalar(x->dtype)) {
    const UOp* z = x->src(0);
    if (vmin(z) >= x->dtype.int_min() && vmax(z) <= x->dtype.int_max()) return z;
  }
  (void)g;
  return nullptr;
}

// Decomposed comparisons to the two primitive ones (integers and bools, where a >= b == !(a < b)).
const UOp* fold_derived_cmp(Graph& g, const UOp* u) {
  const UOp *a = u->src(0), *b = u->src(1);
  const DType bt = u->dtype;
  if (u->op == Op::CmpGt) return g.make(Op::CmpLt, bt, {b, a});
  if (!(is_int_scalar(a->dtype) || is_bool_scalar(a->dtype))) return nullptr;
  switch (u->op) {
    case Op::CmpGe:
      return logical_not(g, g.make(Op::CmpLt, bt, {a, b}));
    case Op::CmpLe:
      return logical_not(g, g.make(Op::CmpLt, bt, {b, a}));
    case Op::CmpEq:
      return logical_not(g, g.make(Op::CmpNe, bt, {a, b}));
    default:
      return nullptr;
  }
}

const UOp* fold_float_identity(Graph& g, const UOp* u) {
  (void)g;
  if (!u->dtype.is_float() || u->dtype.lanes != 1) return nullptr;
  const UOp *a = u->src(0), *b = u->nsrc() > 1 ? u->src(1) : nullptr;
  switch (u->op) {
    case Op::Add:  // only -0.0 is the identity: -0.0 + +0.0 is +0.0
      if (b->is_const() && b->const_float() == 0 && std::signbit(b->const_float())) return a;
      if (a->is_const() && a->const_float() == 0 && std::signbit(a->const_float())) return b;
      break;
    case Op::Mul:
      if (b->is_const() && b->const_float() == 1) return a;
      if (a->is_const() && a->const_float() == 1) return b;
      break;
    case Op::Div:
      if (b->is_const() && b->const_float() == 1) return a;
      break;
    default:
      break;
  }
  return nullptr;
}

// ---- the rule table --------------------------------------------------------------------------

// Every rule goes through this guard: a replacement must keep the dtype and the shape.
RewriteFn guarded(const UOp* (*fn)(Graph&, const UOp*)) {
  return [fn](const Match& m) -> const UOp* {
    const UOp* r = fn(m.g, m.root);
    if (r == nullptr || r == m.root) return nullptr;
    if (r->dtype != m.root->dtype)
      fail(Code::Internal, "symbolic: a rule changed the dtype of ", op_name(m.root->op), " from ",
           m.root->dtype.name(), " to ", r->dtype.name());
    if (!same_shape(r, m.root)) return nullptr;
    return r;
  };
}

const UOp* on_var(Graph& g, const UOp* u) {
  const VarArg& v = u->as<VarArg>();
  return v.min == v.max ? mk_int(g, u->dtype, v.min) : nullptr;
}
const UOp* on_sum(Graph& g, const UOp* u) {
  if (u->dtype.is_float()) return fold_float_identity(g, u);
  return fold_sum(g, u);
}
const UOp* on_mul(Graph& g, const UOp* u) {
  if (u->dtype.is_float()) return fold_float_identity(g, u);
  if (is_bool_scalar(u->dtype)) return g.make(Op::And, u->dtype, {u->src(0), u->src(1)});
  return fold_product(g, u);
}
const UOp* on_floor_divmod(Graph& g, const UOp* u) {
  if (is_index_scalar(u->dtype)) return fold_floor_divmod(g, u);
  if (!is_int_scalar(u->dtype)) return nullptr;
  const UOp* y = u->src(1);
  if (is_iconst(y, 1)) return u->op == Op::Idiv ? u->src(0) : mk_int(g, u->dtype, 0);
  return nullptr;
}
const UOp* on_c_divmod(Graph& g, const UOp* u) {
  if (is_index_scalar(u->dtype)) return fold_c_divmod(g, u);
  if (!is_int_scalar(u->dtype)) return nullptr;
  if (is_iconst(u->src(1), 1)) return u->op == Op::CDiv ? u->src(0) : mk_int(g, u->dtype, 0);
  return nullptr;
}
const UOp* on_trunc(Graph&, const UOp* u) { return u->dtype.is_float() ? nullptr : u->src(0); }
const UOp* on_not(Graph& g, const UOp* u) { return is_bool_scalar(u->dtype) ? logical_not(g, u->src(0)) : nullptr; }
const UOp* on_div(Graph& g, const UOp* u) { return fold_float_identity(g, u); }

std::vector<Rule> build_rules() {
  const std::initializer_list<Op> alu = {
      Op::Recip, Op::Trunc, Op::Cast, Op::Add,  Op::Mul,   Op::Max,  Op::Mod, Op::Idiv, Op::CmpLt, Op::CmpNe, Op::Xor,
      Op::Or,    Op::And,   Op::Shr,  Op::Shl,  Op::Where, Op::Neg,  Op::Sub, Op::Div,  Op::CmpGt, Op::CmpGe, Op::CmpLe,
      Op::CmpEq, Op::Not,   Op::Exp2, Op::Log2, Op::Sin,   Op::Sqrt, Op::Pow, Op::CDiv, Op::CMod};
  std::vector<Rule> r;
  r.push_back({Pat::ops(alu), guarded(fold_const), "const_fold"});
  r.push_back({Pat::op(Op::DefineVar), guarded(on_var), "var_point"});
  r.push_back({Pat::ops(alu), guarded(fold_point), "interval_point"});
  r.push_back({Pat::ops({Op::Add, Op::Sub, Op::Neg}), guarded(on_sum), "sum"});
  r.push_back({Pat::ops({Op::Max, Op::Mul}), guarded(fold_where_pair), "where_pair"});
  r.push_back({Pat::op(Op::Mul), guarded(on_mul), "product"});
  r.push_back({Pat::op(Op::Div), guarded(on_div), "float_div"});
  r.push_back({Pat::ops({Op::Idiv, Op::Mod}), guarded(on_floor_divmod), "floor_divmod"});
  r.push_back({Pat::ops({Op::CDiv, Op::CMod}), guarded(on_c_divmod), "c_divmod"});
  r.push_back({Pat::op(Op::CmpLt), guarded(fold_lt), "lt"});
  r.push_back({Pat::op(Op::CmpNe), guarded(fold_ne), "ne"});
  r.push_back({Pat::ops({Op::CmpGt, Op::CmpGe, Op::CmpLe, Op::CmpEq}), guarded(fold_derived_cmp), "derived_cmp"});
  r.push_back({Pat::op(Op::Max), guarded(fold_max), "max"});
  r.push_back({Pat::ops({Op::And, Op::Or, Op::Xor}), guarded(fold_bitwise), "bitwise"});
  r.push_back({Pat::ops({Op::Shl, Op::Shr}), guarded(fold_shift), "shift"});
  r.push_back({Pat::op(Op::Where), guarded(fold_where), "where"});
  r.push_back({Pat::op(Op::Cast), guarded(fold_cast), "cast"});
  r.push_back({Pat::op(Op::Trunc), guarded(on_trunc), "trunc_int"});
  r.push_back({Pat::op(Op::Not), guarded(on_not), "not"});
  return r;
}

}  // namespace

void flatten(const UOp* u, Op op, std::vector<const UOp*>& out) {
  std::vector<const UOp*> stack{u};
  while (!stack.empty()) {
    const UOp* n = stack.back();
    stack.pop_back();
    if (n->op == op && n->dtype == u->dtype) {
      stack.push_back(n->src(1));
      stack.push_back(n->src(0));
    } else {
      out.push_back(n);
    }
  }
}

const PatternMatcher& symbolic_rules() {
  static const PatternMatcher pm(build_rules());
  return pm;
}

namespace {

// The linear form of an index sum of loop variables (ranges, core ids, variables) times constants;
// nullopt for any other expression.
std::optional<Lin> affine_form(const UOp* e) {
  const DType dt = e->dtype;
  if (!is_index_scalar(dt) || e->op == Op::Const) return std::nullopt;
  // One walk of the sum as a tree that builds its form as lin_of does (each node with its
  // coefficient), bounded: a sum that shares its parts (x2 = x1 + x1, x3 =
  // x2 + x2, ...) is exponential as a tree, and goes to the rules, which fold it part by part. Any
  // other node turns the expression away. Its leaves must be constants and variables of more than
  // one value with constant bounds; a variable of one value that cancels out of the form (x - r + r
  // with r in [0, 0]) counts too: the rules fold its products to 0 before the sum sees them, and
  // may keep a bare one.
  constexpr int kMaxVisits = 256;
  struct Item {  // (no initializers: a pair's would zero the whole stack on every call)
    const UOp* u;
    i128 coef;
  };
  Item stack[64];
  size_t top = 0;
  auto push = [&](const UOp* u, i128 coef) {
    if (top == std::size(stack)) return false;
    stack[top++] = {u, coef};
    return true;
  };
  Lin l;
  push(e, 1);
  for (int visits = 0; top > 0; visits++) {
    if (visits == kMaxVisits) return std::nullopt;
    auto [u, s] = stack[--top];
    if (u->dtype != dt) return std::nullopt;
    switch (u->op) {
      case Op::Const:
        l.k += s * u->const_int();
        continue;
      case Op::Range:
      case Op::Special:
      case Op::DefineVar:
        if (vmin(u) == vmax(u)) return std::nullopt;
        for (const UOp* b : u->src())
          if (b->op != Op::Const) return std::nullopt;  // a bound that is not a constant may simplify
        l.add(u, s);
        continue;
      case Op::Mul: {
        // (a product by a constant too large for the form would be an atom of it)
        int ci = is_iconst(u->src(1)) ? 1 : is_iconst(u->src(0)) ? 0 : -1;
        if (ci < 0) return std::nullopt;
        i128 c = u->src(size_t(ci))->const_int();
        if (!small(c) || !small(s * c) || !push(u->src(size_t(1 - ci)), s * c)) return std::nullopt;
        continue;
      }
      // (the right source is taken first: a left-nested sum, the shape build_lin makes, then keeps
      // the stack two deep; the order of the terms does not matter, build_lin sorts them)
      case Op::Add:
        if (!push(u->src(0), s) || !push(u->src(1), s)) return std::nullopt;
        continue;
      case Op::Sub:
        if (!push(u->src(0), s) || !push(u->src(1), -s)) return std::nullopt;
        continue;
      case Op::Neg:
        if (!push(u->src(0), -s)) return std::nullopt;
        continue;
      default:
        return std::nullopt;
    }
  }
  // (build_lin keeps the order of a sum beyond its sort limit: leave those to the rules)
  if (l.terms.size() > 64) return std::nullopt;
  return l;
}

// The fixed point of such a sum, found without the rules: only the sum rule applies to it (no
// where or division to combine, no variable of one value), and that ends at the linear form
// rebuilt in canonical order. One walk and one rebuild, where the rules visit and reintern every
// node: the expand stage's copies of an address differ only in the constants it put for the
// upcast and unrolled ranges (a 3x3 convolution kernel: 163 index expressions, most of them such
// sums). nullptr for any other expression.
const UOp* affine_fixed_point(Graph& g, const UOp* e) {
  std::optional<Lin> l = affine_form(e);
  return l ? build_lin(g, e->dtype, *l) : nullptr;
}

// build_lin for the sums of one list, which share the node of their terms where they differ only
// in their constant (the expand stage's copies of an address: 4 to 16 of each in a convolution
// kernel). The canonical node is that node plus the constant, as build_lin makes it; finding the
// terms' node again costs one lookup instead of an intern per term.
class SumsOfOneList {
 public:
  const UOp* build(Graph& g, DType dt, Lin l) {
    if (l.terms.empty()) return build_lin(g, dt, l);
    const i128 k = l.k;
    l.k = 0;
    // an order-free hash: a Lin's terms come in any order
    uint64_t h = l.terms.size();
    for (const Term& t : l.terms) h += hash_combine(uint64_t(reinterpret_cast<uintptr_t>(t.atom)), uint64_t(t.coef));
    const UOp* terms = nullptr;
    std::vector<Entry>& bucket = known_[h];
    for (const Entry& e : bucket)
      if (same_terms(e.terms, l)) terms = e.node;
    if (terms == nullptr) {
      terms = build_lin(g, dt, l);
      if (terms == nullptr) return nullptr;
      bucket.push_back({l, terms});
    }
    if (k == 0) return terms;
    const UOp* kc = mk_int(g, dt, k);
    return kc ? g.make(Op::Add, dt, {terms, kc}) : nullptr;
  }

 private:
  struct Entry {
    Lin terms;
    const UOp* node;
  };
  static bool same_terms(const Lin& a, const Lin& b) {
    if (a.terms.size() != b.terms.size()) return false;
    for (const Term& t : a.terms)
      if (b.coef_of(t.atom) != t.coef) return false;
    return true;
  }
  std::unordered_map<uint64_t, std::vector<Entry>> known_;
};

// A list of expressions (a Sink) with each member that `direct` answers (not nullptr) replaced by
// that answer and the others by `together`'s answer for a Sink of them, in order. nullptr when
// `direct` answers none of them (the caller then takes the list its own way).
template <class Direct, class Together>
const UOp* each_or_together(Graph& g, const UOp* list, Direct direct, Together together) {
  std::vector<const UOp*> out(list->src().begin(), list->src().end()), rest;
  std::vector<size_t> at;
  for (size_t i = 0; i < out.size(); i++) {
    if (const UOp* f = direct(out[i])) {
      out[i] = f;
    } else {
      rest.push_back(out[i]);
      at.push_back(i);
    }
  }
  if (rest.size() == out.size() && !out.empty()) return nullptr;
  if (!rest.empty()) {
    const UOp* r = together(g.make(Op::Sink, dtypes::void_, rest));
    if (r->op != Op::Sink || r->nsrc() != rest.size())
      fail(Code::Internal, "simplify: a list of ", rest.size(), " expressions came back as ", op_name(r->op));
    for (size_t j = 0; j < at.size(); j++) out[at[j]] = r->src(j);
  }
  return g.replace_src(list, out);
}

}  // namespace

const UOp* simplify(Graph& g, const UOp* root) {
  // (a node of another graph is simplified without the memo: its id means nothing in g's)
  const bool own = root->graph() == &g;
  if (const UOp* known = own ? g.simplified(root) : nullptr) return known;
  auto by_rules = [&](const UOp* x) { return graph_rewrite(g, x, symbolic_rules()); };
  const UOp* s = nullptr;
  if (own && root->op == Op::Sink) {  // a list: the affine members directly, the rest through the rules together
    SumsOfOneList sums;
    auto affine = [&](const UOp* x) -> const UOp* {
      std::optional<Lin> l = affine_form(x);
      return l ? sums.build(g, x->dtype, std::move(*l)) : nullptr;
    };
    s = each_or_together(g, root, affine, by_rules);
  } else if (own) {
    s = affine_fixed_point(g, root);
  }
  if (s == nullptr) s = by_rules(root);
  if (own) g.set_simplified(root, s);
  return s;
}

namespace {
// Marks the stand-in variables of simplify_given_valid (the tag keeps them apart from user vars).
constexpr int64_t kGateTag = 0x5e11da7e;
}  // namespace

const UOp* simplify_given_valid(Graph& g, const UOp* valid, const UOp* expr, bool simplified) {
  const UOp* v = simplified ? valid : simplify(g, valid);
  const UOp* e = simplified ? expr : simplify(g, expr);
  if (v->op == Op::Const) return e;
  std::vector<const UOp*> clauses;
  flatten(v, Op::And, clauses);
  // tightest interval per gated value, in order of first appearance
  std::vector<Clause> bounds;
  for (const UOp* c : clauses) {
    Clause cl;
    if (!read_clause(c, &cl)) continue;
    auto it = std::find_if(bounds.begin(), bounds.end(), [&](const Clause& b) { return b.x == cl.x; });
    if (it == bounds.end()) {
      bounds.push_back(cl);
    } else {
      it->lo = std::max(it->lo, cl.lo);
      it->hi = std::min(it->hi, cl.hi);
    }
  }
  for (const Clause& b : bounds)
    if (b.lo > b.hi) return e;  // the gate is never open: any value will do
  // the clauses that narrow their value (and whose bounds a stand-in variable can hold)
  auto narrows = [](const Clause& b) {
    if (b.lo == vmin(b.x) && b.hi == vmax(b.x)) return false;
    return b.lo >= i128(INT64_MIN) && b.hi <= i128(INT64_MAX);
  };
  // An affine sum (simplify's fixed point) changes under a gate only where the gate leaves one of its
  // variables a single value: that term becomes a constant. Narrower bounds do not move it (the
  // rules order and fold such a sum without them). nullptr for any other expression, and where a
  // clause bounds a partial sum: those go to the rules.
  auto affine_under_gate = [&](const UOp* x) -> const UOp* {
    std::optional<Lin> l = x->graph() == &g ? affine_form(x) : std::nullopt;
    if (!l) return nullptr;
    bool changed = false;
    for (const Clause& b : bounds) {
      if (!narrows(b)) continue;
      i128 coef = l->coef_of(b.x);
      if (coef == 0) {
        // a variable missing from the sum is not in it at all (a fixed point cancels nothing)
        if (!(b.x->op == Op::Range || b.x->op == Op::Special || b.x->op == Op::DefineVar)) return nullptr;
      } else if (b.lo == b.hi) {
        l->k += coef * b.lo;
        l->remove(b.x);
        changed = true;
      }
    }
    return changed ? build_lin(g, x->dtype, *l) : x;
  };
  // a list of expressions (simplify_indices' addresses under one gate): the affine ones directly,
  // the rest below
  if (e->op == Op::Sink && e->graph() == &g) {
    const UOp* r = each_or_together(g, e, affine_under_gate, [&](const UOp* rest) {
      return simplify_given_valid(g, v, rest, true);  // (none of them affine: no deeper split)
    });
    if (r) return r;
  } else if (const UOp* f = affine_under_gate(e)) {
    return f;
  }
  std::vector<std::pair<const UOp*, const UOp*>> to, back;
  for (const Clause& b : bounds) {
    if (!narrows(b)) continue;
    std::string name = b.x->op == Op::DefineVar ? b.x->as<VarArg>().name : cat("gated", b.x->id);
    const UOp* stand_in =
        g.make(Op::DefineVar, dtypes::index, {}, VarArg{name, int64_t(b.lo), int64_t(b.hi)}, kGateTag);
    to.push_back({b.x, stand_in});
    back.push_back({stand_in, b.x});
  }
  if (to.empty()) return e;
  const UOp* r = simplify(g, substitute(g, e, to));
  return simplify(g, substitute(g, r, back));
}

}  // namespace sn
