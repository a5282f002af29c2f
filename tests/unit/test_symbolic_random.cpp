// Randomized soundness test of the simplifier: seeded random integer expressions over 2-3 bounded
// variables are simplified and compared with the input at every point of the variables' box.
// The derived bounds of the result must contain every value it takes, and simplifying the result
// again must not change it. Also checks
// simplify_given_valid on random gates (compared only where the gate holds).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>

#include "core/rewrite/pattern.h"
#include "core/symbolic/symbolic.h"
#include "tests/util/sexpr.h"

namespace sn {
namespace {

using testutil::Env;
using testutil::VarBounds;

class ExprGen {
 public:
  ExprGen(uint64_t seed, std::vector<std::string> vars) : rng_(seed), vars_(std::move(vars)) {}

  int pick(int n) { return int(rng_() % uint64_t(n)); }
  int64_t range(int64_t lo, int64_t hi) { return lo + int64_t(rng_() % uint64_t(hi - lo + 1)); }

  std::string num(int64_t lo, int64_t hi) { return std::to_string(range(lo, hi)); }
  std::string divisor() {
    // mostly small positive divisors; sometimes negative ones (floor semantics either way)
    int64_t d = range(2, 12);
    return std::to_string(pick(8) == 0 ? -d : d);
  }

  std::string leaf() {
    if (pick(4) == 0) return num(-10, 10);
    return vars_[size_t(pick(int(vars_.size())))];
  }

  std::string cond(int depth) {
    switch (pick(5)) {
      case 0:
        return "(cmpne " + expr(depth - 1) + " " + num(-3, 8) + ")";
      case 1:
        return "(cmplt " + num(-5, 10) + " " + expr(depth - 1) + ")";
      case 2:
        return "(and " + cond(depth - 1) + " " + cond(depth - 1) + ")";
      case 3:
        return "(cmpne (cmplt " + expr(depth - 1) + " " + num(-5, 12) + ") true)";
      default:
        return "(cmplt " + expr(depth - 1) + " " + expr(depth - 1) + ")";
    }
  }

  std::string expr(int depth) {
    if (depth <= 0) return leaf();
    switch (pick(18)) {
      case 0:
      case 1:
        return "(add " + expr(depth - 1) + " " + expr(depth - 1) + ")";
      case 2:
        return "(add " + expr(depth - 1) + " " + num(-20, 20) + ")";
      case 3:
      case 4:
        return "(mul " + expr(depth - 1) + " " + num(-6, 9) + ")";
      case 5:
        return "(mul " + expr(depth - 1) + " " + leaf() + ")";
      case 6:
      case 7:
        return "(floordiv " + expr(depth - 1) + " " + divisor() + ")";
      case 8:
      case 9:
        return "(floormod " + expr(depth - 1) + " " + divisor() + ")";
      case 10:
        return "(max " + expr(depth - 1) + " " + expr(depth - 1) + ")";
      case 11:
        return "(where " + cond(depth - 1) + " " + expr(depth - 1) + " " + expr(depth - 1) + ")";
      case 12:
        return "(cdiv " + expr(depth - 1) + " " + divisor() + ")";
      case 13:
        return "(cmod " + expr(depth - 1) + " " + divisor() + ")";
      case 14: {  // a symbolic divisor (points where it is 0 are skipped)
        const char* ops[] = {"floordiv", "floormod", "cdiv", "cmod"};
        std::string d = pick(2) ? leaf() : "(mul " + leaf() + " " + num(1, 4) + ")";
        return std::string("(") + ops[pick(4)] + " " + expr(depth - 1) + " " + d + ")";
      }
      case 15:
        return "(and " + expr(depth - 1) + " " + num(0, 15) + ")";
      case 16:
        return std::string(pick(2) ? "(shr " : "(shl ") + expr(depth - 1) + " " + num(0, 3) + ")";
      default:
        return "(xor " + expr(depth - 1) + " " + num(0, 7) + ")";
    }
  }

