// Patterns, the matcher and graph_rewrite / substitute.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/rewrite/pattern.h"

namespace sn {
namespace {

const UOp* add(Graph& g, const UOp* a, const UOp* b) { return g.alu(Op::Add, a, b); }
const UOp* mul(Graph& g, const UOp* a, const UOp* b) { return g.alu(Op::Mul, a, b); }

bool matches(const Pat& p, const UOp* u) {
  Captures cap;
  return pat_match(p, u, cap);
}

// x + 0 -> x and x * 1 -> x (both orders), folding of two integer consts.
PatternMatcher identity_rules() {
  return PatternMatcher({
      {Pat::op(Op::Add, {Pat::var("x"), Pat::cval(0)}).comm(), [](const Match& m) { return m["x"]; }, "add0"},
      {Pat::op(Op::Mul, {Pat::var("x"), Pat::cval(1)}).comm(), [](const Match& m) { return m["x"]; }, "mul1"},
      {Pat::ops({Op::Add, Op::Mul}, {Pat::cvar("a"), Pat::cvar("b")}),
       [](const Match& m) -> const UOp* {
         int64_t a = m["a"]->as<int64_t>(), b = m["b"]->as<int64_t>();
         return m.g.cint(m.root->op == Op::Add ? a + b : a * b, m.root->dtype);
       },
       "fold"},
  });
}

// ---- matching ------------------------------------------------------------------------------

TEST(PatternMatch, OpAndOpSet) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  const UOp* s = add(g, x, g.cint(1));
  const UOp* p = mul(g, x, g.cint(2));
  const UOp* m = g.alu(Op::Max, x, g.cint(3));
  EXPECT_TRUE(matches(Pat::op(Op::Add), s));
  EXPECT_FALSE(matches(Pat::op(Op::Add), p));
  Pat addmul = Pat::ops({Op::Add, Op::Mul});
  EXPECT_TRUE(matches(addmul, s));
  EXPECT_TRUE(matches(addmul, p));
  EXPECT_FALSE(matches(addmul, m));
  EXPECT_TRUE(matches(Pat::any(), m));
  EXPECT_TRUE(addmul.op_set().size() == 2 && !addmul.any_op());
  EXPECT_TRUE(Pat::any().any_op());
}

TEST(PatternMatch, DtypeSetAndPredicate) {
  Graph g;
  const UOp* i = g.cint(3);
  const UOp* f = g.cfloat(3.0);
  const UOp* h = g.cfloat(3.0, dtypes::float16);
  Pat ints = Pat::cvar().dtype({dtypes::index, dtypes::int32});
  EXPECT_TRUE(matches(ints, i));
  EXPECT_TRUE(matches(ints, g.cint(3, dtypes::int32)));
  EXPECT_FALSE(matches(ints, f));
  Pat floats = Pat::any().dtype_if([](DType d) { return d.is_float(); });
  EXPECT_TRUE(matches(floats, f));
  EXPECT_TRUE(matches(floats, h));
  EXPECT_FALSE(matches(floats, i));
  EXPECT_FALSE(matches(Pat::any().dtype({dtypes::float32}), h));  // exact dtype, not "any float"
}

TEST(PatternMatch, ConstantsByValue) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  EXPECT_TRUE(matches(Pat::cvar(), g.cint(7)));
  EXPECT_FALSE(matches(Pat::cvar(), x));
  EXPECT_TRUE(matches(Pat::cval(0), g.cint(0)));
  EXPECT_TRUE(matches(Pat::cval(0), g.cfloat(0.0)));
  EXPECT_TRUE(matches(Pat::cval(2), g.cint(2, dtypes::int8)));
  EXPECT_TRUE(matches(Pat::cval(2), g.cfloat(2.0, dtypes::float64)));
  EXPECT_FALSE(matches(Pat::cval(2), g.cint(3)));
  EXPECT_FALSE(matches(Pat::cval(1.5), g.cint(1)));
  EXPECT_TRUE(matches(Pat::cval(1.5), g.cfloat(1.5)));
  EXPECT_TRUE(matches(Pat::cval(-4), g.cint(-4, dtypes::int64)));
  EXPECT_TRUE(matches(Pat::cval(1), g.cbool(true)));
  EXPECT_FALSE(matches(Pat::cval(0), x));
  Captures cap;
  ASSERT_TRUE(pat_match(Pat::cval(5, "c"), g.cint(5), cap));
  EXPECT_EQ(cap["c"], g.cint(5));
}

