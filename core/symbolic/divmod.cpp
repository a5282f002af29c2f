// Floor and C-truncating division / modulo folding over exact index integers.
//
// Notation: x // c and x % c with x = sum(f_i * v_i) + k (a linear form over atoms v_i) and a
// constant divisor c != 0 of either sign. Floor semantics: x = c * (x // c) + x % c with x % c
// in [0, c) for c > 0 and in (c, 0] for c < 0. Every step below rests on one of three facts:
//  * splitting:  (q*c*v + R) // c = q*v + R // c           (any integer q, any sign of c)
//  * blocks:     R // c is constant when floor(lo/c) == floor(hi/c) over R's interval
//  * factoring:  (g*S + R) // (g*c') = S // c' when 0 <= R < g (c' > 0) or -g < R <= 0 (c' < 0)
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/symbolic/sym_internal.h"
#include "core/symbolic/symbolic.h"

namespace sn::sym {

namespace {

i128 fdm(bool is_div, i128 a, i128 c) { return is_div ? floordiv(a, c) : floormod(a, c); }

// Node count cost of a term with coefficient e in a built sum (the atom itself is shared).
int coef_cost(i128 e) { return e == 0 ? 0 : e == 1 ? 1 : 3; }

// x // c or x % c as a node (c != 0), short-cutting the trivial divisors.
const UOp* make_divmod(Graph& g, bool is_div, DType dt, const Lin& x, i128 c) {
  if (c == 1 || c == -1) {
    if (!is_div) return mk_int(g, dt, 0);
    Lin n;
    n.add(x, c);
    return build_lin(g, dt, n);
  }
  if (x.is_const()) return mk_int(g, dt, fdm(is_div, x.k, c));
  const UOp* xn = build_lin(g, dt, x);
  const UOp* cn = mk_int(g, dt, c);
  if (xn == nullptr || cn == nullptr) return nullptr;
  return g.make(is_div ? Op::Idiv : Op::Mod, dt, {xn, cn});
}

// Adds coef * node to l, folding a constant node into the constant part.
void add_node(Lin& l, const UOp* node, i128 coef) {
  if (is_iconst(node))
    l.k += coef * node->const_int();
  else
    l.add(lin_of(node), coef);
}

bool bounded(const Lin& l) {
  for (const Term& t : l.terms)
    if (!small(vmin(t.atom)) || !small(vmax(t.atom))) return false;
  return small(l.k);
}

// ---- constant divisor --------------------------------------------------------------------

// (a*(z % m)) % c  ->  (a*z) % c  when c divides a*m: the dropped part a*m*(z // m) is a
// multiple of c. Also drops every term whose coefficient is a multiple of c.
bool strip_mod_terms(Lin& l, i128 c) {
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    for (const Term& t : l.terms) {
      if (t.coef % c == 0) {
        l.remove(t.atom);
        again = changed = true;
        break;
      }
      const UOp* a = t.atom;
      if (a->op == Op::Mod && is_iconst(a->src(1)) && (t.coef * a->src(1)->const_int()) % c == 0) {
        i128 coef = t.coef;
        l.remove(a);
        add_node(l, a->src(0), coef);
        again = changed = true;
        break;
      }
    }
  }
  return changed;
}

// The sum is congruent (mod c) to sum(r_i * v_i) + k with r_i = f_i mod c or f_i mod c - c. When
// some choice keeps that remainder expression inside one block of c, both the quotient and the
// remainder are linear.
const UOp* fold_congruence(Graph& g, bool is_div, DType dt, const Lin& L, i128 c) {
  const size_t n = L.terms.size();
  std::vector<i128> base(n), other(n);
  std::vector<size_t> free_idx;
  for (size_t i = 0; i < n; ++i) {
    i128 r = floormod(L.terms[i].coef, c);  // same sign as c
    i128 alt = r - c;                       // the other residue, opposite sign
    // try the residue closest to zero first
    if (abs128(alt) < abs128(r)) std::swap(r, alt);
    base[i] = r;
    other[i] = alt;
    if (r != 0 && alt != 0) free_idx.push_back(i);
  }
  const size_t m = std::min<size_t>(free_idx.size(), 10);
  const uint32_t combos = 1u << m;
  int best_cost = -1;
  std::vector<i128> best;
  i128 best_q = 0;
  std::vector<i128> r(n);
  for (uint32_t mask = 0; mask < combos; ++mask) {
    r = base;
    for (size_t j = 0; j < m; ++j)
      if (mask & (1u << j)) r[free_idx[j]] = other[free_idx[j]];
    i128 lo = L.k, hi = L.k;
    for (size_t i = 0; i < n; ++i) {
      i128 a = r[i] * vmin(L.terms[i].atom), b = r[i] * vmax(L.terms[i].atom);
      lo += std::min(a, b);
      hi += std::max(a, b);
    }
    i128 q = floordiv(lo, c);
    if (floordiv(hi, c) != q) continue;
    int cost = 0;
    for (size_t i = 0; i < n; ++i) cost += coef_cost(is_div ? (L.terms[i].coef - r[i]) / c : r[i]);
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best = r;
      best_q = q;
    }
  }
  if (best_cost < 0) return nullptr;
  Lin out;
  for (size_t i = 0; i < n; ++i) {
    const Term& t = L.terms[i];
    out.add(t.atom, is_div ? (t.coef - best[i]) / c : best[i]);
  }
  out.k = is_div ? best_q : L.k - best_q * c;
  return build_lin(g, dt, out);
}

