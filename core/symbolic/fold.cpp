// Constant folding, sums, products and comparisons of the symbolic simplifier.
#include <algorithm>
#include <cmath>

#include "core/symbolic/sym_internal.h"
#include "core/symbolic/symbolic.h"

namespace sn::sym {

// ---- constant folding --------------------------------------------------------------------

namespace {

std::optional<i128> int_op(Op op, DType in, i128 a, i128 b) {
  const bool exact = in.is_index();
  switch (op) {
    case Op::Add:
      return a + b;
    case Op::Sub:
      return a - b;
    case Op::Mul:
      return a * b;
    case Op::Neg:
      return -a;
    case Op::Max:
      return std::max(a, b);
    case Op::Idiv:
      return b == 0 ? std::nullopt : std::optional<i128>(floordiv(a, b));
    case Op::Mod:
      return b == 0 ? std::nullopt : std::optional<i128>(floormod(a, b));
    case Op::CDiv:
      return b == 0 ? std::nullopt : std::optional<i128>(a / b);
    case Op::CMod:
      return b == 0 ? std::nullopt : std::optional<i128>(a % b);
    case Op::And:
      return a & b;
    case Op::Or:
      return a | b;
    case Op::Xor:
      return a ^ b;
    case Op::Not:
      return in.is_bool() ? i128(a == 0) : ~a;
    case Op::Trunc:
      return a;
    case Op::Shl:
    case Op::Shr: {
      int bits = exact ? 62 : in.bits();
      if (b < 0 || b >= bits) return std::nullopt;
      i128 p = i128(1) << int(b);
      return op == Op::Shl ? a * p : floordiv(a, p);
    }
    case Op::CmpLt:
      return a < b;
    case Op::CmpNe:
      return a != b;
    case Op::CmpEq:
      return a == b;
    case Op::CmpGt:
      return a > b;
    case Op::CmpGe:
      return a >= b;
    case Op::CmpLe:
      return a <= b;
    default:
      return std::nullopt;
  }
}

std::optional<double> float_op(Op op, double a, double b) {
  switch (op) {
    case Op::Add:
      return a + b;
    case Op::Sub:
      return a - b;
    case Op::Mul:
      return a * b;
    case Op::Div:
      return a / b;
    case Op::Neg:
      return -a;
    case Op::Recip:
      return 1.0 / a;
    case Op::Trunc:
      return std::trunc(a);
    case Op::Sqrt:
      return std::sqrt(a);
    case Op::Exp2:
      return std::exp2(a);
    case Op::Log2:
      return std::log2(a);
    case Op::Sin:
      return std::sin(a);
    case Op::Pow:
      return std::pow(a, b);
    case Op::Max:
      if (std::isnan(a) || std::isnan(b)) return std::nullopt;
      return std::max(a, b);
    case Op::CmpLt:
      return double(a < b);
    case Op::CmpNe:
      return double(a != b);
    case Op::CmpEq:
      return double(a == b);
    case Op::CmpGt:
      return double(a > b);
    case Op::CmpGe:
      return double(a >= b);
    case Op::CmpLe:
      return double(a <= b);
    default:
      return std::nullopt;
  }
}

const UOp* fold_cast_const(Graph& g, const UOp* u) {
  const UOp* s = u->src(0);
  const DType to = u->dtype;
  if (!s->dtype.is_float()) {
    i128 v = s->const_int();
    if (to.is_float()) return g.cfloat(double(v), to);
    return mk_int(g, to, v);
  }
  double v = s->const_float();
  if (to.is_float()) return g.cfloat(v, to);
  if (to.is_bool()) return g.cbool(v != 0);
  if (std::isnan(v)) return nullptr;
  double t = std::trunc(v);
  // out-of-range conversions are undefined in C: leave them to the device
  if (t < double(to.int_min()) || t > double(to.int_max())) return nullptr;
  return mk_int(g, to, i128(t));
}

}  // namespace

const UOp* fold_const(Graph& g, const UOp* u) {
  if (!is_elementwise(u->op) || u->dtype.lanes != 1 || u->dtype.ptr) return nullptr;
  for (const UOp* s : u->src())
    if (s->op != Op::Const) return nullptr;
  if (u->op == Op::Where) return u->src(0)->const_int() != 0 ? u->src(1) : u->src(2);
  if (u->op == Op::Cast) return fold_cast_const(g, u);
  const DType in = u->src(0)->dtype;
  const bool cmp = is_comparison(u->op);
  if (in.is_float()) {
    double a = u->src(0)->const_float(), b = u->nsrc() > 1 ? u->src(1)->const_float() : 0.0;
    auto r = float_op(u->op, a, b);
    if (!r) return nullptr;
    return cmp ? g.cbool(*r != 0) : g.cfloat(*r, u->dtype);
  }
  i128 a = u->src(0)->const_int(), b = u->nsrc() > 1 ? u->src(1)->const_int() : 0;
  auto r = int_op(u->op, in, a, b);
  if (!r) return nullptr;
  if (cmp) return g.cbool(*r != 0);
  if (in.is_index() && !small(*r)) return nullptr;
  return mk_int(g, u->dtype, *r);
}

// ---- sums --------------------------------------------------------------------------------

namespace {

bool is_zero(const UOp* u) { return is_iconst(u, 0); }

// c ? t : f  (*a)  +  c ? tt : ff  (*b)  ->  c ? a*t + b*tt : a*f + b*ff, when one side of the
// result folds (both constants there, or a zero on each side).
bool combine_wheres(Graph& g, DType dt, Lin& L) {
  for (size_t i = 0; i < L.terms.size(); ++i) {
    const UOp* wi = L.terms[i].atom;
    if (wi->op != Op::Where) continue;
    for (size_t j = i + 1; j < L.terms.size(); ++j) {
      const UOp* wj = L.terms[j].atom;
      if (wj->op != Op::Where || wj->src(0) != wi->src(0)) continue;
      const UOp *t = wi->src(1), *f = wi->src(2), *tt = wj->src(1), *ff = wj->src(2);
      bool ok = (is_iconst(t) && is_iconst(tt)) || (is_iconst(f) && is_iconst(ff)) ||
                ((is_zero(t) || is_zero(tt)) && (is_zero(f) || is_zero(ff)));
      if (!ok) continue;
      i128 a = L.terms[i].coef, b = L.terms[j].coef;
      Lin lt, lf;
      lt.add(lin_of(t), a);
      lt.add(lin_of(tt), b);
      lf.add(lin_of(f), a);
      lf.add(lin_of(ff), b);
      const UOp *nt = build_lin(g, dt, lt), *nf = build_lin(g, dt, lf);
      if (nt == nullptr || nf == nullptr) continue;
      const UOp* w = simplify(g, g.make(Op::Where, dt, {wi->src(0), nt, nf}));
      L.remove(wi);
      L.remove(wj);
      L.add(lin_of(w), 1);
      return true;
    }
  }
  return false;
}

// Flattens nested floor divisions with positive outer divisors, (S + w//c1)//c2 =
// (c1*S + w)//(c1*c2), so that two spellings of the same quotient compare equal.
const UOp* flat_div(Graph& g, const UOp* u) {
  for (int guard = 0; guard < 16; ++guard) {
    if (u->op != Op::Idiv || !is_iconst(u->src(1)) || u->src(1)->const_int() <= 0) return u;
    const i128 c2 = u->src(1)->const_int();
    Lin z = lin_of(u->src(0));
    const UOp* inner = nullptr;
    for (const Term& t : z.terms) {
      if (t.coef == 1 && t.atom->op == Op::Idiv && is_iconst(t.atom->src(1)) && t.atom->src(1)->const_int() != 0) {
        inner = t.atom;
        break;
      }
    }
    if (inner == nullptr) return u;
    const i128 c1 = inner->src(1)->const_int();
    if (!small(c1 * c2)) return u;
    z.remove(inner);
    Lin nz;
    nz.add(z, c1);
    nz.add(lin_of(inner->src(0)), 1);
    const UOp* zn = build_lin(g, u->dtype, nz);
    const UOp* cn = mk_int(g, u->dtype, c1 * c2);
    if (zn == nullptr || cn == nullptr) return u;
    u = g.make(Op::Idiv, u->dtype, {zn, cn});
  }
  return u;
}

// a*(y % c) + a*c*(y // c) = a*y, and a*(y % c) + a*c*((y // c + kk) % c2) = a*((y + kk*c) % (c*c2))
// for c2 > 0 (the digits of a mixed-radix number recombine).
bool recombine_divmod(Graph& g, DType dt, Lin& L) {
  for (size_t i = 0; i < L.terms.size(); ++i) {
    const UOp* m = L.terms[i].atom;
    if (m->op != Op::Mod || !is_iconst(m->src(1))) continue;
    const i128 a = L.terms[i].coef, c = m->src(1)->const_int();
    if (c == 0 || !small(a * c)) continue;
    const UOp* y = m->src(0);
    const UOp* Y = nullptr;
    Lin LY;
    for (size_t j = 0; j < L.terms.size(); ++j) {
      if (j == i) continue;
      const UOp* d = L.terms[j].atom;
      const i128 b = L.terms[j].coef;
      if (b % (a * c) != 0 || (d->op != Op::Idiv && d->op != Op::Mod)) continue;
      if (Y == nullptr) {
        Y = simplify(g, g.make(Op::Idiv, dt, {y, m->src(1)}));
        LY = lin_of(Y);
      }
      if (d->op == Op::Idiv) {
        const UOp* fd = flat_div(g, d);
        for (const Term& t : LY.terms) {
          if (t.atom->op != Op::Idiv || b != a * c * t.coef) continue;
          if (t.atom != d && flat_div(g, t.atom) != fd) continue;
          Lin rest = LY;
          rest.remove(t.atom);
          Lin out = L;
          out.remove(m);
          out.remove(d);
          out.add(lin_of(y), a);
          out.add(rest, -a * c);
          L = out;
          return true;
        }
      } else if (b == a * c && is_iconst(d->src(1)) && d->src(1)->const_int() > 0) {
        const i128 c2 = d->src(1)->const_int();
        Lin diff = lin_of(d->src(0));
        diff.add(LY, -1);
        if (!diff.is_const() || !small(c * c2)) continue;
        Lin w = lin_of(y);
        w.k += diff.k * c;
        const UOp *wn = build_lin(g, dt, w), *cn = mk_int(g, dt, c * c2);
        if (wn == nullptr || cn == nullptr) continue;
        const UOp* merged = simplify(g, g.make(Op::Mod, dt, {wn, cn}));
        L.remove(m);
        L.remove(d);
        L.add(lin_of(merged), a);
        return true;
      }
    }
  }
  return false;
}

}  // namespace

namespace {

// The atom of a single canonical term (atom or atom * c with c != 0, 1); nullptr for a constant.
// Returns false when t is not a single canonical term.
bool term_atom(const UOp* t, DType dt, const UOp** atom) {
  if (t->dtype != dt) return false;
  switch (t->op) {
    case Op::Add:
    case Op::Sub:
    case Op::Neg:
      return false;
    case Op::Const:
      *atom = nullptr;
      return t->const_int() != 0;
    case Op::Mul:
      if (is_iconst(t->src(0))) return false;
      if (is_iconst(t->src(1))) {
        i128 c = t->src(1)->const_int();
        const UOp* a = t->src(0);
        if (c == 0 || c == 1 || a->dtype != dt) return false;
        if (a->op == Op::Add || a->op == Op::Sub || a->op == Op::Neg || a->op == Op::Const) return false;
        if (a->op == Op::Mul && (is_iconst(a->src(0)) || is_iconst(a->src(1)))) return false;
        *atom = a;
        return true;
      }
      *atom = t;
      return true;
    default:
      *atom = t;
      return true;
  }
}

// Add(a, b) with a already canonical (sources are rewritten before their parent) and b a term
// that belongs after a's last term: canonical without looking at the whole sum. Terms that may
// pair with others (where, div, mod) take the full path.
bool extends_canonical(const UOp* root) {
  if (root->op != Op::Add) return false;
  const DType dt = root->dtype;
  const UOp *a = root->src(0), *b = root->src(1);
  const UOp *last = a->op == Op::Add ? a->src(1) : a, *la = nullptr, *lb = nullptr;
  if (a->op != Op::Add && !term_atom(a, dt, &la)) return false;
  if (!term_atom(last, dt, &la) || la == nullptr || !term_atom(b, dt, &lb)) return false;
  if (lb == nullptr) return true;  // the constant goes last
  if (lb->op == Op::Where || lb->op == Op::Mod || lb->op == Op::Idiv) return false;
  return atom_less(la, lb);
}

}  // namespace

const UOp* fold_sum(Graph& g, const UOp* root) {
  const DType dt = root->dtype;
  if (!is_int_scalar(dt)) return nullptr;
  if (extends_canonical(root)) return nullptr;
  Lin L = lin_of(root);
  for (int round = 0; round < 64; ++round) {
    bool changed = combine_wheres(g, dt, L);
    if (dt.is_index()) changed = recombine_divmod(g, dt, L) || changed;
    if (!changed) break;
  }
  const UOp* out = build_lin(g, dt, L);
  return out == root ? nullptr : out;
}

// ---- products ----------------------------------------------------------------------------

const UOp* fold_product(Graph& g, const UOp* root) {
  const DType dt = root->dtype;
  if (!is_int_scalar(dt)) return nullptr;
  Prod p = prod_of(root);
  if (p.factors.size() == 1 && p.coef != 1 && p.factors[0]->dtype == dt) {
    Op op = p.factors[0]->op;
    // distribute a constant over a sum: (x + y) * c -> x*c + y*c
    if (op == Op::Add || op == Op::Sub || op == Op::Neg) {
      const UOp* out = build_lin(g, dt, lin_of(root));
      return out == root ? nullptr : out;
    }
  }
  const UOp* out = build_prod(g, dt, p);
  return out == root ? nullptr : out;
}

// ---- comparisons -------------------------------------------------------------------------

namespace {

const UOp* lt(Graph& g, const UOp* a, const UOp* b) { return g.make(Op::CmpLt, dtypes::bool_, {a, b}); }

const UOp* lin_node(Graph& g, const Lin& l) { return build_lin(g, dtypes::index, l); }

i128 gcd_of_coefs(const Lin& l) {
  i128 r = 0;
  for (const Term& t : l.terms) r = gcd128(r, t.coef);
  return r;
}

// x < c
const UOp* lt_const_right(Graph& g, const UOp* root, const UOp* x, i128 c) {
  const DType dt = x->dtype;
  Lin L = lin_of(x);
  if (L.terms.empty()) return nullptr;
  auto mk = [&](const Lin& l, i128 rhs) -> const UOp* {
    const UOp *ln = lin_node(g, l), *cn = mk_int(g, dt, rhs);
    if (ln == nullptr || cn == nullptr) return nullptr;
    const UOp* out = lt(g, ln, cn);
    return out == root ? nullptr : out;
  };
  if (L.k != 0) {
    i128 k = L.k;
    L.k = 0;
    return mk(L, c - k);
  }
  if (L.terms.size() == 1 && L.terms[0].coef == 1 && L.terms[0].atom->op == Op::Idiv &&
      is_iconst(L.terms[0].atom->src(1))) {
    // z // d < c  <=>  z < c*d (d > 0);  c*d < z (d < 0)
    const UOp* z = L.terms[0].atom->src(0);
    i128 d = L.terms[0].atom->src(1)->const_int();
    if (!small(c * d)) return nullptr;
    const UOp* cd = mk_int(g, dt, c * d);
    if (cd == nullptr) return nullptr;
    return d > 0 ? lt(g, z, cd) : lt(g, cd, z);
  }
  i128 gall = gcd_of_coefs(L);
  if (gall > 1) {  // g*S < c  <=>  S < ceil(c/g)
    Lin s;
    for (const Term& t : L.terms) s.add(t.atom, t.coef / gall);
    return mk(s, ceildiv(c, gall));
  }
  // g*S + e < c with 0 <= e < g and g | c  <=>  S < c/g
  std::vector<i128> cands;
  for (const Term& t : L.terms) cands.push_back(gcd128(t.coef, c));
  std::sort(cands.begin(), cands.end(), std::greater<>());
  for (i128 f : cands) {
    if (f <= 1) break;
    Lin big, rest;
    split_by_factor(L, f, &big, &rest);
    if (big.terms.empty() || rest.lo() < 0 || rest.hi() >= f) continue;
    return mk(big, c / f);
  }
  // sum of positive multiples of non-negative atoms < 1  <=>  every atom is 0
  if (c == 1) {
    bool simplex = true, plain = true;
    for (const Term& t : L.terms) {
      simplex = simplex && t.coef > 0 && vmin(t.atom) >= 0;
      plain = plain && t.coef == 1;
    }
    if (simplex && !plain) {
      Lin s;
      for (const Term& t : L.terms) s.add(t.atom, 1);
      return mk(s, 1);
    }
  }
  return nullptr;
}

// c < x
const UOp* lt_const_left(Graph& g, const UOp* root, i128 c, const UOp* x) {
  const DType dt = x->dtype;
  Lin L = lin_of(x);
  if (L.terms.empty()) return nullptr;
  auto mk = [&](i128 lhs, const Lin& l) -> const UOp* {
    const UOp *ln = lin_node(g, l), *cn = mk_int(g, dt, lhs);
    if (ln == nullptr || cn == nullptr) return nullptr;
    const UOp* out = lt(g, cn, ln);
    return out == root ? nullptr : out;
  };
  if (L.k != 0) {
    i128 k = L.k;
    L.k = 0;
    return mk(c - k, L);
  }
  if (L.terms.size() == 1 && L.terms[0].coef == 1 && L.terms[0].atom->op == Op::Idiv &&
      is_iconst(L.terms[0].atom->src(1))) {
    // c < z // d  <=>  z // d >= c+1  <=>  (c+1)*d - 1 < z (d > 0);  z < (c+1)*d + 1 (d < 0)
    const UOp* z = L.terms[0].atom->src(0);
    i128 d = L.terms[0].atom->src(1)->const_int();
    if (!small((c + 1) * d)) return nullptr;
    if (d > 0) {
      const UOp* b = mk_int(g, dt, (c + 1) * d - 1);
      return b == nullptr ? nullptr : lt(g, b, z);
    }
    const UOp* b = mk_int(g, dt, (c + 1) * d + 1);
    return b == nullptr ? nullptr : lt(g, z, b);
  }
  i128 gall = gcd_of_coefs(L);
  if (gall > 1) {  // c < g*S  <=>  floor(c/g) < S
    Lin s;
    for (const Term& t : L.terms) s.add(t.atom, t.coef / gall);
    return mk(floordiv(c, gall), s);
  }
  return nullptr;
}

}  // namespace

const UOp* fold_lt(Graph& g, const UOp* root) {
  const UOp *a = root->src(0), *b = root->src(1);
  if (a == b && (is_int_scalar(a->dtype) || is_bool_scalar(a->dtype))) return g.cbool(false);
  if (!is_index_scalar(a->dtype)) return nullptr;
  if (is_iconst(b) && !is_iconst(a)) return lt_const_right(g, root, a, b->const_int());
  if (is_iconst(a) && !is_iconst(b)) return lt_const_left(g, root, a->const_int(), b);
  if (is_iconst(a) || is_iconst(b)) return nullptr;
  // -x < -y  ->  y < x
  Lin la = lin_of(a), lb = lin_of(b);
  if (la.terms.size() == 1 && lb.terms.size() == 1 && la.k == 0 && lb.k == 0 && la.terms[0].coef == -1 &&
      lb.terms[0].coef == -1)
    return lt(g, lb.terms[0].atom, la.terms[0].atom);
  return nullptr;
}

const UOp* fold_ne(Graph& g, const UOp* root) {
  const UOp *a = root->src(0), *b = root->src(1);
  const DType dt = a->dtype;
  if (dt.lanes != 1 || dt.ptr) return nullptr;
  const bool ib = is_int_scalar(dt) || is_bool_scalar(dt);
  if (!ib) return nullptr;
  if (a == b) return g.cbool(false);
  // constants to the right
  if (is_iconst(a) && !is_iconst(b)) return g.make(Op::CmpNe, root->dtype, {b, a});
  if (!is_iconst(a) && !is_iconst(b) && atom_less(b, a)) return g.make(Op::CmpNe, root->dtype, {b, a});
  if (!is_iconst(b)) return nullptr;
  const i128 c = b->const_int();
  if (dt.is_bool()) {
    if (c == 0) return a;  // x != false
    // !!x -> x
    if (a->op == Op::CmpNe && a->src(0)->dtype.is_bool() && is_iconst(a->src(1), 1)) return a->src(0);
    return nullptr;
  }
  // (int)bool_x != c
  if (a->op == Op::Cast && a->src(0)->dtype.is_bool() && is_bool_scalar(a->src(0)->dtype)) {
    if (c == 0) return a->src(0);
    if (c == 1) return g.make(Op::CmpNe, root->dtype, {a->src(0), g.cbool(true)});
    return nullptr;
  }
  if (!dt.is_index()) return nullptr;
  Lin L = lin_of(a);
  if (L.terms.empty()) return nullptr;
  i128 rhs = c - L.k;
  L.k = 0;
  i128 gall = gcd_of_coefs(L);
  if (gall > 1) {
    if (rhs % gall != 0) return g.cbool(true);
    Lin s;
    for (const Term& t : L.terms) s.add(t.atom, t.coef / gall);
    L = s;
    rhs /= gall;
  }
  const UOp *ln = build_lin(g, dt, L), *cn = mk_int(g, dt, rhs);
  if (ln == nullptr || cn == nullptr) return nullptr;
  const UOp* out = g.make(Op::CmpNe, root->dtype, {ln, cn});
  return out == root ? nullptr : out;
}

}  // namespace sn::sym