TEST(PatternMatch, UInt64ConstantsCompareByValue) {
  Graph g;
  // 2^63 is stored as the bit pattern of INT64_MIN in a uint64 Const.
  const UOp* big = g.make(Op::Const, dtypes::uint64, {}, Arg(int64_t(INT64_MIN)));
  EXPECT_TRUE(matches(Pat::cval(9223372036854775808.0), big));
  EXPECT_FALSE(matches(Pat::cval(-9223372036854775808.0), big));
  const UOp* neg = g.cint(INT64_MIN, dtypes::int64);
  EXPECT_TRUE(matches(Pat::cval(-9223372036854775808.0), neg));
  EXPECT_FALSE(matches(Pat::cval(9223372036854775808.0), neg));
}

TEST(PatternMatch, ArgPredicateAndEquality) {
  Graph g;
  const UOp* i = g.var("i", 0, 10);
  const UOp* j = g.var("j", 0, 10);
  Pat named_i = Pat::op(Op::DefineVar).arg_if([](const Arg& a) { return std::get<VarArg>(a).name == "i"; });
  EXPECT_TRUE(matches(named_i, i));
  EXPECT_FALSE(matches(named_i, j));
  EXPECT_TRUE(matches(Pat::op(Op::DefineVar).arg_eq(VarArg{"j", 0, 10}), j));
  EXPECT_FALSE(matches(Pat::op(Op::DefineVar).arg_eq(VarArg{"j", 0, 11}), j));
  EXPECT_TRUE(matches(Pat::cvar().arg_eq(int64_t(4)), g.cint(4)));
  EXPECT_FALSE(matches(Pat::cvar().arg_eq(int64_t(4)), g.cint(5)));
}

TEST(PatternMatch, CapturesBindNodes) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  const UOp* c = g.cint(3);
  const UOp* e = mul(g, add(g, x, c), x);
  Captures cap;
  Pat p = Pat::op(Op::Mul, {Pat::op(Op::Add, {Pat::var("a"), Pat::cvar("c")}, "sum"), Pat::var("b")});
  ASSERT_TRUE(pat_match(p, e, cap));
  EXPECT_EQ(cap["a"], x);
  EXPECT_EQ(cap["c"], c);
  EXPECT_EQ(cap["b"], x);
  EXPECT_EQ(cap["sum"], e->src(0));
  EXPECT_EQ(cap.size(), 4u);
  EXPECT_EQ(cap.get("missing"), nullptr);
  EXPECT_THROW((void)cap["missing"], Error);
  // Names compare by content, not by pointer.
  std::string key = "a";
  EXPECT_EQ(cap.get(key.c_str()), x);
}

TEST(PatternMatch, RepeatedNameMustBindSameNode) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  const UOp* y = g.var("y", 0, 10);
  Pat twice = Pat::op(Op::Add, {Pat::var("x"), Pat::var("x")});
  EXPECT_TRUE(matches(twice, add(g, x, x)));
  EXPECT_FALSE(matches(twice, add(g, x, y)));
  // Also across levels: (x*2) + x
  Pat nested = Pat::op(Op::Add, {Pat::op(Op::Mul, {Pat::var("x"), Pat::cvar()}), Pat::var("x")});
  EXPECT_TRUE(matches(nested, add(g, mul(g, x, g.cint(2)), x)));
  EXPECT_FALSE(matches(nested, add(g, mul(g, x, g.cint(2)), y)));
  // A capture of the root name and a child: the root is bound too.
  Captures cap;
  EXPECT_TRUE(cap.bind("n", x));
  EXPECT_TRUE(cap.bind("n", x));
  EXPECT_FALSE(cap.bind("n", y));
  EXPECT_EQ(cap.size(), 1u);
}