// x takes exactly two values: the result is the line through them.
const UOp* fold_two_values(Graph& g, bool is_div, const UOp* root, const UOp* x, i128 c) {
  i128 lo = vmin(x), hi = vmax(x);
  if (hi - lo != 1) return nullptr;
  i128 v0 = fdm(is_div, lo, c), d = fdm(is_div, hi, c) - v0;
  Lin out;
  out.add(lin_of(x), d);
  out.k += v0 - d * lo;
  const UOp* r = build_lin(g, root->dtype, out);
  if (r == nullptr || count_nodes({r}) > count_nodes({root})) return nullptr;
  return r;
}

// Factor g out of the terms it divides when the rest (other terms and the constant) stays inside
// one remainder block of g: (g*S + R) // (g*c') = S // c', (g*S + R) % (g*c') = g*(S % c') + R.
const UOp* fold_common_factor(Graph& g, bool is_div, DType dt, const Lin& L, i128 c) {
  std::vector<i128> cands;
  i128 all = abs128(c);
  for (const Term& t : L.terms) {
    cands.push_back(gcd128(t.coef, c));
    all = gcd128(all, t.coef);
  }
  cands.push_back(all);
  std::sort(cands.begin(), cands.end(), std::greater<>());
  cands.erase(std::unique(cands.begin(), cands.end()), cands.end());
  for (i128 f : cands) {
    if (f <= 1) break;
    Lin big, rest;
    split_by_factor(L, f, &big, &rest);
    if (big.terms.empty()) continue;
    rest.k = L.k;
    i128 lo = rest.lo(), hi = rest.hi(), kq;
    if (c > 0) {
      kq = floordiv(lo, f);
      if (floordiv(hi, f) != kq) continue;
    } else {
      kq = ceildiv(hi, f);
      if (ceildiv(lo, f) != kq) continue;
    }
    big.k = kq;
    rest.k -= f * kq;
    const i128 cq = c / f;
    if (is_div) return make_divmod(g, true, dt, big, cq);
    const UOp* inner = make_divmod(g, false, dt, big, cq);
    if (inner == nullptr) return nullptr;
    Lin out = rest;
    add_node(out, inner, f);
    return build_lin(g, dt, out);
  }
  return nullptr;
}

// Move whole multiples of c out: f = q*c + r. Coefficients split toward zero (|r| < |c|, r keeps
// f's sign, so -x // 2 stays as it is); the constant splits by floor (its remainder lies in the
// remainder range of c).
const UOp* fold_split(Graph& g, bool is_div, DType dt, const Lin& L, i128 c) {
  Lin quo, rem;
  for (const Term& t : L.terms) {
    i128 q = t.coef / c;
    quo.add(t.atom, q);
    rem.add(t.atom, t.coef - q * c);
  }
  quo.k = floordiv(L.k, c);
  rem.k = floormod(L.k, c);
  if (quo.terms.empty() && quo.k == 0) return nullptr;
  const UOp* inner = make_divmod(g, is_div, dt, rem, c);
  if (inner == nullptr || !is_div) return inner;
  add_node(quo, inner, 1);
  return build_lin(g, dt, quo);
}

