// Kernel opts as replayable data through the pipeline (CompileOptions::kernel_opts, Launch::ast_hash)
// and BEAM search (core/opt/search.h): correct results, exact replay of what a kernel got, a
// search that does not grow the user's graph, clear errors for opts that do not fit. The disk
// side of BEAM (results kept, damaged entries replaced) is in test_disk_cache.cpp.
#include <gtest/gtest.h>

#include <limits>

#if SN_BACKEND_CPU
#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/opt/opt.h"
#include "core/opt/search.h"
#include "core/tensor/compose.h"
#include "tests/unit/test_pipeline_util.h"

namespace sn {
namespace {

using testrt::OracleFixture;

// The text of stage `stage` for every kernel of a program compiled with keep_stages.
std::vector<std::string> stage_texts(const Program& p, const std::string& stage) {
  std::vector<std::string> out;
  if (!p.stages) return out;
  for (const StageDump& d : *p.stages)
    if (d.stage == stage) out.push_back(d.text);
  return out;
}

// A runtime of its own, so that no kernel, program or BEAM result of another test answers for it.
std::unique_ptr<Runtime> fresh_runtime() {
  auto rt = std::make_unique<Runtime>(RuntimeOptions{.debug = 0, .threads = 0});
  rt->devices().set_disk_cache(false);
  return rt;
}

class SearchTest : public OracleFixture<20261125> {};

TEST_F(SearchTest, BeamKernelsMatchTheOracle) {
  reset_beam_memory();
  const UOp *a = in(dtypes::float32, {32, 48}), *b = in(dtypes::float32, {48, 40});
  const UOp* x = in(dtypes::float32, {16, 64});
  const UOp* y = in(dtypes::float32, {4, 1000});
  CompileOptions o;
  o.beam = 2;
  testrt::runtime().devices().set_disk_cache(false);  // searched here, not found in an earlier run's cache
  BeamStats before = beam_stats();
  testrt::expect_matches_oracle(g, {gemm(g, a, b), softmax(g, x, 1), reduce(g, y, Op::Add, {1})}, data, "beam", 1e-4,
                                1e-4, o);
  BeamStats after = beam_stats();
  testrt::runtime().devices().set_disk_cache(true);
  EXPECT_GE(after.searches, before.searches + 3);
  // Kernels this small run their plain loop nest in far less than the limit: each search also
  // grows from there.
  EXPECT_EQ(after.from_scratch - before.from_scratch, after.searches - before.searches);
}

// A kernel whose buffers no device holds (an fp8 input of 2^63 - 2 elements, which compiles) keeps
// the heuristic's opts under BEAM, as without it: nothing can be timed. (The search allocated its
// buffers to time it and the compile failed with the allocation's error.)
TEST_F(SearchTest, AKernelWhoseBuffersDoNotFitIsNotSearched) {
  reset_beam_memory();
  auto rt = fresh_runtime();
  const UOp* x = input(g, dtypes::fp8e4m3, {std::numeric_limits<int64_t>::max() - 1});
  CompileOptions o;
  o.beam = 2;
  auto p = compile_program(*rt, g, std::vector<const UOp*>{mul(g, x, x)}, nullptr, o);
  ASSERT_EQ(p->launches.size(), 1u);
  EXPECT_TRUE(p->launches[0].kernel->opts.empty()) << opts_str(p->launches[0].kernel->opts);
}

// Every candidate a search can reach within two steps, from the heuristic's opts or from none,
// computes what the oracle does. A search keeps whatever times fastest, so a candidate with wrong
// results is a wrong answer waiting for a busy machine: the blocks of a reduce as UPCAST lanes were
// one (BeamKernelsMatchTheOracle above failed in 2 of 20 runs under load before they were refused).
TEST_F(SearchTest, EveryCandidateWithinTwoStepsMatchesTheOracle) {
  const UOp *a = in(dtypes::float32, {15, 64}), *b = in(dtypes::float32, {64, 24});
  const UOp *x = in(dtypes::float32, {1, 4, 6, 6}), *w = in(dtypes::float32, {8, 4, 3, 3});
  const UOp* c = in(dtypes::float32, {64, 48});
  const std::vector<std::vector<const UOp*>> cases{
      {matmul(g, a, b)}, {conv2d(g, x, w, nullptr, {1, 1}, {1, 1})}, {reduce(g, c, Op::Add, {0})}};
  for (const std::vector<const UOp*>& outs : cases) {
    const std::vector<oracle::Array> want = oracle::evaluate(outs, data);
    CompileOptions o;
    std::vector<const UOp*> asts;  // by kernel
    o.on_stage = [&](std::string_view stage, int kernel, const UOp* root) {
      if (stage != "ast") return;
      asts.resize(std::max(asts.size(), size_t(kernel) + 1));
      asts[size_t(kernel)] = root;
    };
    std::shared_ptr<const Program> p;
    testrt::compile_and_run(g, outs, data, o, &p);
    o.on_stage = nullptr;
    ASSERT_EQ(asts.size(), p->launches.size());
    // the last kernel (the product, the convolution, the sum), searched from both of a search's starts
    const UOp* ast = asts.back();
    const uint64_t id = p->launches.back().ast_hash;
    const Target& target = p->device->target();
    std::vector<std::vector<Opt>> level{p->launches.back().kernel->opts, {}};
    std::set<std::string> seen;
    int checked = 0;
    for (int step = 0; step <= 2; step++) {
      std::vector<std::vector<Opt>> next;
      for (const std::vector<Opt>& opts : level) {
        if (!seen.insert(opts_str(opts)).second) continue;
        CompileOptions forced = o;
        forced.kernel_opts[id] = opts;
        std::vector<oracle::Array> got;
        try {
          got = testrt::compile_and_run(g, outs, data, forced);
        } catch (const Error&) {
          continue;  // opts that do not fit: the search drops them too
        }
        checked++;
        for (size_t i = 0; i < got.size(); i++)
          EXPECT_EQ(testrt::mismatch(got[i], want[i], 1e-4, 1e-4), "") << opts_str(opts);
        if (step == 2) continue;
        LowerOptions lo;
        lo.opts = opts;
        OptResult r = optimize_kernel(g, ast, target, lo);
        for (const Opt& act : beam_actions(r.sink, target, r.applied, /*allow_threads=*/true)) {
          next.push_back(r.applied);
          next.back().push_back(act);
        }
      }
      level.swap(next);
    }
    EXPECT_GT(checked, 40) << "few candidates: the check checks little";
  }
}

// The opts each kernel got, given back as forced opts, rebuild exactly the same kernels (the
// same linearized program) in a runtime that has compiled nothing.
TEST_F(SearchTest, ForcedOptsRebuildTheSameKernels) {
  const UOp *a = in(dtypes::float32, {64, 96}), *b = in(dtypes::float32, {96, 32});
  const UOp* x = in(dtypes::float32, {1, 8, 12, 12});
  const UOp* w = in(dtypes::float32, {8, 8, 3, 3});
  std::vector<const UOp*> outs{softmax(g, gemm(g, a, b), 1), conv2d(g, x, w, nullptr, {1, 1}, {1, 1})};
  CompileOptions o;
  o.keep_stages = true;
  auto rt1 = fresh_runtime();
  auto p1 = compile_program(*rt1, g, outs, nullptr, o);
  ASSERT_GE(p1->launches.size(), 2u);
  CompileOptions forced = o;
  bool any_opts = false;
  for (const Launch& l : p1->launches) {
    forced.kernel_opts[l.ast_hash] = l.kernel->opts;
    any_opts = any_opts || !l.kernel->opts.empty();
  }
  EXPECT_TRUE(any_opts) << "the heuristic chose nothing: the replay checks nothing";
  auto rt2 = fresh_runtime();
  auto p2 = compile_program(*rt2, g, outs, nullptr, forced);
  ASSERT_EQ(p2->launches.size(), p1->launches.size());
  for (size_t k = 0; k < p1->launches.size(); k++) {
    EXPECT_EQ(p2->launches[k].ast_hash, p1->launches[k].ast_hash);
    EXPECT_EQ(p2->launches[k].kernel->opts, p1->launches[k].kernel->opts);
  }
  EXPECT_EQ(stage_texts(*p2, "linear"), stage_texts(*p1, "linear"));

  // Other opts give another kernel: the forced list is really what runs.
  CompileOptions none = o;
  for (const Launch& l : p1->launches) none.kernel_opts[l.ast_hash] = {};
  auto rt3 = fresh_runtime();
  auto p3 = compile_program(*rt3, g, outs, nullptr, none);
  for (const Launch& l : p3->launches) EXPECT_TRUE(l.kernel->opts.empty());
  EXPECT_NE(stage_texts(*p3, "linear"), stage_texts(*p1, "linear"));
  testrt::expect_matches_oracle(g, outs, data, "no opts", 1e-4, 1e-4, none);
}

TEST_F(SearchTest, ForcedOptsThatDoNotFitAreClearErrors) {
  const UOp* x = in(dtypes::float32, {16, 64});
  std::vector<const UOp*> outs{reduce(g, x, Op::Add, {1})};
  auto rt = fresh_runtime();
  auto p = compile_program(*rt, g, outs);
  ASSERT_EQ(p->launches.size(), 1u);
  const uint64_t id = p->launches[0].ast_hash;

  CompileOptions bad_axis;
  bad_axis.kernel_opts[id] = {Opt::upcast(7, 4)};
  try {
    compile_program(*rt, g, outs, nullptr, bad_axis);
    ADD_FAILURE() << "an opt on a range the kernel does not have compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::InvalidArg);
    EXPECT_NE(e.message().find(kernel_id_str(id)), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("UPCAST(7,4)"), std::string::npos) << e.message();
  }
  CompileOptions bad_amount;
  bad_amount.kernel_opts[id] = {Opt::unroll(1, 7)};  // 64 is not a multiple of 7
  EXPECT_THROW(compile_program(*rt, g, outs, nullptr, bad_amount), Error);

  CompileOptions stale;
  stale.kernel_opts[id ^ 1] = {};
  try {
    compile_program(*rt, g, outs, nullptr, stale);
    ADD_FAILURE() << "opts for a kernel the program does not have were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::InvalidArg);
    EXPECT_NE(e.message().find("does not have"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(kernel_id_str(id)), std::string::npos) << "names the kernels it has: " << e.message();
  }
}

// Candidates are lowered in scratch graphs: a BEAM compile adds to the user's graph exactly what
// compiling with the chosen opts forced adds.
TEST_F(SearchTest, BeamDoesNotGrowTheUserGraph) {
  reset_beam_memory();
  auto build = [](Graph& gr) {
    // 96 columns: the heuristic's 8x32 register tile leaves two loops, so BEAM has swaps to try (with
    // 32 columns the tile covers the row and nothing is left to search)
    const UOp *a = input(gr, dtypes::float32, {48, 64}), *b = input(gr, dtypes::float32, {64, 96});
    return std::vector<const UOp*>{gemm(gr, a, b)};
  };
  Graph g1;
  std::vector<const UOp*> outs1 = build(g1);
  size_t before = g1.size();
  auto rt1 = fresh_runtime();
  CompileOptions beam;
  beam.beam = 2;
  BeamStats s0 = beam_stats();
  auto p1 = compile_program(*rt1, g1, outs1, nullptr, beam);
  EXPECT_EQ(beam_stats().searches, s0.searches + p1->launches.size()) << "the search must run here";
  EXPECT_GT(beam_stats().compiled, s0.compiled + 2) << "BEAM compiled no candidate beyond its start";
  size_t grown_beam = g1.size() - before;

  Graph g2;
  std::vector<const UOp*> outs2 = build(g2);
  before = g2.size();
  CompileOptions forced;
  for (const Launch& l : p1->launches) forced.kernel_opts[l.ast_hash] = l.kernel->opts;
  auto rt2 = fresh_runtime();
  auto p2 = compile_program(*rt2, g2, outs2, nullptr, forced);
  EXPECT_EQ(grown_beam, g2.size() - before);

  // Found again in memory: no second search.
  Graph g3;
  std::vector<const UOp*> outs3 = build(g3);
  auto rt3 = fresh_runtime();
  BeamStats s1 = beam_stats();
  auto p3 = compile_program(*rt3, g3, outs3, nullptr, beam);
  EXPECT_EQ(beam_stats().searches, s1.searches);
  EXPECT_EQ(beam_stats().memory_hits, s1.memory_hits + p3->launches.size());
  ASSERT_EQ(p3->launches.size(), p1->launches.size());
  for (size_t k = 0; k < p1->launches.size(); k++)
    EXPECT_EQ(p3->launches[k].kernel->opts, p1->launches[k].kernel->opts);
}

// A kernel with launch-time variables cannot be timed at one size: it keeps the heuristic.
TEST_F(SearchTest, KernelsWithVariablesKeepTheHeuristic) {
  const UOp* x = in(dtypes::float32, {8, 256});
  const UOp* n = cast(g, g.var("n", 1, 4), dtypes::float32);
  std::vector<const UOp*> outs{reduce(g, mul(g, x, n), Op::Add, {1})};
  auto rt = fresh_runtime();
  CompileOptions beam;
  beam.beam = 2;
  BeamStats s0 = beam_stats();
  auto p = compile_program(*rt, g, outs, nullptr, beam);
  EXPECT_EQ(beam_stats().searches, s0.searches);
  auto rt2 = fresh_runtime();
  auto q = compile_program(*rt2, g, outs);
  ASSERT_EQ(p->launches.size(), q->launches.size());
  for (size_t k = 0; k < p->launches.size(); k++) EXPECT_EQ(p->launches[k].kernel->opts, q->launches[k].kernel->opts);
}

// A matmul kernel's AST as scheduled and the heuristic's opts for it, for searches run directly
// with timings the test chooses (BeamOptions::time_launch).
struct SearchSubject {
  const UOp* ast = nullptr;
  std::vector<Opt> heuristic;
};
// (the last kernel of the program: a matmul or a convolution packs its second operand first)
SearchSubject last_kernel_of(Graph& g, Runtime& rt, const std::vector<const UOp*>& outs) {
  std::vector<const UOp*> asts;
  CompileOptions o;
  o.beam = 0;
  o.on_stage = [&](std::string_view stage, int kernel, const UOp* root) {
    if (stage == "ast") asts.resize(std::max(asts.size(), size_t(kernel) + 1)), asts[size_t(kernel)] = root;
  };
  auto p = compile_program(rt, g, outs, nullptr, o);
  SearchSubject s;
  if (asts.size() != p->launches.size()) return s;
  s.ast = asts.back();
  s.heuristic = p->launches.back().kernel->opts;
  return s;
}
SearchSubject matmul_subject(Graph& g, Runtime& rt) {
  return last_kernel_of(g, rt, {gemm(g, input(g, dtypes::float32, {64, 64}), input(g, dtypes::float32, {64, 64}))});
}
bool starts_with(const std::vector<Opt>& list, const std::vector<Opt>& prefix) {
  return list.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), list.begin());
}

// Searches run directly on a 64x64 matmul with timings the test chooses; made-up timings are not
// kept, so every search searches.
class Beam : public ::testing::Test {
 protected:
  void SetUp() override {
    s = matmul_subject(g, *rt);
    ASSERT_NE(s.ast, nullptr);
    ASSERT_FALSE(s.heuristic.empty());
    bo.width = 2;
    bo.disk_cache = false;
  }
  void search() { beam_search(s.ast, *rt->device(), LowerOptions{}, bo); }
  Graph g;
  std::unique_ptr<Runtime> rt = fresh_runtime();
  SearchSubject s;
  BeamOptions bo;
};

// The plain loop nest, where the second search starts, is timed in full like the heuristic: not
// one cold run stopped early because it trails the heuristic, as every plain nest does.
TEST_F(Beam, TimesThePlainLoopNestInFull) {
  int plain_launches = 0, heuristic_launches = 0;
  bo.max_steps = 1;
  bo.time_launch = [&](const DeviceKernel& k) {
    if (k.opts.empty()) return plain_launches++, 20.0;  // 20x the heuristic
    if (k.opts == s.heuristic) return heuristic_launches++, 1.0;
    return 5.0;
  };
  BeamStats before = beam_stats();
  search();
  EXPECT_GE(heuristic_launches, 2);
  EXPECT_GE(plain_launches, 2) << "the plain nest was timed by one cold run";
  // Made-up timings are not kept: the same search again searches again.
  search();
  BeamStats after = beam_stats();
  EXPECT_EQ(after.searches, before.searches + 2);
  EXPECT_EQ(after.memory_hits, before.memory_hits);
}

// A heuristic slow in its first timing (a cold machine) is timed again before the searches start:
// candidates slower than its real time are no progress, so the first search stops at its first step.
TEST_F(Beam, ASlowFirstTimingOfTheHeuristicIsTimedAgain) {
  int heuristic_launches = 0, second_step_launches = 0;
  bo.max_steps = 3;
  bo.time_launch = [&](const DeviceKernel& k) {
    if (k.opts == s.heuristic) return ++heuristic_launches <= 4 ? 10.0 : 1.0;
    if (k.opts.empty()) return 20.0;
    if (starts_with(k.opts, s.heuristic) && k.opts.size() == s.heuristic.size() + 2) second_step_launches++;
    return 5.0;
  };
  search();
  EXPECT_GT(heuristic_launches, 4);
  EXPECT_EQ(second_step_launches, 0) << "the heuristic's cold timing made slower candidates look faster";
}

// The heuristic's time decides whether the plain loop nest is too much work to time (its work times
// the heuristic's time, over 50 ms). A slow first timing of the heuristic (1 s here) must not rule
// the plain start out: the second timing (1 ms) decides, and the search from scratch runs.
TEST_F(Beam, ASlowFirstTimingDoesNotRuleOutThePlainStart) {
  Graph cg;
  SearchSubject conv = last_kernel_of(cg, *rt,
                                      {conv2d(cg, input(cg, dtypes::float32, {1, 16, 14, 14}),
                                              input(cg, dtypes::float32, {16, 16, 3, 3}), nullptr, {1, 1}, {1, 1})});
  ASSERT_NE(conv.ast, nullptr);
  ASSERT_FALSE(conv.heuristic.empty());
  int heuristic_launches = 0;
  bo.max_steps = 1;
  bo.time_launch = [&](const DeviceKernel& k) {
    if (k.opts == conv.heuristic) return ++heuristic_launches <= 2 ? 1000.0 : 1.0;  // a warm-up and one run
    return k.opts.empty() ? 30.0 : 5.0;
  };
  BeamStats before = beam_stats();
  beam_search(conv.ast, *rt->device(), LowerOptions{}, bo);
  EXPECT_EQ(beam_stats().from_scratch, before.from_scratch + 1) << "the cold first timing ruled out the plain start";
}

// Each search has its part of the budget: where the first spends it all (its candidates are slow to
// time), the search from the plain loop nest still takes its first step.
TEST_F(Beam, TheSecondSearchHasItsOwnPartOfTheBudget) {
  bo.max_steps = 2;
  bo.budget_s = 0.05;
  bo.time_launch = [&](const DeviceKernel& k) {
    if (!starts_with(k.opts, s.heuristic)) return k.opts.empty() ? 4.0 : 3.0;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the heuristic's line: slow to time
    return 1.0;
  };
  BeamStats before = beam_stats();
  search();
  BeamStats after = beam_stats();
  EXPECT_EQ(after.searches, before.searches + 1);
  EXPECT_EQ(after.from_scratch, before.from_scratch + 1) << "the first search's time left the second none";
}

}  // namespace
}  // namespace sn
#endif  // SN_BACKEND_CPU