TEST(PatternMatch, FailedMatchLeavesNoBindings) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  const UOp* e = add(g, x, g.cint(1));
  Captures cap;
  ASSERT_TRUE(cap.bind("keep", x));
  EXPECT_FALSE(pat_match(Pat::op(Op::Add, {Pat::var("a"), Pat::cval(2)}, "root"), e, cap));
  EXPECT_EQ(cap.size(), 1u);
  EXPECT_EQ(cap.get("a"), nullptr);
  EXPECT_EQ(cap.get("root"), nullptr);
  size_t m = cap.mark();
  ASSERT_TRUE(cap.bind("tmp", e));
  cap.reset(m);
  EXPECT_EQ(cap.get("tmp"), nullptr);
}

// Captures holds 16 names (its slots are not zeroed: only bound ones are read). A 17th is a clear
// error, names bound after a reset are found, and a name is never read from a slot past the bound.
TEST(PatternMatch, CapturesHoldSixteenNames) {
  Graph g;
  std::vector<const UOp*> v;
  static const char* names[] = {"n0", "n1",  "n2",  "n3",  "n4",  "n5",  "n6",  "n7", "n8",
                                "n9", "n10", "n11", "n12", "n13", "n14", "n15", "n16"};
  for (int i = 0; i < 17; i++) v.push_back(g.cint(i));
  Captures cap;
  for (int i = 0; i < 16; i++) ASSERT_TRUE(cap.bind(names[i], v[size_t(i)]));
  for (int i = 0; i < 16; i++) EXPECT_EQ(cap.get(names[i]), v[size_t(i)]);
  try {
    cap.bind(names[16], v[16]);
    ADD_FAILURE() << "a 17th name was bound";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::Internal);
    EXPECT_NE(e.message().find("binds more than 16 names (at 'n16')"), std::string::npos) << e.message();
  }
  cap.reset(2);
  EXPECT_EQ(cap.get("n2"), nullptr);  // (its slot still holds the old binding)
  ASSERT_TRUE(cap.bind("n2", v[5]));
  EXPECT_EQ(cap.get("n2"), v[5]);
  EXPECT_EQ(cap.get("n3"), nullptr);
}

TEST(PatternMatch, CommutativeBothOrdersWithRollback) {
  Graph g;
  const UOp* y = g.var("y", 0, 10);
  const UOp* five = g.cint(5);
  Pat p = Pat::op(Op::Add, {Pat::var("a"), Pat::cval(5, "c")}).comm();
  for (const UOp* e : {add(g, y, five), add(g, five, y)}) {
    Captures cap;
    // In (5 + y) the first order binds a=5 and then fails on y; the swapped order must not
    // see that stale binding.
    ASSERT_TRUE(pat_match(p, e, cap));
    EXPECT_EQ(cap["a"], y);
    EXPECT_EQ(cap["c"], five);
    EXPECT_EQ(cap.size(), 2u);
  }
  Pat ordered = Pat::op(Op::Add, {Pat::var("a"), Pat::cval(5)});
  EXPECT_TRUE(matches(ordered, add(g, y, five)));
  EXPECT_FALSE(matches(ordered, add(g, five, y)));
  EXPECT_FALSE(matches(p, add(g, y, g.cint(6))));
}

TEST(PatternMatch, CommutativeThreeSources) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  const UOp* c = g.cint(1);
  const UOp* b = g.cbool(true);
  const UOp* s = g.sink(std::vector<const UOp*>{b, x, c});
  Pat p = Pat::op(Op::Sink, {Pat::cvar("c"), Pat::op(Op::DefineVar, {}, "v"), Pat::cvar().dtype({dtypes::bool_})});
  EXPECT_FALSE(matches(p, s));
  Captures cap;
  ASSERT_TRUE(pat_match(p.comm(), s, cap));
  EXPECT_EQ(cap["c"], c);
  EXPECT_EQ(cap["v"], x);
}