 private:
  std::mt19937_64 rng_;
  std::vector<std::string> vars_;
};

std::vector<Env> all_points(const std::map<std::string, VarBounds>& vars) {
  std::vector<Env> out{Env{}};
  for (auto& [name, b] : vars) {
    std::vector<Env> next;
    for (const Env& e : out) {
      for (int64_t v = b.lo; v <= b.hi; ++v) {
        Env n = e;
        n[name] = v;
        next.push_back(std::move(n));
      }
    }
    out = std::move(next);
  }
  return out;
}

std::string show(i128 v) { return std::to_string(int64_t(v)); }

// Returns "" when `result` matches `ast` wherever `gate` (optional) holds, else a description.
std::string check(const testutil::SExpr& ast, const UOp* result, const std::map<std::string, VarBounds>& vars,
                  const testutil::SExpr* gate) {
  testutil::UOpEvaluator eval(result);
  const MinMax& mm = result->minmax();
  for (const Env& env : all_points(vars)) {
    if (gate) {
      auto open = testutil::eval_sexpr(*gate, env);
      if (!open || open->v == 0) continue;
    }
    auto want = testutil::eval_sexpr(ast, env);
    if (!want) continue;
    auto got = eval(env);
    std::ostringstream os;
    for (auto& [n, v] : env) os << " " << n << "=" << show(v);
    if (!got || *got != want->v)
      return "at" + os.str() + ": want " + show(want->v) + ", got " + (got ? show(*got) : "undefined");
    if (!gate && (*got < mm.lo || *got > mm.hi))
      return "at" + os.str() + ": value " + show(*got) + " outside the derived bounds [" + show(mm.lo) + ", " +
             show(mm.hi) + "]";
  }
  return "";
}

std::map<std::string, VarBounds> random_vars(ExprGen& gen, std::vector<std::string>& names) {
  std::map<std::string, VarBounds> vars;
  names.clear();
  const int n = 2 + gen.pick(2);
  for (int i = 0; i < n; ++i) {
    std::string name(1, char('a' + i));
    int64_t lo = gen.pick(3) == 0 ? gen.range(-8, 0) : gen.range(0, 4);
    int64_t hi = lo + gen.range(0, n == 2 ? 14 : 7);
    vars[name] = {lo, hi};
    names.push_back(name);
  }
  return vars;
}

// SN_SYMBOLIC_RANDOM_SCALE=k runs k times as many expressions (for local stress runs).
int scale() {
  const char* s = std::getenv("SN_SYMBOLIC_RANDOM_SCALE");
  return s ? std::max(1, std::atoi(s)) : 1;
}

TEST(SymbolicRandom, MatchesInputEverywhere) {
  ExprGen meta(20240601, {"a"});
  int failures = 0;
  std::ostringstream report;
  for (int i = 0; i < 2500 * scale(); ++i) {
    std::vector<std::string> names;
    auto vars = random_vars(meta, names);
    ExprGen gen(uint64_t(1000 + i), names);
    const std::string text = gen.expr(1 + gen.pick(4));
    Graph g;
    testutil::SExpr ast = testutil::parse_sexpr(text);
    std::string problem;
    const UOp* r = nullptr;
    try {
      r = simplify(g, testutil::build_sexpr(g, ast, vars));
      problem = check(ast, r, vars, nullptr);
      // the result is a fixed point of the rules
      if (problem.empty() && simplify(g, r) != r) problem = "not a fixed point: " + to_sexpr(simplify(g, r), false);
    } catch (const std::exception& e) {
      problem = std::string("exception: ") + e.what();
    }
    if (!problem.empty() && ++failures <= 10) {
      report << "  #" << i << " " << text << " -> " << (r ? to_sexpr(r, false) : "<none>") << ": " << problem << "\n";
    }
  }
  EXPECT_EQ(failures, 0) << report.str();
}

TEST(SymbolicRandom, GivenValidMatchesWhereTheGateHolds) {
  ExprGen meta(777, {"a"});
  int failures = 0;
  std::ostringstream report;
  for (int i = 0; i < 600 * scale(); ++i) {
    std::vector<std::string> names;
    auto vars = random_vars(meta, names);
    ExprGen gen(uint64_t(50000 + i), names);
    // a gate of one or two bounds on the variables (sometimes on a whole expression)
    std::string gate_text = "(cmplt " + names[0] + " " + gen.num(-2, 8) + ")";
    if (gen.pick(2)) gate_text = "(and " + gate_text + " (cmplt " + gen.num(-3, 4) + " " + names[1] + "))";
    if (gen.pick(4) == 0) gate_text = "(and " + gate_text + " (cmpne (cmplt " + gen.expr(1) + " 3) true))";
    const std::string text = gen.expr(1 + gen.pick(4));
    Graph g;
    testutil::SExpr ast = testutil::parse_sexpr(text), gate = testutil::parse_sexpr(gate_text);
    std::string problem;
    const UOp* r = nullptr;
    try {
      r = simplify_given_valid(g, testutil::build_sexpr(g, gate, vars), testutil::build_sexpr(g, ast, vars));
      problem = check(ast, r, vars, &gate);
    } catch (const std::exception& e) {
      problem = std::string("exception: ") + e.what();
    }
    if (!problem.empty() && ++failures <= 10) {
      report << "  #" << i << " gate " << gate_text << ": " << text << " -> " << (r ? to_sexpr(r, false) : "<none>")
             << ": " << problem << "\n";
    }
  }
  EXPECT_EQ(failures, 0) << report.str();
}

// simplify takes an index sum of loop variables times constants to its fixed point without the
// rules (affine_fixed_point in symbolic.cpp). It must land on the node the rules reach: the same
// canonical order, the same folding of one-valued variables and bounds that are not constants, on
// its own and inside a list of expressions.
TEST(SymbolicRandom, AffineSumsReachTheRulesFixedPoint) {
  std::mt19937_64 rng(4242);
  auto pick = [&](int n) { return int(rng() % uint64_t(n)); };
  int failures = 0;
  std::ostringstream report;
  for (int i = 0; i < 400 * scale(); ++i) {
    Graph g;
    using Srcs = std::vector<const UOp*>;
    auto alu = [&](Op op, Srcs src) { return g.alu(op, src); };
    auto range = [&](const UOp* bound, int64_t id, AxisType t) {
      return g.make(Op::Range, dtypes::index, Srcs{bound}, RangeArg{id, t});
    };
    const Srcs atoms = {g.var("a", 0, 7),
                        g.var("b", -3, 5),
                        g.var("one", 2, 2),  // a variable of one value
                        range(g.cint(56), 0, AxisType::Loop),
                        range(g.cint(3), 1, AxisType::Reduce),
                        range(g.cint(1), 2, AxisType::Upcast),  // one value
                        range(alu(Op::Add, {alu(Op::Add, {g.var("n", 1, 4), g.cint(1)}), g.cint(1)}), 3,
                              AxisType::Loop),  // a bound the rules fold
                        g.make(Op::Special, dtypes::index, Srcs{g.cint(2)}, std::string("core_id"))};
    std::function<const UOp*(int)> gen = [&](int depth) -> const UOp* {
      if (depth == 0) return pick(5) == 0 ? g.cint(int64_t(pick(41)) - 20) : atoms[size_t(pick(int(atoms.size())))];
      switch (pick(6)) {
        case 0:
        case 1:
          return alu(Op::Add, {gen(depth - 1), gen(depth - 1)});
        case 2:
          return alu(Op::Sub, {gen(depth - 1), gen(depth - 1)});
        case 3:
          return alu(Op::Neg, {gen(depth - 1)});
        case 4:
          return alu(Op::Mul, {gen(depth - 1), g.cint(int64_t(pick(13)) - 4)});
        default:
          return alu(Op::Mul, {g.cint(int64_t(pick(9)) - 2), gen(depth - 1)});
      }
    };
    const UOp* e = gen(1 + pick(5));
    const UOp* e2 = gen(1 + pick(4));
    // the rules alone (graph_rewrite does not use simplify's memo)
    const UOp* by_rules = graph_rewrite(g, e, symbolic_rules());
    const UOp* by_rules2 = graph_rewrite(g, e2, symbolic_rules());
    const UOp* got = simplify(g, e);
    // in a list, beside copies of it that differ in their constant (they share the node of their terms)
    const int64_t shift = int64_t(pick(9)) - 4;
    const UOp* shifted = alu(Op::Add, {e, g.cint(shift)});
    const UOp* list = simplify(g, g.make(Op::Sink, dtypes::void_, Srcs{e2, alu(Op::Mod, {e, g.cint(7)}), e, shifted}));
    std::string problem;
    if (got != by_rules)
      problem = "alone: " + to_sexpr(got, false) + ", the rules: " + to_sexpr(by_rules, false);
    else if (list->src(0) != by_rules2)
      problem = "first in a list: " + to_sexpr(list->src(0), false) + ", the rules: " + to_sexpr(by_rules2, false);
    else if (list->src(2) != by_rules)
      problem = "in a list: " + to_sexpr(list->src(2), false);
    else if (const UOp* want = graph_rewrite(g, shifted, symbolic_rules()); list->src(3) != want)
      problem = "shifted by " + std::to_string(shift) + " in a list: " + to_sexpr(list->src(3), false) +
                ", the rules: " + to_sexpr(want, false);
    // Under a gate of bounds on the sum's variables (some leaving one value), simplify_given_valid
    // (which takes such a sum without the rules too) against the rules over stand-in variables of
    // the narrowed bounds, substituted back.
    if (problem.empty()) {
      const UOp* gate = nullptr;
      std::vector<std::pair<const UOp*, const UOp*>> to, back;
      for (int c = 0, n = 1 + pick(2); c < n; c++) {
        const UOp* x = atoms[size_t(pick(int(atoms.size())))];
        const MinMax& m = x->minmax();
        if (m.lo == m.hi) continue;
        int64_t lo = int64_t(m.lo), hi = int64_t(m.hi), cut = lo + int64_t(pick(int(hi - lo) + 1));
        const bool below = pick(2) == 0;  // x < cut + 1, else cut - 1 < x
        if (std::any_of(to.begin(), to.end(),
                        [&](auto& p) { return p.first == graph_rewrite(g, x, symbolic_rules()); }))
          continue;
        const UOp* clause = below ? alu(Op::CmpLt, {x, g.cint(cut + 1)}) : alu(Op::CmpLt, {g.cint(cut - 1), x});
        gate = gate ? alu(Op::And, {gate, clause}) : clause;
        if (below ? cut == hi : cut == lo) continue;  // no narrower than the variable
        const UOp* stand_in = g.var("stand_in" + std::to_string(c), below ? lo : cut, below ? cut : hi);
        const UOp* xs = graph_rewrite(g, x, symbolic_rules());  // as the simplified sum holds it
        to.push_back({xs, stand_in});
        back.push_back({stand_in, xs});
      }
      if (gate) {
        const UOp* want = by_rules;
        if (!to.empty()) {
          want = graph_rewrite(g, substitute(g, by_rules, to), symbolic_rules());
          want = graph_rewrite(g, substitute(g, want, back), symbolic_rules());
        }
        const UOp* under = simplify_given_valid(g, gate, e);
        const UOp* under_list = simplify_given_valid(g, gate, g.make(Op::Sink, dtypes::void_, Srcs{e2, e}));
        if (under != want)
          problem = "under " + to_sexpr(gate, false) + ": " + to_sexpr(under, false) +
                    ", the rules: " + to_sexpr(want, false);
        else if (under_list->src(1) != want)
          problem = "in a list under " + to_sexpr(gate, false) + ": " + to_sexpr(under_list->src(1), false);
      }
    }
    if (!problem.empty() && ++failures <= 10)
      report << "  #" << i << " " << to_sexpr(e, false) << ": " << problem << "\n";
  }
  EXPECT_EQ(failures, 0) << report.str();
}

// A sum that shares its parts (x1 = v + v, x2 = x1 + x1, ...: 2^40 leaves as a tree) is simplified
// part by part, never walked as a tree (the affine path's walk is bounded): alone, in a list and
// under a gate, it comes out as v * 2^40.
TEST(SymbolicRandom, SharedSumsAreNotWalkedAsTrees) {
  Graph g;
  const UOp* v = g.var("v", 0, 9);
  const UOp* x = v;
  for (int i = 0; i < 40; i++) x = g.alu(Op::Add, std::vector<const UOp*>{x, x});
  const UOp* want = g.alu(Op::Mul, std::vector<const UOp*>{v, g.cint(int64_t(1) << 40)});
  EXPECT_EQ(to_sexpr(simplify(g, x), false), to_sexpr(want, false));
  const UOp* list = simplify(g, g.make(Op::Sink, dtypes::void_, std::vector<const UOp*>{x, v}));
  EXPECT_EQ(list->src(0), simplify(g, x));
  const UOp* gate = g.alu(Op::CmpLt, std::vector<const UOp*>{v, g.cint(5)});
  EXPECT_EQ(to_sexpr(simplify_given_valid(g, gate, x), false), to_sexpr(want, false));
}

}  // namespace
}  // namespace sn
