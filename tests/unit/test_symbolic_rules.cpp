// Unit tests of individual simplifier rules: each builds an input, simplifies it and compares
// the result with the node it must become (nodes are interned, so pointer equality is
// structural equality).
#include <gtest/gtest.h>

#include <cmath>

#include "core/symbolic/symbolic.h"

namespace sn {
namespace {

class SymbolicRules : public ::testing::Test {
 protected:
  Graph g;
  const UOp* x = g.var("x", 0, 15);
  const UOp* y = g.var("y", 0, 8);
  const UOp* c(int64_t v, DType dt = dtypes::index) { return g.cint(v, dt); }
  const UOp* add(const UOp* a, const UOp* b) { return g.alu(Op::Add, a, b); }
  const UOp* mul(const UOp* a, const UOp* b) { return g.alu(Op::Mul, a, b); }
  const UOp* idiv(const UOp* a, const UOp* b) { return g.alu(Op::Idiv, a, b); }
  const UOp* mod(const UOp* a, const UOp* b) { return g.alu(Op::Mod, a, b); }
  const UOp* lt(const UOp* a, const UOp* b) { return g.alu(Op::CmpLt, a, b); }
  const UOp* ne(const UOp* a, const UOp* b) { return g.alu(Op::CmpNe, a, b); }
  const UOp* where(const UOp* p, const UOp* a, const UOp* b) { return g.alu(Op::Where, p, a, b); }
  const UOp* s(const UOp* u) { return simplify(g, u); }
  std::string str(const UOp* u) { return to_sexpr(u, false); }
};

#define EXPECT_NODE(got, want) EXPECT_EQ(got, want) << str(got) << " != " << str(want)

TEST_F(SymbolicRules, ConstantFoldingFollowsTheDtype) {
  EXPECT_NODE(s(add(c(100, dtypes::int8), c(100, dtypes::int8))), c(-56, dtypes::int8));
  EXPECT_NODE(s(add(c(200, dtypes::uint8), c(100, dtypes::uint8))), c(44, dtypes::uint8));
  EXPECT_NODE(s(mul(c(65536, dtypes::int32), c(65536, dtypes::int32))), c(0, dtypes::int32));
  // index math is exact
  EXPECT_NODE(s(mul(c(65536), c(65536))), c(int64_t(1) << 32));
  EXPECT_NODE(s(idiv(c(-7), c(2))), c(-4));
  EXPECT_NODE(s(mod(c(-7), c(2))), c(1));
  EXPECT_NODE(s(g.alu(Op::CDiv, c(-7), c(2))), c(-3));
  EXPECT_NODE(s(g.alu(Op::CMod, c(-7), c(2))), c(-1));
  EXPECT_NODE(s(g.alu(Op::Shl, c(3), c(4))), c(48));
  EXPECT_NODE(s(g.alu(Op::Shr, c(-9), c(1))), c(-5));
  EXPECT_NODE(s(g.alu(Op::Xor, c(6), c(3))), c(5));
  EXPECT_NODE(s(lt(c(3), c(4))), g.cbool(true));
  // division by zero is left to the device
  const UOp* div0 = idiv(c(1), c(0));
  EXPECT_NODE(s(div0), div0);
  // floats round to the dtype
  const UOp* f = s(add(g.cfloat(0.1, dtypes::float32), g.cfloat(0.2, dtypes::float32)));
  ASSERT_TRUE(f->is_const());
  EXPECT_EQ(f->const_float(), double(0.1f + 0.2f));
  EXPECT_NODE(s(g.cast(g.cfloat(-3.7, dtypes::float32), dtypes::int32)), c(-3, dtypes::int32));
  EXPECT_NODE(s(g.cast(c(300), dtypes::uint8)), c(44, dtypes::uint8));
  EXPECT_NODE(s(g.cast(c(2), dtypes::bool_)), g.cbool(true));
  EXPECT_NODE(s(g.alu(Op::Sqrt, g.cfloat(4.0, dtypes::float64))), g.cfloat(2.0, dtypes::float64));
}

// A graph keeps what simplify made of each node: the second call builds nothing and returns the
// same node; another graph simplifies its own copy into its own nodes, structurally the same.
TEST_F(SymbolicRules, AGraphKeepsWhatItSimplified) {
  const UOp* e = add(idiv(add(mul(x, c(4)), mod(y, c(4))), c(4)), mul(c(2), add(x, c(3))));
  const UOp* first = s(e);
  EXPECT_NODE(first, add(mul(x, c(3)), c(6)));
  const size_t built = g.size();
  EXPECT_EQ(s(e), first);
  EXPECT_EQ(g.size(), built);
  EXPECT_EQ(g.simplified(e), first);
  EXPECT_EQ(g.simplified(c(12345)), nullptr);  // never simplified
  Graph g2;
  const UOp *x2 = g2.var("x", 0, 15), *y2 = g2.var("y", 0, 8);
  auto k = [&](int64_t v) { return g2.cint(v); };
  const UOp* e2 =
      g2.alu(Op::Add, g2.alu(Op::Idiv, g2.alu(Op::Add, g2.alu(Op::Mul, x2, k(4)), g2.alu(Op::Mod, y2, k(4))), k(4)),
             g2.alu(Op::Mul, k(2), g2.alu(Op::Add, x2, k(3))));
  const UOp* second = simplify(g2, e2);
  EXPECT_EQ(second->graph(), &g2);
  EXPECT_EQ(second->content_hash(), first->content_hash());
  // A node of g given with g2 is an error (graph_rewrite's), never what g2 keeps under its id.
  ASSERT_EQ(e->id, e2->id);  // built in the same order in both graphs
  EXPECT_THROW(simplify(g2, e), Error);
}

TEST_F(SymbolicRules, Identities) {
  EXPECT_NODE(s(add(x, c(0))), x);
  EXPECT_NODE(s(mul(x, c(1))), x);
  EXPECT_NODE(s(mul(c(0), x)), c(0));
  EXPECT_NODE(s(idiv(x, c(1))), x);
  EXPECT_NODE(s(mod(x, c(1))), c(0));
  EXPECT_NODE(s(g.alu(Op::Xor, x, x)), c(0));
  EXPECT_NODE(s(g.alu(Op::And, x, x)), x);
  EXPECT_NODE(s(g.alu(Op::Or, x, x)), x);
  EXPECT_NODE(s(g.alu(Op::Max, x, x)), x);
  EXPECT_NODE(s(lt(x, x)), g.cbool(false));
  EXPECT_NODE(s(ne(x, x)), g.cbool(false));
  EXPECT_NODE(s(g.alu(Op::Trunc, x)), x);
  // floats: x + -0.0 and x * 1 fold; x + +0.0 does not (it is +0.0 where x is -0.0), nor x * 0 (NaN
  // and inf stay visible)
  const UOp* fx = g.cast(x, dtypes::float32);
  EXPECT_NODE(s(add(fx, g.cfloat(-0.0, dtypes::float32))), fx);
  EXPECT_NODE(s(add(g.cfloat(-0.0, dtypes::float32), fx)), fx);
  const UOp* plus_zero = add(fx, g.cfloat(0, dtypes::float32));
  EXPECT_NODE(s(plus_zero), plus_zero);
  EXPECT_NODE(s(mul(fx, g.cfloat(1, dtypes::float32))), fx);
  const UOp* f0 = mul(fx, g.cfloat(0, dtypes::float32));
  EXPECT_NODE(s(f0), f0);
}

TEST_F(SymbolicRules, CanonicalSumsAndLikeTerms) {
  // 3 + y*2 + x + x  ->  x*2 + y*2 + 3  (variables in creation order, constant last)
  const UOp* want = add(add(mul(x, c(2)), mul(y, c(2))), c(3));
  EXPECT_NODE(s(add(add(add(c(3), mul(y, c(2))), x), x)), want);
  EXPECT_NODE(s(add(mul(x, c(2)), mul(x, c(3)))), mul(x, c(5)));
  EXPECT_NODE(s(add(add(x, c(5)), c(-2))), add(x, c(3)));
  EXPECT_NODE(s(mul(mul(x, c(3)), c(4))), mul(x, c(12)));
  EXPECT_NODE(s(mul(add(x, c(1)), c(-2))), add(mul(x, c(-2)), c(-2)));
  EXPECT_NODE(s(add(x, mul(x, c(-1)))), c(0));
  // products of variables: factors sorted, the constant last
  EXPECT_NODE(s(mul(mul(c(3), y), x)), mul(mul(x, y), c(3)));
  // int32 sums wrap like the hardware does
  const UOp* xi = g.cast(x, dtypes::int32);
  EXPECT_NODE(s(add(add(xi, c(2147483647, dtypes::int32)), c(1, dtypes::int32))), add(xi, c(INT32_MIN, dtypes::int32)));
}

TEST_F(SymbolicRules, IntervalsDecide) {
  EXPECT_NODE(s(g.var("one", 1, 1)), c(1));
  EXPECT_NODE(s(lt(x, c(16))), g.cbool(true));
  EXPECT_NODE(s(lt(x, c(0))), g.cbool(false));
  EXPECT_NODE(s(g.alu(Op::Max, x, c(20))), c(20));
  EXPECT_NODE(s(g.alu(Op::Max, x, c(-1))), x);
  EXPECT_NODE(s(g.alu(Op::Max, g.alu(Op::Max, x, c(3)), c(5))), g.alu(Op::Max, x, c(5)));
}

TEST_F(SymbolicRules, Comparisons) {
  EXPECT_NODE(s(lt(add(x, c(3)), c(10))), lt(x, c(7)));
  EXPECT_NODE(s(lt(mul(x, c(4)), c(13))), lt(x, c(4)));
  const UOp* z = g.var("z", -10, 10);
  EXPECT_NODE(s(lt(mul(z, c(-4)), c(13))), lt(mul(z, c(-1)), c(4)));
  EXPECT_NODE(s(lt(idiv(x, c(4)), c(3))), lt(x, c(12)));
  EXPECT_NODE(s(lt(c(2), add(z, c(5)))), lt(c(-3), z));
  // 4*x + y < 16 with 0 <= y < 4 is x < 4
  const UOp* y3 = g.var("y3", 0, 3);
  EXPECT_NODE(s(lt(add(mul(x, c(4)), y3), c(16))), lt(x, c(4)));
  EXPECT_NODE(s(ne(add(mul(x, c(2)), c(1)), c(4))), g.cbool(true));
  EXPECT_NODE(s(ne(add(x, c(1)), c(4))), ne(x, c(3)));
}

TEST_F(SymbolicRules, BoolAlgebra) {
  const UOp *p = lt(x, c(3)), *q = lt(x, c(5));
  const UOp* not_p = ne(p, g.cbool(true));
  EXPECT_NODE(s(g.alu(Op::And, p, q)), p);
  EXPECT_NODE(s(g.alu(Op::Or, p, q)), q);
  EXPECT_NODE(s(g.alu(Op::And, p, not_p)), g.cbool(false));
  EXPECT_NODE(s(g.alu(Op::Or, p, not_p)), g.cbool(true));
  EXPECT_NODE(s(g.alu(Op::And, p, lt(c(7), x))), g.cbool(false));
  EXPECT_NODE(s(ne(not_p, g.cbool(true))), p);
  EXPECT_NODE(s(g.alu(Op::And, p, g.cbool(true))), p);
  EXPECT_NODE(s(mul(p, q)), p);  // bool mul is and
}

TEST_F(SymbolicRules, Where) {
  const UOp* p = lt(x, c(3));
  EXPECT_NODE(s(where(p, y, y)), y);
  EXPECT_NODE(s(where(g.cbool(true), x, y)), x);
  EXPECT_NODE(s(where(p, g.cbool(true), g.cbool(false))), p);
  EXPECT_NODE(s(where(p, g.cbool(false), g.cbool(true))), ne(p, g.cbool(true)));
  EXPECT_NODE(s(where(ne(p, g.cbool(true)), x, y)), where(p, y, x));
  EXPECT_NODE(s(where(lt(x, c(0)), c(0), x)), x);
  const UOp* z = g.var("z", -5, 5);
  EXPECT_NODE(s(where(lt(z, c(0)), c(0), z)), g.alu(Op::Max, z, c(0)));
  // inside a branch the condition is known
  EXPECT_NODE(s(where(p, where(p, x, y), y)), where(p, x, y));
  EXPECT_NODE(s(where(p, where(lt(x, c(7)), x, y), y)), where(p, x, y));
}

TEST_F(SymbolicRules, FloorDivisionAndModulo) {
  EXPECT_NODE(s(idiv(idiv(x, c(2)), c(3))), idiv(x, c(6)));
  EXPECT_NODE(s(idiv(x, c(16))), c(0));
  EXPECT_NODE(s(mod(x, c(16))), x);
  EXPECT_NODE(s(add(mod(x, c(4)), mul(idiv(x, c(4)), c(4)))), x);
  EXPECT_NODE(s(idiv(add(mul(x, c(4)), c(2)), c(6))), idiv(add(mul(x, c(2)), c(1)), c(3)));
  EXPECT_NODE(s(idiv(add(x, c(8)), c(4))), add(idiv(x, c(4)), c(2)));
  EXPECT_NODE(s(mod(add(mul(x, c(12)), y), c(4))), mod(y, c(4)));
  EXPECT_NODE(s(mod(mod(x, c(12)), c(4))), mod(x, c(4)));
  EXPECT_NODE(s(idiv(mod(x, c(12)), c(4))), mod(idiv(x, c(4)), c(3)));
  // a symbolic divisor: the multiple of it comes out
  const UOp* d = g.var("d", 1, 4);
  EXPECT_NODE(s(idiv(add(mul(d, x), y), d)), add(x, idiv(y, d)));
  // floor semantics for negative numbers
  const UOp* z = g.var("z", -8, -1);
  EXPECT_NODE(s(idiv(z, c(8))), c(-1));
  EXPECT_NODE(s(mod(z, c(8))), add(z, c(8)));
}

TEST_F(SymbolicRules, CDivisionAndModulo) {
  // non-negative numerators fold like floor division and stay C divisions
  EXPECT_NODE(s(g.alu(Op::CDiv, add(mul(x, c(4)), c(1)), c(4))), x);
  EXPECT_NODE(s(g.alu(Op::CMod, add(mul(x, c(4)), c(1)), c(4))), c(1));
  EXPECT_NODE(s(g.alu(Op::CDiv, add(x, c(8)), c(4))), add(g.alu(Op::CDiv, x, c(4)), c(2)));
  EXPECT_NODE(s(g.alu(Op::CDiv, x, c(1))), x);
  // C modulo ignores the divisor's sign
  EXPECT_NODE(s(g.alu(Op::CMod, add(x, y), c(-7))), g.alu(Op::CMod, add(x, y), c(7)));
  // truncation toward zero: -7..7 / 8 is 0 everywhere, but floor would say -1 for negatives
  const UOp* z = g.var("z", -7, 7);
  EXPECT_NODE(s(g.alu(Op::CDiv, z, c(8))), c(0));
  const UOp* zc = g.alu(Op::CDiv, z, c(4));
  EXPECT_NODE(s(zc), zc);
}

TEST_F(SymbolicRules, GivenValid) {
  const UOp* gate = lt(x, c(4));
  EXPECT_NODE(simplify_given_valid(g, gate, idiv(x, c(4))), c(0));
  EXPECT_NODE(simplify_given_valid(g, gate, mod(x, c(4))), x);
  EXPECT_NODE(simplify_given_valid(g, gate, idiv(add(x, mul(y, c(4))), c(4))), y);
  // two clauses, one on each variable
  const UOp* both = g.alu(Op::And, gate, lt(c(3), y));
  EXPECT_NODE(simplify_given_valid(g, both, add(idiv(x, c(4)), idiv(y, c(4)))), idiv(y, c(4)));
  EXPECT_NODE(simplify_given_valid(g, both, lt(y, c(4))), g.cbool(false));
  // a negated clause: x >= 8
  EXPECT_NODE(simplify_given_valid(g, ne(lt(x, c(8)), g.cbool(true)), idiv(x, c(8))), c(1));
  // without a usable clause the expression is just simplified
  EXPECT_NODE(simplify_given_valid(g, g.cbool(true), add(x, c(0))), x);
  // a gate that is never open leaves any value valid: the plain simplification is returned
  EXPECT_NODE(simplify_given_valid(g, g.alu(Op::And, gate, lt(c(9), x)), add(x, c(0))), x);
}

TEST_F(SymbolicRules, LongSumsStayFast) {
  // a 1000-term sum built in creation order simplifies without quadratic node growth
  const UOp* acc = c(0);
  std::vector<const UOp*> vs;
  for (int i = 0; i < 1000; ++i) vs.push_back(g.var("v" + std::to_string(i), 0, 3));
  for (int i = 0; i < 1000; ++i) acc = add(acc, mul(vs[size_t(i)], c(i % 5 + 1)));
  size_t before = g.size();
  const UOp* r = s(acc);
  // 1000 variables, 800 products by 2..5 (four shared constants), 999 additions
  EXPECT_EQ(toposort(r).size(), size_t(1000 + 800 + 4 + 999));
  EXPECT_LT(g.size() - before, size_t(10000));
}

}  // namespace
}  // namespace sn