TEST(PatternMatch, ArityExactUnlessAnyLen) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  const UOp* y = g.var("y", 0, 10);
  const UOp* one = g.sink(std::vector<const UOp*>{x});
  const UOp* two = g.sink(std::vector<const UOp*>{x, y});
  Pat first_x = Pat::op(Op::Sink, {Pat::op(Op::DefineVar)});
  EXPECT_TRUE(matches(first_x, one));
  EXPECT_FALSE(matches(first_x, two));
  EXPECT_TRUE(matches(first_x.any_len(), two));
  EXPECT_FALSE(matches(first_x.any_len(), g.sink(std::vector<const UOp*>{})));
  EXPECT_TRUE(matches(Pat::op(Op::Sink), two));  // no source list: sources not checked
}

TEST(PatternMatch, RepeatMatchesEverySource) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  Pat all_consts = Pat::op(Op::Sink).repeat(Pat::cvar());
  EXPECT_TRUE(matches(all_consts, g.sink(std::vector<const UOp*>{g.cint(1), g.cint(2), g.cint(3)})));
  EXPECT_FALSE(matches(all_consts, g.sink(std::vector<const UOp*>{g.cint(1), x, g.cint(3)})));
  EXPECT_TRUE(matches(all_consts, g.sink(std::vector<const UOp*>{})));
  // A repeated name inside repeat: all sources are the same node.
  Pat same = Pat::op(Op::Sink).repeat(Pat::var("s"));
  EXPECT_TRUE(matches(same, g.sink(std::vector<const UOp*>{x, x, x})));
  EXPECT_FALSE(matches(same, g.sink(std::vector<const UOp*>{x, x, g.cint(1)})));
}

TEST(PatternMatch, TooManyCapturesIsAnError) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  static const char* names[] = {"n0", "n1",  "n2",  "n3",  "n4",  "n5",  "n6",  "n7", "n8",
                                "n9", "n10", "n11", "n12", "n13", "n14", "n15", "n16"};
  Captures cap;
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(cap.bind(names[i], x));
  EXPECT_THROW(cap.bind(names[16], x), Error);
}

// ---- the matcher ---------------------------------------------------------------------------

TEST(RewriteMatcher, FirstRuleThatRewritesWins) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  const UOp* e = add(g, x, g.cint(1));
  const UOp* a = g.cint(100);
  const UOp* b = g.cint(200);
  std::vector<std::string> tried;
  PatternMatcher pm({
      {Pat::op(Op::Mul),
       [&](const Match&) -> const UOp* {
         tried.push_back("mul");
         return a;
       },
       "mul"},
      {Pat::op(Op::Add),
       [&](const Match&) -> const UOp* {
         tried.push_back("null");
         return nullptr;
       },
       "null"},
      {Pat::any(),
       [&](const Match& m) {
         tried.push_back("self");
         return m.root;
       },
       "self"},
      {Pat::ops({Op::Add, Op::Sub}),
       [&](const Match&) {
         tried.push_back("a");
         return a;
       },
       "a"},
      {Pat::op(Op::Add),
       [&](const Match&) {
         tried.push_back("b");
         return b;
       },
       "b"},
  });
  EXPECT_EQ(pm.size(), 5u);
  EXPECT_EQ(pm.rewrite(g, e), a);
  EXPECT_EQ(tried, (std::vector<std::string>{"null", "self", "a"}));
  // Nothing matches a DefineVar except the wildcard, which returns the node itself.
  EXPECT_EQ(pm.rewrite(g, x), nullptr);
  EXPECT_EQ(PatternMatcher().rewrite(g, e), nullptr);
}

