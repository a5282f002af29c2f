// graph_rewrite throughput on a large generated graph of index arithmetic.
//
// The graph is random index math over four bounded variables: sums, scaling by small
// constants, floor division and modulo, max, plus planted identities (x+0, x*1, x*0+y) and
// constant subexpressions. Operands come both from recent nodes (depth, up to 8 levels) and
// from the whole pool of shallow nodes (shared subterms). Each measurement builds a fresh Graph (so no run reuses
// another's interned results) and times only the rewrite. Output, one line per case:
//   name  nodes  seconds  nodes_per_second      (median of 5 runs; nodes = nodes under the root)
// Cases: the bare traversal (no rules), identities + constant folding in both orders,
// substitute of one leaf (rebuilds most of the graph), and the full symbolic rule set.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "core/ir/graph.h"
#include "core/rewrite/pattern.h"
#include "core/symbolic/symbolic.h"

namespace {

using sn::Graph;
using sn::Match;
using sn::Op;
using sn::Pat;
using sn::PatternMatcher;
using sn::UOp;

constexpr int kRuns = 5;
size_t g_target_nodes = 250000;  // argv[1] overrides; the symbolic case uses a fifth of it
const char* g_filter = "";       // argv[2]: run only the cases whose name contains it

struct Generator {
  // Index expressions of real kernels are shallow; deep random sums would measure the
  // simplifier's handling of huge linear forms rather than the rewrite engine.
  static constexpr int kMaxDepth = 8;

  explicit Generator(Graph& graph) : g(graph) {}
  Graph& g;
  std::mt19937_64 rng{0x5eed};
  std::vector<const UOp*> open;  // nodes shallow enough to build on
  std::vector<int> depth;        // by node id; -1: not computed

  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

  int depth_of(const UOp* u) {
    if (u->id >= depth.size()) depth.resize(u->id + 1024, -1);
    if (depth[u->id] < 0) {
      int d = 0;
      for (const UOp* s : u->src()) d = std::max(d, depth_of(s) + 1);  // bounded by kMaxDepth + 3
      depth[u->id] = d;
    }
    return depth[u->id];
  }

  // Recent nodes half the time (builds depth), any open node otherwise (builds sharing).
  const UOp* pick() {
    if (uniform(0, 1) == 0) {
      size_t back = static_cast<size_t>(std::min<int64_t>(uniform(0, 7), static_cast<int64_t>(open.size()) - 1));
      return open[open.size() - 1 - back];
    }
    return open[static_cast<size_t>(uniform(0, static_cast<int64_t>(open.size()) - 1))];
  }

  const UOp* step() {
    const UOp* a = pick();
    int64_t r = uniform(0, 99);
    if (r < 30) return g.alu(Op::Add, a, pick());
    if (r < 45) return g.alu(Op::Mul, a, g.cint(uniform(2, 9)));
    if (r < 52) return g.alu(Op::Add, a, g.cint(0));
    if (r < 58) return g.alu(Op::Mul, g.cint(1), a);
    if (r < 62) return g.alu(Op::Add, g.alu(Op::Mul, a, g.cint(0)), pick());
    if (r < 70) {
      const UOp* c = g.alu(Op::Add, g.cint(uniform(-50, 50)), g.cint(uniform(0, 50)));
      return g.alu(Op::Add, a, g.alu(Op::Mul, c, g.cint(uniform(1, 4))));
    }
    if (r < 80) return g.alu(Op::Idiv, a, g.cint(uniform(2, 16)));
    if (r < 92) return g.alu(Op::Mod, a, g.cint(uniform(2, 1024)));
    return g.alu(Op::Max, a, pick());
  }