// x // c == (x // f) // (c / f) for c / f > 0. Worth it when x // f is linear (its small terms
// vanish into one block of f), e.g. (40a + 5b + 4c + 1) // 60 with c in [0, 1] is
// (8a + b + c) // 12. Among such factors the one with the smallest finished result wins, and only
// when that beats the node count of the input.
const UOp* fold_nest_by_factor(Graph& g, const UOp* root, const Lin& L, i128 c) {
  if (L.terms.size() < 2) return nullptr;
  const DType dt = root->dtype;
  std::vector<i128> cands;
  for (const Term& t : L.terms) {
    i128 f = gcd128(t.coef, c);
    if (f > 1 && f < abs128(c)) cands.push_back(c > 0 ? f : -f);
  }
  std::sort(cands.begin(), cands.end());
  cands.erase(std::unique(cands.begin(), cands.end()), cands.end());
  size_t best_n = count_nodes({root});
  const UOp* best = nullptr;
  for (i128 f : cands) {
    const UOp* inner = fold_congruence(g, true, dt, L, f);
    const UOp* cq = mk_int(g, dt, c / f);
    if (inner == nullptr || cq == nullptr) continue;
    const UOp* total = simplify(g, g.make(Op::Idiv, dt, {inner, cq}));
    size_t n = count_nodes({total});
    if (n < best_n) {
      best_n = n;
      best = total;
    }
  }
  return best;
}

const UOp* fold_const_divisor(Graph& g, const UOp* root, i128 c) {
  const bool is_div = root->op == Op::Idiv;
  const DType dt = root->dtype;
  const UOp* x = root->src(0);
  Lin L = lin_of(x);
  if (!bounded(L)) return nullptr;
  if (!is_div && strip_mod_terms(L, c)) {
    L.k = floormod(L.k, c);
    return make_divmod(g, false, dt, L, c);
  }
  if (const UOp* r = fold_congruence(g, is_div, dt, L, c)) return r;
  if (const UOp* r = fold_two_values(g, is_div, root, x, c)) return r;
  if (const UOp* r = fold_common_factor(g, is_div, dt, L, c)) return r;
  if (const UOp* r = fold_split(g, is_div, dt, L, c)) return r;
  if (!is_div) return nullptr;
  if (L.terms.size() == 1 && L.terms[0].coef == 1) {
    const UOp* a = L.terms[0].atom;
    // (z % m) // d -> (z // d) % (m / d) when d divides m (m, d > 0): the quotient digit view
    if (L.k == 0 && a->op == Op::Mod && is_iconst(a->src(1)) && c > 0) {
      i128 m = a->src(1)->const_int();
      if (m > 0 && m % c == 0) {
        const UOp* q = g.make(Op::Idiv, dt, {a->src(0), root->src(1)});
        const UOp* mm = mk_int(g, dt, m / c);
        if (mm != nullptr) return g.make(Op::Mod, dt, {q, mm});
      }
    }
    // (z // c1 + k) // c -> (z + k*c1) // (c1*c) for c > 0
    if (a->op == Op::Idiv && is_iconst(a->src(1)) && c > 0) {
      i128 c1 = a->src(1)->const_int();
      if (c1 != 0 && small(c1 * c) && small(L.k * c1)) {
        Lin z = lin_of(a->src(0));
        z.k += L.k * c1;
        return make_divmod(g, true, dt, z, c1 * c);
      }
    }
  }
  return fold_nest_by_factor(g, root, L, c);
}

// ---- symbolic divisor --------------------------------------------------------------------

// Removes the factors `fs` (a sub-multiset of p's factors) from p.
bool remove_factors(Prod& p, const std::vector<const UOp*>& fs) {
  for (const UOp* f : fs) {
    auto it = std::find(p.factors.begin(), p.factors.end(), f);
    if (it == p.factors.end()) return false;
    p.factors.erase(it);
  }
  return true;
}