TEST(RewriteMatcher, ConcatenationKeepsOrderAndPassesContext) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  const UOp* e = add(g, x, g.cint(1));
  PatternMatcher first({{Pat::op(Op::Add), [](const Match& m) { return m.g.cint(1); }, "one"}});
  PatternMatcher second(
      {{Pat::op(Op::Add), [](const Match& m) { return m.g.cint(*static_cast<int64_t*>(m.ctx)); }, "ctx"}});
  int64_t v = 42;
  EXPECT_EQ((first + second).rewrite(g, e, &v), g.cint(1));
  EXPECT_EQ((second + first).rewrite(g, e, &v), g.cint(42));
  EXPECT_EQ((first + second).size(), 2u);
}

// ---- graph_rewrite -------------------------------------------------------------------------

TEST(RewriteGraph, FixedPoint) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  const UOp* zero = g.cint(0);
  const UOp* e = add(g, add(g, add(g, x, zero), zero), zero);
  EXPECT_EQ(graph_rewrite(g, e, identity_rules()), x);
  // (0 + x*1) * (2 + -1): both operand orders of the commutative rules, and a root rule that
  // applies only once its children have been simplified.
  const UOp* f = mul(g, add(g, zero, mul(g, x, g.cint(1))), add(g, g.cint(2), g.cint(-1)));
  EXPECT_EQ(graph_rewrite(g, f, identity_rules()), x);
  EXPECT_EQ(graph_rewrite(g, f, identity_rules(), nullptr, RewriteOrder::ParentFirst), x);
}

TEST(RewriteGraph, ReplacementIsRewrittenWithItsNewChildren) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  // x*2 -> x + (x + 0); the new inner node must be simplified by add0 too.
  PatternMatcher pm =
      PatternMatcher({{Pat::op(Op::Mul, {Pat::var("x"), Pat::cval(2)}),
                       [](const Match& m) { return add(m.g, m["x"], add(m.g, m["x"], m.g.cint(0))); }, "dbl"}}) +
      identity_rules();
  EXPECT_EQ(graph_rewrite(g, mul(g, x, g.cint(2)), pm), add(g, x, x));
}

TEST(RewriteGraph, SharedSubtermRewrittenOnce) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  const UOp* y = g.var("y", 0, 10);
  const UOp* s = mul(g, x, g.cint(1));  // shared by three parents
  const UOp* e = g.sink(std::vector<const UOp*>{add(g, s, y), mul(g, s, y), g.alu(Op::Max, s, s)});
  int calls = 0;
  PatternMatcher pm({{Pat::op(Op::Mul, {Pat::var("x"), Pat::cval(1)}),
                      [&](const Match& m) {
                        ++calls;
                        return m["x"];
                      },
                      "mul1"}});
  RewriteStats st;
  const UOp* r = graph_rewrite(g, e, pm, nullptr, RewriteOrder::ChildrenFirst, &st);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(r, g.sink(std::vector<const UOp*>{add(g, x, y), mul(g, x, y), g.alu(Op::Max, x, x)}));
  EXPECT_EQ(st.rewrites, 1u);
  // Each of the 8 nodes is looked at once (the parents and the sink as rebuilt over x).
  EXPECT_EQ(st.visited, 8u);
  calls = 0;
  RewriteStats st2;
  EXPECT_EQ(graph_rewrite(g, e, pm, nullptr, RewriteOrder::ParentFirst, &st2), r);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(st2.rewrites, 1u);
}

TEST(RewriteGraph, NoRuleReturnsTheSameRoot) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  const UOp* e = mul(g, add(g, x, g.cint(3)), x);
  size_t before = g.size();
  EXPECT_EQ(graph_rewrite(g, e, identity_rules()), e);
  EXPECT_EQ(graph_rewrite(g, e, identity_rules(), nullptr, RewriteOrder::ParentFirst), e);
  EXPECT_EQ(g.size(), before);
}

