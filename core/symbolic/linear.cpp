// Linear forms, products, canonical order and small graph queries for the simplifier.
#include <algorithm>
#include <span>
#include <unordered_set>

#include "core/symbolic/sym_internal.h"

namespace sn::sym {

const UOp* mk_int(Graph& g, DType dt, i128 v) {
  dt = dt.base();
  if (dt.is_bool()) return g.cint(v != 0 ? 1 : 0, dt);
  if (dt.is_index()) {
    if (v < i128(INT64_MIN) || v > i128(INT64_MAX)) return nullptr;
    return g.cint(int64_t(v), dt);
  }
  i128 w = wrap_int(dt, v);
  // uint64 keeps its bit pattern in the int64 arg
  return g.cint(int64_t(uint64_t(w)), dt);
}

// ---- Lin --------------------------------------------------------------------------------

namespace {
constexpr size_t kIndexFrom = 16;  // below this many terms a linear scan is faster than hashing
}  // namespace

long Lin::find(const UOp* atom) const {
  if (!index_.empty()) {
    auto it = index_.find(atom);
    return it == index_.end() ? -1 : long(it->second);
  }
  for (size_t i = 0; i < terms.size(); ++i)
    if (terms[i].atom == atom) return long(i);
  return -1;
}

void Lin::erase_at(size_t i) {
  if (!index_.empty()) index_.erase(terms[i].atom);
  if (i + 1 != terms.size()) {
    terms[i] = terms.back();
    if (!index_.empty()) index_[terms[i].atom] = i;
  }
  terms.pop_back();
}

void Lin::add(const UOp* atom, i128 coef) {
  if (coef == 0) return;
  long i = find(atom);
  if (i >= 0) {
    terms[size_t(i)].coef += coef;
    if (terms[size_t(i)].coef == 0) erase_at(size_t(i));
    return;
  }
  if (terms.empty()) terms.reserve(8);  // one allocation for a usual sum, not four
  terms.push_back({atom, coef});
  if (!index_.empty()) {
    index_[atom] = terms.size() - 1;
  } else if (terms.size() >= kIndexFrom) {
    for (size_t j = 0; j < terms.size(); ++j) index_[terms[j].atom] = j;
  }
}

void Lin::add(const Lin& o, i128 scale) {
  for (const Term& t : o.terms) add(t.atom, t.coef * scale);
  k += o.k * scale;
}

i128 Lin::coef_of(const UOp* atom) const {
  long i = find(atom);
  return i < 0 ? 0 : terms[size_t(i)].coef;
}

void Lin::remove(const UOp* atom) {
  long i = find(atom);
  if (i >= 0) erase_at(size_t(i));
}

void split_by_factor(const Lin& l, i128 f, Lin* big, Lin* rest) {
  for (const Term& t : l.terms) {
    if (t.coef % f == 0)
      big->add(t.atom, t.coef / f);
    else
      rest->add(t.atom, t.coef);
  }
}

i128 Lin::lo() const {
  i128 s = k;
  for (const Term& t : terms) s += t.coef > 0 ? t.coef * vmin(t.atom) : t.coef * vmax(t.atom);
  return s;
}

i128 Lin::hi() const {
  i128 s = k;
  for (const Term& t : terms) s += t.coef > 0 ? t.coef * vmax(t.atom) : t.coef * vmin(t.atom);
  return s;
}

Lin lin_of(const UOp* root) {
  Lin l;
  const DType dt = root->dtype;
  // The walk's stack: a sum is rarely more than a few terms deep, so a fixed buffer (spilling into
  // a vector beyond it) spares the allocation that every call made.
  using Item = std::pair<const UOp*, i128>;
  constexpr size_t kFixed = 32;
  Item fixed[kFixed];
  std::vector<Item> spill;
  size_t top = 0;
  auto push = [&](const UOp* n, i128 s) {
    if (top < kFixed)
      fixed[top++] = {n, s};
    else
      spill.push_back({n, s});
  };
  push(root, 1);
  while (top > 0) {  // (the spill holds items only while the buffer is full)
    Item it = spill.empty() ? fixed[--top] : spill.back();
    if (!spill.empty()) spill.pop_back();
    auto [n, s] = it;
    if (n->dtype != dt || !is_int_scalar(dt)) {
      l.add(n, s);
      continue;
    }
    switch (n->op) {
      case Op::Const:
        l.k += s * n->const_int();
        continue;
      case Op::Add:
        push(n->src(1), s);
        push(n->src(0), s);
        continue;
      case Op::Sub:
        push(n->src(1), -s);
        push(n->src(0), s);
        continue;
      case Op::Neg:
        push(n->src(0), -s);
        continue;
      case Op::Mul: {
        int ci = is_iconst(n->src(1)) ? 1 : is_iconst(n->src(0)) ? 0 : -1;
        if (ci >= 0) {
          i128 c = n->src(size_t(ci))->const_int();
          if (small(c) && small(s * c)) {
            push(n->src(size_t(1 - ci)), s * c);
            continue;
          }
        }
        break;
      }
      default:
        break;
    }
    l.add(n, s);
  }
  return l;
}

const UOp* build_lin(Graph& g, DType dt, const Lin& l) {
  // the terms sorted in a copy (on the stack for a usual sum)
  constexpr size_t kFixed = 16;
  Term fixed[kFixed];
  std::vector<Term> heap;
  std::span<Term> terms;
  if (l.terms.size() <= kFixed) {
    std::copy(l.terms.begin(), l.terms.end(), fixed);
    terms = std::span<Term>(fixed, l.terms.size());
  } else {
    heap = l.terms;
    terms = heap;
  }
  // Sorting a sum rebuilds every prefix behind an inserted term, so sums built in an order far
  // from the canonical one cost quadratic nodes; beyond this size terms keep their order.
  constexpr size_t kSortLimit = 256;
  // (a Lin holds each atom once and atom_less orders distinct atoms totally: std::sort gives
  // stable_sort's order without its temporary buffer)
  if (terms.size() <= kSortLimit)
    std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) { return atom_less(a.atom, b.atom); });
  const UOp* acc = nullptr;
  for (const Term& t : terms) {
    i128 c = dt.is_index() ? t.coef : wrap_int(dt, t.coef);
    if (c == 0) continue;
    const UOp* term = t.atom;
    if (c != 1) {
      const UOp* cc = mk_int(g, dt, c);
      if (cc == nullptr) return nullptr;
      term = g.make(Op::Mul, dt, {t.atom, cc});
    }
    acc = acc == nullptr ? term : g.make(Op::Add, dt, {acc, term});
  }
  i128 k = dt.is_index() ? l.k : wrap_int(dt, l.k);
  if (k != 0 || acc == nullptr) {
    const UOp* kc = mk_int(g, dt, k);
    if (kc == nullptr) return nullptr;
    acc = acc == nullptr ? kc : g.make(Op::Add, dt, {acc, kc});
  }
  return acc;
}