std::vector<const UOp*> multiset_intersect(const std::vector<const UOp*>& a, std::vector<const UOp*> b) {
  std::vector<const UOp*> out;
  for (const UOp* f : a) {
    auto it = std::find(b.begin(), b.end(), f);
    if (it == b.end()) continue;
    out.push_back(f);
    b.erase(it);
  }
  return out;
}

const UOp* fold_symbolic_divisor(Graph& g, const UOp* root) {
  const bool is_div = root->op == Op::Idiv;
  const DType dt = root->dtype;
  const UOp *x = root->src(0), *y = root->src(1);
  Prod py = prod_of(y);
  if (py.coef == 0 || py.factors.empty()) return nullptr;
  Lin L = lin_of(x);
  std::vector<Prod> tp;
  for (const Term& t : L.terms) tp.push_back(prod_of(t.atom));

  // Cancel a common factor of every term and the divisor: (k*X) // (k*Y) = X // Y and
  // (k*X) % (k*Y) = k * (X % Y) for any k that is never zero.
  i128 gc = abs128(py.coef);
  for (size_t i = 0; i < L.terms.size(); ++i) gc = gcd128(gc, L.terms[i].coef * tp[i].coef);
  gc = gcd128(gc, L.k);
  std::vector<const UOp*> common;
  if (L.k == 0 && !L.terms.empty()) {
    common = py.factors;
    for (const Prod& p : tp) common = multiset_intersect(common, p.factors);
    std::erase_if(common, [](const UOp* f) { return !(vmin(f) > 0 || vmax(f) < 0); });
  }
  if (gc > 1 || !common.empty()) {
    Lin nx;
    nx.k = L.k / gc;
    for (size_t i = 0; i < L.terms.size(); ++i) {
      Prod p = tp[i];
      remove_factors(p, common);
      p.coef = p.coef * L.terms[i].coef / gc;
      const UOp* a = build_prod(g, dt, p);
      if (a == nullptr) return nullptr;
      add_node(nx, a, 1);
    }
    Prod ny = py;
    remove_factors(ny, common);
    ny.coef /= gc;
    const UOp *xn = build_lin(g, dt, nx), *yn = build_prod(g, dt, ny);
    if (xn == nullptr || yn == nullptr) return nullptr;
    const UOp* inner = g.make(root->op, dt, {xn, yn});
    if (is_div) return inner;
    Prod out;
    out.coef = gc;
    out.factors = common;
    out.factors.push_back(inner);
    return build_prod(g, dt, out);
  }

  // Pull out the terms that are multiples of the divisor.
  Lin quo, rest;
  rest.k = L.k;
  for (size_t i = 0; i < L.terms.size(); ++i) {
    Prod p = tp[i];
    i128 f = L.terms[i].coef * p.coef;
    if (f % py.coef == 0 && remove_factors(p, py.factors)) {
      p.coef = 1;
      const UOp* a = build_prod(g, dt, p);
      if (a == nullptr) return nullptr;
      add_node(quo, a, f / py.coef);
    } else {
      rest.add(L.terms[i].atom, L.terms[i].coef);
    }
  }
  if (quo.terms.empty() && quo.k == 0) {
    // (z % y) % y -> z % y
    if (!is_div && x->op == Op::Mod && x->src(1) == y) return x;
    return nullptr;
  }
  const UOp* rn = build_lin(g, dt, rest);
  if (rn == nullptr) return nullptr;
  const UOp* inner = g.make(root->op, dt, {rn, y});
  if (!is_div) return inner;
  add_node(quo, inner, 1);
  return build_lin(g, dt, quo);
}

}  // namespace

const UOp* fold_floor_divmod(Graph& g, const UOp* root) {
  const bool is_div = root->op == Op::Idiv;
  const DType dt = root->dtype;
  const UOp *x = root->src(0), *y = root->src(1);
  if (is_iconst(y, 0)) return nullptr;
  if (x == y) return mk_int(g, dt, is_div ? 1 : 0);
  // The quotient is the same at every corner of the box: fold it to a constant.
  const i128 ylo = vmin(y), yhi = vmax(y), xlo = vmin(x), xhi = vmax(x);
  if ((ylo > 0 || yhi < 0) && small(xlo) && small(xhi) && small(ylo) && small(yhi)) {
    i128 q = floordiv(xlo, ylo);
    if (floordiv(xlo, yhi) == q && floordiv(xhi, ylo) == q && floordiv(xhi, yhi) == q) {
      if (is_div) return mk_int(g, dt, q);
      Lin r = lin_of(x);
      r.add(lin_of(y), -q);
      return build_lin(g, dt, r);
    }
  }
  if (is_iconst(y)) return fold_const_divisor(g, root, y->const_int());
  return fold_symbolic_divisor(g, root);
}