TEST(RewriteGraph, ChildrenFirstVisitsChildrenBeforeParents) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  const UOp* inner = add(g, x, g.cint(1));
  const UOp* outer = mul(g, inner, g.cint(2));
  std::vector<const UOp*> seen;
  PatternMatcher pm({{Pat::any(),
                      [&](const Match& m) -> const UOp* {
                        seen.push_back(m.root);
                        return nullptr;
                      },
                      "log"}});
  graph_rewrite(g, outer, pm);
  ASSERT_EQ(seen.size(), 5u);
  auto pos = [&](const UOp* u) { return std::find(seen.begin(), seen.end(), u) - seen.begin(); };
  EXPECT_LT(pos(x), pos(inner));
  EXPECT_LT(pos(inner), pos(outer));
  EXPECT_EQ(seen.back(), outer);
  seen.clear();
  graph_rewrite(g, outer, pm, nullptr, RewriteOrder::ParentFirst);
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen.front(), outer);
  EXPECT_LT(pos(inner), pos(x));
}

TEST(RewriteGraph, ParentFirstSeesUnrewrittenChildren) {
  Graph g;
  const UOp* y = g.var("y", 0, 10);
  const UOp* two = g.cint(2);
  const UOp* e = add(g, mul(g, y, g.cint(1)), two);
  // (a*b) + c -> max(a, c): only applies while the child is still a Mul.
  PatternMatcher pm = PatternMatcher({{Pat::op(Op::Add, {Pat::op(Op::Mul, {Pat::var("a"), Pat::any()}), Pat::var("c")}),
                                       [](const Match& m) { return m.g.alu(Op::Max, m["a"], m["c"]); }, "addmul"}}) +
                      identity_rules();
  EXPECT_EQ(graph_rewrite(g, e, pm), add(g, y, two));
  EXPECT_EQ(graph_rewrite(g, e, pm, nullptr, RewriteOrder::ParentFirst), g.alu(Op::Max, y, two));
}

TEST(RewriteGraph, ParentFirstRewritesRebuiltNodesAgain) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  // (x*1) + 0: the root matches nothing until its child has become x... then x+0 -> x.
  const UOp* e = add(g, mul(g, x, g.cint(1)), g.cint(0));
  PatternMatcher pm({
      {Pat::op(Op::Add, {Pat::op(Op::DefineVar, {}, "x"), Pat::cval(0)}), [](const Match& m) { return m["x"]; }, "v0"},
      {Pat::op(Op::Mul, {Pat::var("x"), Pat::cval(1)}), [](const Match& m) { return m["x"]; }, "mul1"},
  });
  EXPECT_EQ(graph_rewrite(g, e, pm, nullptr, RewriteOrder::ParentFirst), x);
}

TEST(RewriteGraph, RuleCycleIsAnError) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  const UOp* y = g.var("y", 0, 10);
  const UOp* e = mul(g, add(g, x, y), g.cint(3));
  PatternMatcher swap({{Pat::op(Op::Add, {Pat::var("a"), Pat::var("b")}),
                        [](const Match& m) { return add(m.g, m["b"], m["a"]); }, "swap"}});
  for (RewriteOrder order : {RewriteOrder::ChildrenFirst, RewriteOrder::ParentFirst}) {
    try {
      graph_rewrite(g, e, swap, nullptr, order);
      ADD_FAILURE() << "a rule cycle must raise";
    } catch (const Error& err) {
      EXPECT_EQ(err.code(), Code::Internal);
      EXPECT_NE(err.message().find("rule cycle"), std::string::npos) << err.message();
    }
  }
  // A rule whose result contains the node it rewrites never converges either.
  PatternMatcher wrap(
      {{Pat::op(Op::DefineVar, {}, "v"), [](const Match& m) { return add(m.g, m["v"], m.g.cint(0)); }, "wrap"}});
  EXPECT_THROW(graph_rewrite(g, x, wrap), Error);
  EXPECT_THROW(graph_rewrite(g, x, wrap, nullptr, RewriteOrder::ParentFirst), Error);
}