// ---- order ------------------------------------------------------------------------------

namespace {
int rank(const UOp* u) {
  switch (u->op) {
    case Op::DefineVar:
      return 0;
    case Op::Range:
    case Op::Special:
      return 1;
    case Op::Const:
      return 3;
    default:
      return 2;
  }
}
}  // namespace

bool atom_less(const UOp* a, const UOp* b) {
  if (a == b) return false;
  int ra = rank(a), rb = rank(b);
  if (ra != rb) return ra < rb;
  // Creation order: deterministic for a given build sequence, and sums built in the order their
  // variables were made are already sorted (appending stays linear-time).
  return a->id < b->id;
}

// ---- products ---------------------------------------------------------------------------

Prod prod_of(const UOp* root) {
  Prod p;
  const DType dt = root->dtype;
  std::vector<const UOp*> stack{root};
  while (!stack.empty()) {
    const UOp* n = stack.back();
    stack.pop_back();
    if (n->op == Op::Mul && n->dtype == dt) {
      stack.push_back(n->src(1));
      stack.push_back(n->src(0));
    } else if (is_iconst(n) && n->dtype == dt) {
      p.coef *= n->const_int();
      if (!small(p.coef)) p.coef = dt.is_index() ? p.coef : wrap_int(dt, p.coef);
    } else {
      p.factors.push_back(n);
    }
  }
  std::stable_sort(p.factors.begin(), p.factors.end(), atom_less);
  return p;
}

const UOp* build_prod(Graph& g, DType dt, const Prod& p) {
  i128 c = dt.is_index() ? p.coef : wrap_int(dt, p.coef);
  if (c == 0 || p.factors.empty()) return mk_int(g, dt, c);
  const UOp* acc = nullptr;
  for (const UOp* f : p.factors) acc = acc == nullptr ? f : g.make(Op::Mul, dt, {acc, f});
  if (c != 1) {
    const UOp* cc = mk_int(g, dt, c);
    if (cc == nullptr) return nullptr;
    acc = g.make(Op::Mul, dt, {acc, cc});
  }
  return acc;
}

// ---- graph queries ----------------------------------------------------------------------

size_t count_nodes(std::initializer_list<const UOp*> roots) {
  std::unordered_set<const UOp*> seen;
  std::vector<const UOp*> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    const UOp* n = stack.back();
    stack.pop_back();
    if (n == nullptr || !seen.insert(n).second) continue;
    for (const UOp* s : n->src()) stack.push_back(s);
  }
  return seen.size();
}

bool contains_op(const UOp* root, std::initializer_list<Op> ops) {
  std::unordered_set<const UOp*> seen;
  std::vector<const UOp*> stack{root};
  while (!stack.empty()) {
    const UOp* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    if (std::find(ops.begin(), ops.end(), n->op) != ops.end()) return true;
    for (const UOp* s : n->src()) stack.push_back(s);
  }
  return false;
}

// ---- clauses ----------------------------------------------------------------------------

bool read_clause(const UOp* u, Clause* out) {
  if (!is_bool_scalar(u->dtype)) return false;
  bool negated = false;
  if (u->op == Op::CmpNe && is_iconst(u->src(1), 1) && u->src(1)->dtype.is_bool()) {
    negated = true;
    u = u->src(0);
  }
  if (u->op != Op::CmpLt) return false;
  const UOp *a = u->src(0), *b = u->src(1);
  if (!is_index_scalar(a->dtype)) return false;
  i128 lo, hi;
  const UOp* x;
  if (is_iconst(b) && !is_iconst(a)) {  // x < c  (negated: x >= c)
    x = a;
    i128 c = b->const_int();
    if (negated)
      lo = c, hi = vmax(x);
    else
      lo = vmin(x), hi = c - 1;
  } else if (is_iconst(a) && !is_iconst(b)) {  // c < x  (negated: x <= c)
    x = b;
    i128 c = a->const_int();
    if (negated)
      lo = vmin(x), hi = c;
    else
      lo = c + 1, hi = vmax(x);
  } else {
    return false;
  }
  out->x = x;
  out->lo = std::max(lo, vmin(x));
  out->hi = std::min(hi, vmax(x));
  return true;
}

}  // namespace sn::sym
