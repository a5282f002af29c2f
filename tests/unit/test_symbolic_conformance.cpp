// Runs every case of ../shared/conformance/symbolic.jsonl (tinygrad's simplifier tests) through
// sn::simplify and checks soundness (equal values over the variables' box), bounds (our min/max
// contain every value and are no looser than the reference's) and tracks quality (node count
// against tinygrad's simplified form).
#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <sstream>

#include "core/symbolic/symbolic.h"
#include "tests/util/json.h"
#include "tests/util/sexpr.h"

namespace sn {
namespace {

using testutil::Env;
using testutil::Json;

std::string i128_str(i128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  unsigned __int128 u = neg ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
  std::string s;
  while (u > 0) {
    s.insert(s.begin(), char('0' + int(u % 10)));
    u /= 10;
  }
  return neg ? "-" + s : s;
}

// Every point of the box when it has at most `limit` points; otherwise its corners plus random
// points (seeded, so runs repeat).
std::vector<Env> box_points(const std::map<std::string, testutil::VarBounds>& vars, size_t limit) {
  std::vector<std::string> names;
  std::vector<testutil::VarBounds> b;
  double total = 1;
  for (auto& [n, vb] : vars) {
    names.push_back(n);
    b.push_back(vb);
    total *= double(vb.hi - vb.lo + 1);
  }
  std::vector<Env> out;
  if (total <= double(limit)) {
    std::vector<int64_t> cur;
    for (auto& vb : b) cur.push_back(vb.lo);
    for (;;) {
      Env e;
      for (size_t i = 0; i < names.size(); ++i) e[names[i]] = cur[i];
      out.push_back(e);
      size_t i = 0;
      for (; i < cur.size(); ++i) {
        if (cur[i] < b[i].hi) {
          ++cur[i];
          break;
        }
        cur[i] = b[i].lo;
      }
      if (i == cur.size()) break;
    }
    return out;
  }
  const size_t corners = size_t(1) << std::min<size_t>(names.size(), 10);
  for (size_t m = 0; m < corners; ++m) {
    Env e;
    for (size_t i = 0; i < names.size(); ++i) e[names[i]] = (m >> i) & 1 ? b[i].hi : b[i].lo;
    out.push_back(e);
  }
  std::mt19937_64 rng(12345);
  while (out.size() < limit) {
    Env e;
    for (size_t i = 0; i < names.size(); ++i) {
      uint64_t span = uint64_t(b[i].hi - b[i].lo) + 1;
      e[names[i]] = b[i].lo + int64_t(span == 0 ? rng() : rng() % span);
    }
    out.push_back(e);
  }
  return out;
}

TEST(SymbolicConformance, AllCases) {
  const std::string path = std::string(SN_SHARED_DIR) + "/conformance/symbolic.jsonl";
  auto cases = testutil::read_jsonl(path);
  ASSERT_EQ(cases.size(), 360u) << path;
  size_t quality = 0, passed = 0;
  std::ostringstream misses, failures;
  for (auto& [line, c] : cases) {
    const std::string name = c["name"].as_string() + " (line " + std::to_string(line) + ")";
    std::map<std::string, testutil::VarBounds> vars;
    for (auto& [n, v] : c["vars"].as_object()) vars[n] = {v[0].as_int(), v[1].as_int()};
    const std::string expr = c["expr"].as_string();
    std::string problem;
    Graph g;
    const UOp* result = nullptr;
    try {
      testutil::SExpr ast = testutil::parse_sexpr(expr);
      const UOp* input = testutil::build_sexpr(g, ast, vars);
      result = simplify(g, input);
      testutil::UOpEvaluator eval(result);
      const MinMax& mm = result->minmax();
      i128 seen_lo = 0, seen_hi = 0;
      bool any = false;
      for (const Env& env : box_points(vars, 20000)) {
        auto want = testutil::eval_sexpr(ast, env);
        if (!want) continue;  // the input itself is undefined here
        auto got = eval(env);
        if (!got || *got != want->v) {
          std::ostringstream os;
          os << "unsound at";
          for (auto& [n, v] : env) os << " " << n << "=" << i128_str(v);
          os << ": input gives " << i128_str(want->v) << ", result gives " << (got ? i128_str(*got) : "undefined");
          problem = os.str();
          break;
        }
        if (!any || *got < seen_lo) seen_lo = *got;
        if (!any || *got > seen_hi) seen_hi = *got;
        any = true;
      }
      if (problem.empty() && any && (mm.lo > seen_lo || mm.hi < seen_hi))
        problem = "bounds [" + i128_str(mm.lo) + ", " + i128_str(mm.hi) + "] miss value range [" + i128_str(seen_lo) +
                  ", " + i128_str(seen_hi) + "]";
      if (problem.empty() && (mm.lo < i128(c["min"].as_int()) || mm.hi > i128(c["max"].as_int())))
        problem = "bounds [" + i128_str(mm.lo) + ", " + i128_str(mm.hi) + "] looser than the reference [" +
                  std::to_string(c["min"].as_int()) + ", " + std::to_string(c["max"].as_int()) + "]";
    } catch (const std::exception& e) {
      problem = std::string("exception: ") + e.what();
    }
    const std::string shown = result ? to_sexpr(result, false) : "<none>";
    if (!problem.empty()) {
      failures << "  " << name << ": " << expr << " -> " << shown << ": " << problem << "\n";
      continue;
    }
    ++passed;
    size_t nodes = toposort(result).size();
    if (nodes <= size_t(c["reference_nodes"].as_int())) {
      ++quality;
    } else {
      misses << "  " << name << ": " << expr << " -> " << shown << " (" << nodes << " nodes; reference "
             << c["reference"].as_string() << " has " << c["reference_nodes"].as_int() << ")\n";
    }
  }
  std::cout << "symbolic conformance: " << quality << "/" << cases.size() << " reach the reference node count\n"
            << misses.str();
  EXPECT_EQ(passed, cases.size()) << "cases failing soundness or bounds:\n" << failures.str();
}

}  // namespace
}  // namespace sn