  const UOp* build(size_t target) {
    const char* names[] = {"gidx", "lidx", "ridx", "n"};
    std::vector<const UOp*> all;
    for (const char* n : names) all.push_back(g.var(n, 0, 1023));
    open = all;
    while (g.size() < target) {
      const UOp* u = step();
      all.push_back(u);
      if (depth_of(u) < kMaxDepth) open.push_back(u);
    }
    // The root keeps every node that nothing else uses, so the whole graph is under it.
    std::vector<char> used(g.size() + 1, 0);
    for (const UOp* u : all)
      for (const UOp* s : u->src()) used[s->id] = 1;
    std::vector<const UOp*> outs;
    for (const UOp* u : all)
      if (!used[u->id]) {
        outs.push_back(u);
        used[u->id] = 1;  // a node built twice is interned once; keep one Sink source
      }
    return g.sink(outs);
  }
};

PatternMatcher identity_rules() {
  auto same = [](const char* name) { return [name](const Match& m) { return m[name]; }; };
  return PatternMatcher({
      {Pat::op(Op::Add, {Pat::var("x"), Pat::cval(0)}).comm(), same("x"), "x+0"},
      {Pat::op(Op::Mul, {Pat::var("x"), Pat::cval(1)}).comm(), same("x"), "x*1"},
      {Pat::op(Op::Mul, {Pat::var("x"), Pat::cval(0, "z")}).comm(), same("z"), "x*0"},
      {Pat::ops({Op::Add, Op::Mul}, {Pat::cvar("a"), Pat::cvar("b")}),
       [](const Match& m) -> const UOp* {
         int64_t a = m["a"]->as<int64_t>(), b = m["b"]->as<int64_t>();
         return m.g.cint(m.root->op == Op::Add ? a + b : a * b, m.root->dtype);
       },
       "fold"},
  });
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Times fn(graph, root) over kRuns fresh graphs; prints one result line.
void run_case(const char* name, const std::function<const UOp*(Graph&, const UOp*)>& fn, size_t target_nodes) {
  if (std::strstr(name, g_filter) == nullptr) return;
  std::vector<double> secs;
  size_t nodes = 0;
  for (int i = 0; i < kRuns; ++i) {
    Graph g;
    Generator gen(g);
    const UOp* root = gen.build(target_nodes);
    nodes = sn::toposort(root).size();
    auto t0 = std::chrono::steady_clock::now();
    const UOp* out = nullptr;
    try {
      out = fn(g, root);
    } catch (const sn::Error& e) {  // report and go on with the other cases
      std::printf("%-28s error: %s\n", name, e.what());
      return;
    }
    auto t1 = std::chrono::steady_clock::now();
    if (out == nullptr) std::fprintf(stderr, "%s: no result\n", name);
    secs.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  double s = median(secs);
  std::printf("%-28s %9zu %10.4f %14.0f\n", name, nodes, s, static_cast<double>(nodes) / s);
  std::fflush(stdout);
}

}  // namespace

// Usage: bench_rewrite [nodes [name-filter]]
int main(int argc, char** argv) {
  if (argc > 1) g_target_nodes = std::strtoull(argv[1], nullptr, 10);
  if (argc > 2) g_filter = argv[2];
  std::printf("%-28s %9s %10s %14s\n", "name", "nodes", "seconds", "nodes_per_second");
  PatternMatcher ident = identity_rules();
  PatternMatcher none;
  const size_t n = g_target_nodes;
  run_case(
      "rewrite_no_rules", [&](Graph& g, const UOp* r) { return sn::graph_rewrite(g, r, none); }, n);
  run_case(
      "rewrite_identities", [&](Graph& g, const UOp* r) { return sn::graph_rewrite(g, r, ident); }, n);
  run_case(
      "rewrite_identities_parent",
      [&](Graph& g, const UOp* r) { return sn::graph_rewrite(g, r, ident, nullptr, sn::RewriteOrder::ParentFirst); },
      n);
  run_case(
      "substitute_leaf",
      [&](Graph& g, const UOp* r) {
        const UOp* from = g.var("n", 0, 1023);
        return sn::substitute(g, r, {{from, g.var("m", 0, 1023)}});
      },
      n);
  // The full simplifier does far more per node (interval reasoning, linear forms, div/mod
  // folding); a smaller graph keeps the whole program near 20 s.
  run_case(
      "rewrite_symbolic", [&](Graph& g, const UOp* r) { return sn::graph_rewrite(g, r, sn::symbolic_rules()); }, n / 5);
  return 0;
}