TEST(RewriteGraph, NonRepeatingRuleChainIsAnError) {
  Graph g;
  // c -> c+1 as a new constant every time: never repeats a node, never stops.
  PatternMatcher inc({{Pat::cvar("c").dtype({dtypes::int32}),
                       [](const Match& m) { return m.g.cint(m["c"]->as<int64_t>() + 1, dtypes::int32); }, "inc"}});
  EXPECT_THROW(graph_rewrite(g, g.cint(0, dtypes::int32), inc), Error);
  EXPECT_THROW(graph_rewrite(g, g.cint(0, dtypes::int32), inc, nullptr, RewriteOrder::ParentFirst), Error);
}

TEST(RewriteGraph, DeepChainFolds) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  const UOp* one = g.cint(1);
  const UOp* e = x;
  constexpr int kDepth = 20000;
  for (int i = 0; i < kDepth; ++i) e = add(g, e, one);
  // (a + c1) + c2 -> a + (c1 + c2), and constant folding: the chain collapses to x + 20000.
  PatternMatcher pm =
      PatternMatcher({{Pat::op(Op::Add, {Pat::op(Op::Add, {Pat::var("a"), Pat::cvar("c1")}), Pat::cvar("c2")}),
                       [](const Match& m) { return add(m.g, m["a"], add(m.g, m["c1"], m["c2"])); }, "reassoc"}}) +
      identity_rules();
  EXPECT_EQ(graph_rewrite(g, e, pm), add(g, x, g.cint(kDepth)));
  EXPECT_EQ(graph_rewrite(g, e, pm, nullptr, RewriteOrder::ParentFirst), add(g, x, g.cint(kDepth)));
}

TEST(RewriteGraph, MillionNodeChainDoesNotRecurse) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  const UOp* y = g.var("y", 0, 10);
  const UOp* one = g.cint(1);
  const UOp* e = x;
  constexpr int kDepth = 1000000;
  for (int i = 0; i < kDepth; ++i) e = add(g, e, one);
  // No rule applies anywhere: the same chain comes back, in both orders; substitute of a node
  // that is not in the graph walks it all and changes nothing.
  EXPECT_EQ(graph_rewrite(g, e, identity_rules()), e);
  EXPECT_EQ(graph_rewrite(g, e, identity_rules(), nullptr, RewriteOrder::ParentFirst), e);
  EXPECT_EQ(substitute(g, e, {{y, x}}), e);
  // Renaming the leaf rebuilds every node of the chain.
  PatternMatcher rename({{Pat::op(Op::DefineVar).arg_eq(x->arg), [y](const Match&) { return y; }, "rename"}});
  const UOp* r = graph_rewrite(g, e, rename);
  const UOp* walk = r;
  for (int i = 0; i < kDepth; ++i) {
    ASSERT_EQ(walk->op, Op::Add);
    ASSERT_EQ(walk->src(1), one);
    walk = walk->src(0);
  }
  EXPECT_EQ(walk, y);
}

// ---- substitute ----------------------------------------------------------------------------

TEST(RewriteSubstitute, ReplacesAndRebuildsParents) {
  Graph g;
  const UOp* x = g.var("x", 0, 10);
  const UOp* y = g.var("y", 0, 10);
  const UOp* e = mul(g, add(g, x, g.cint(1)), x);
  EXPECT_EQ(substitute(g, e, {{x, y}}), mul(g, add(g, y, g.cint(1)), y));
  EXPECT_EQ(substitute(g, e, {}), e);
  // A swap is one pass: the replacements are not substituted again.
  EXPECT_EQ(substitute(g, add(g, x, y), {{x, y}, {y, x}}), add(g, y, x));
  // A replacement that contains the replaced node is used as given.
  const UOp* x1 = add(g, x, g.cint(1));
  EXPECT_EQ(substitute(g, mul(g, x, x), {{x, x1}}), mul(g, x1, x1));
  // Replacing an inner node by a node: the subtree below it is not visited.
  EXPECT_EQ(substitute(g, e, {{e->src(0), g.cint(7)}}), mul(g, g.cint(7), x));
  EXPECT_EQ(substitute(g, e, {{e, x}}), x);
}

}  // namespace
}  // namespace sn
