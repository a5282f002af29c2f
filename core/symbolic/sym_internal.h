// Internal helpers of the symbolic simplifier: exact integer arithmetic, a linear-form view of
// integer sums (sum of coefficient * atom + constant), canonical ordering, node counting.
#pragma once
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/ir/graph.h"

namespace sn::sym {

// ---- exact integer helpers (floor semantics) ----------------------------------------------

inline i128 floordiv(i128 a, i128 b) {
  i128 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline i128 floormod(i128 a, i128 b) { return a - floordiv(a, b) * b; }
inline i128 ceildiv(i128 a, i128 b) { return -floordiv(-a, b); }
inline i128 abs128(i128 a) { return a < 0 ? -a : a; }
inline i128 gcd128(i128 a, i128 b) {
  a = abs128(a);
  b = abs128(b);
  while (b != 0) {
    i128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}
// Values beyond this are never produced by the folder (keeps every product inside i128).
constexpr i128 kLimit = i128(1) << 62;
inline bool small(i128 v) { return v > -kLimit && v < kLimit; }

// ---- node classification -----------------------------------------------------------------

// A scalar integer value (signed, unsigned or index): ring rules (+, *, like terms) hold.
inline bool is_int_scalar(DType dt) { return dt.is_int() && dt.lanes == 1 && !dt.ptr; }
// Exact integers: division, comparison and interval rules hold without overflow concerns.
inline bool is_index_scalar(DType dt) { return dt.is_index() && dt.lanes == 1; }
inline bool is_bool_scalar(DType dt) { return dt.is_bool() && dt.lanes == 1; }
inline bool is_iconst(const UOp* u) { return u->op == Op::Const && !u->dtype.is_float(); }
inline bool is_iconst(const UOp* u, i128 v) { return is_iconst(u) && u->const_int() == v; }
inline i128 vmin(const UOp* u) { return u->minmax().lo; }
inline i128 vmax(const UOp* u) { return u->minmax().hi; }

// An integer (or bool) constant of dtype dt holding v (wrapped for fixed-width types); nullptr
// when an index value does not fit in 64 bits.
const UOp* mk_int(Graph& g, DType dt, i128 v);

// ---- linear forms ------------------------------------------------------------------------

struct Term {
  const UOp* atom;
  i128 coef;
};
// sum(coef * atom) + k. Atoms are neither Add, Sub, Neg nor a Mul by a constant; each atom
// appears once and no coefficient is zero.
// Term order inside a Lin is arbitrary (build_lin sorts); removal may reorder terms.
struct Lin {
  std::vector<Term> terms;
  i128 k = 0;

  void add(const UOp* atom, i128 coef);  // merges with an existing term of the same atom
  void add(const Lin& o, i128 scale = 1);
  i128 coef_of(const UOp* atom) const;
  void remove(const UOp* atom);
  bool is_const() const { return terms.empty(); }
  // Interval of the linear form from the atoms' intervals (atoms taken as independent).
  i128 lo() const;
  i128 hi() const;

 private:
  long find(const UOp* atom) const;
  void erase_at(size_t i);
  // atom -> position in terms, kept once the form is large (long sums stay linear-time)
  std::unordered_map<const UOp*, size_t> index_;
};

// Splits the terms of `l` (not its constant) by a factor f > 1: the terms whose coefficient f
// divides go to `big` with that coefficient / f, the others to `rest` unchanged; so
// l = f * big + rest + l.k.
void split_by_factor(const Lin& l, i128 f, Lin* big, Lin* rest);

// The linear form of an integer scalar node (looks through Add, Sub, Neg and Mul by a constant).
Lin lin_of(const UOp* u);
// Builds the canonical node of a linear form: terms in atom order, left-nested, constant last.
// nullptr when a constant cannot be represented.
const UOp* build_lin(Graph& g, DType dt, const Lin& l);

// Total order used for canonical operand order: variables, then ranges, then other nodes, then
// constants; within a group by creation order (stable within a graph).
bool atom_less(const UOp* a, const UOp* b);

// Product view of a node: constant coefficient and the non-constant factors (sorted).
struct Prod {
  i128 coef = 1;
  std::vector<const UOp*> factors;
};
Prod prod_of(const UOp* u);
const UOp* build_prod(Graph& g, DType dt, const Prod& p);

// Number of distinct nodes under the roots (leaves included).
size_t count_nodes(std::initializer_list<const UOp*> roots);
// Does `root` contain a node of one of the ops (searching the whole subgraph)?
bool contains_op(const UOp* root, std::initializer_list<Op> ops);

// ---- entry points of the rule groups (each returns nullptr when nothing applies) ----------

const UOp* fold_floor_divmod(Graph& g, const UOp* root);
const UOp* fold_c_divmod(Graph& g, const UOp* root);
const UOp* fold_sum(Graph& g, const UOp* root);
const UOp* fold_product(Graph& g, const UOp* root);
const UOp* fold_lt(Graph& g, const UOp* root);
const UOp* fold_ne(Graph& g, const UOp* root);
const UOp* fold_const(Graph& g, const UOp* root);

// A comparison clause `lo <= X <= hi` read from a bool node (X < c, c < X, their negations,
// X != c negated...). Returns false when the node is not such a clause.
struct Clause {
  const UOp* x;
  i128 lo, hi;
};
bool read_clause(const UOp* u, Clause* out);

}  // namespace sn::sym