namespace {

// Rewrites the floor divisions of `r` that are not part of `keep` into C divisions; fails (nullptr)
// when one of them may see a negative numerator or a non-positive divisor.
const UOp* floor_to_c(Graph& g, const UOp* r, const std::unordered_set<const UOp*>& keep) {
  std::unordered_map<const UOp*, const UOp*> memo;
  std::vector<std::pair<const UOp*, bool>> stack{{r, false}};
  while (!stack.empty()) {
    auto [n, expanded] = stack.back();
    stack.pop_back();
    if (memo.count(n)) continue;
    if (keep.count(n) || n->nsrc() == 0) {
      memo[n] = n;
      continue;
    }
    if (!expanded) {
      stack.push_back({n, true});
      for (const UOp* s : n->src()) stack.push_back({s, false});
      continue;
    }
    std::vector<const UOp*> src;
    for (const UOp* s : n->src()) {
      const UOp* m = memo[s];
      if (m == nullptr) return nullptr;
      src.push_back(m);
    }
    const UOp* out = g.replace_src(n, src);
    if (n->op == Op::Idiv || n->op == Op::Mod) {
      if (!(is_iconst(src[1]) && src[1]->const_int() > 0 && vmin(src[0]) >= 0)) return nullptr;
      out = g.make(n->op == Op::Idiv ? Op::CDiv : Op::CMod, n->dtype, src);
    }
    memo[n] = out;
  }
  return memo[r];
}

i128 cdiv(i128 a, i128 b) { return a / b; }

}  // namespace

const UOp* fold_c_divmod(Graph& g, const UOp* root) {
  const bool is_div = root->op == Op::CDiv;
  const DType dt = root->dtype;
  const UOp *x = root->src(0), *y = root->src(1);
  if (is_iconst(y, 0)) return nullptr;
  if (x == y) return mk_int(g, dt, is_div ? 1 : 0);
  if (is_iconst(y, 1) || is_iconst(y, -1)) {
    if (!is_div) return mk_int(g, dt, 0);
    Lin n;
    n.add(lin_of(x), y->const_int());
    return build_lin(g, dt, n);
  }
  // Truncating division is monotone in each argument while the divisor keeps its sign.
  const i128 ylo = vmin(y), yhi = vmax(y), xlo = vmin(x), xhi = vmax(x);
  if ((ylo > 0 || yhi < 0) && small(xlo) && small(xhi) && small(ylo) && small(yhi)) {
    i128 q = cdiv(xlo, ylo);
    if (cdiv(xlo, yhi) == q && cdiv(xhi, ylo) == q && cdiv(xhi, yhi) == q) {
      if (is_div) return mk_int(g, dt, q);
      Lin r = lin_of(x);
      r.add(lin_of(y), -q);
      return build_lin(g, dt, r);
    }
  }
  if (!is_iconst(y)) return nullptr;
  i128 c = y->const_int();
  // x cmod -c == x cmod c
  if (!is_div && c < 0) {
    const UOp* pc = mk_int(g, dt, -c);
    return pc == nullptr ? nullptr : g.make(Op::CMod, dt, {x, pc});
  }
  // With a non-negative numerator and a positive divisor C and floor division agree: fold with
  // the floor rules and turn the new floor divisions back into C ones.
  if (c > 0 && xlo >= 0) {
    const UOp* fl = g.make(is_div ? Op::Idiv : Op::Mod, dt, {x, y});
    const UOp* r = fold_floor_divmod(g, fl);
    if (r == nullptr) return nullptr;
    r = simplify(g, r);
    std::unordered_set<const UOp*> keep;
    for (const UOp* n : toposort(x)) keep.insert(n);
    return floor_to_c(g, r, keep);
  }
  return nullptr;
}

}  // namespace sn::sym
