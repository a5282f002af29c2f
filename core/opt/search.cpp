// BEAM search (see search.h): candidates are lists of opts, lowered and compiled in scratch graphs
// on all cores, timed one at a time on the device.
#include "core/opt/search.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "core/codegen/kernel_util.h"
#include "core/opt/opt.h"
#include "core/pipeline.h"
#include "core/runtime/disk_cache.h"
#include "core/util/error.h"
#include "core/util/parallel.h"

namespace sn {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Copies of the loop body an UPCAST/UNROLL product may make: more compiles slowly and spills.
constexpr int64_t kMaxUnrolled = 256;
// Runs per timed candidate (the minimum counts), and how much slower than the best a first run
// may be before the candidate is dropped without more runs.
constexpr int kRuns = 3;
constexpr double kEarlyStop = 3.0;

std::mutex g_mu;  // guards g_memory and g_stats
std::map<std::string, std::vector<Opt>> g_memory;
BeamStats g_stats;

// The same nodes in graph `dst` (a scratch graph for one candidate).
const UOp* copy_into(Graph& dst, const UOp* root) {
  std::unordered_map<const UOp*, const UOp*> map;
  std::vector<const UOp*> src;
  for (const UOp* u : toposort(root)) {
    src.clear();
    for (const UOp* s : u->src()) src.push_back(map.at(s));
    map[u] = dst.make(u->op, u->dtype, src, u->arg, u->tag);
  }
  return map.at(root);
}

int64_t unrolled(const std::vector<Opt>& opts) {
  int64_t n = 1;
  for (const Opt& o : opts)
    if (o.op == OptOp::Split && (o.type == AxisType::Upcast || o.type == AxisType::Unroll)) n *= o.amount;
  return n;
}

// The amounts to try splitting an axis of n by: those of `ks` that divide it, and the whole axis
// (up to 32: a 14-wide row, a 3-tap filter), as tinygrad's amount 0.
std::vector<int64_t> split_amounts(int64_t n, std::initializer_list<int64_t> ks) {
  std::vector<int64_t> out;
  for (int64_t k : ks)
    if (k < n && n % k == 0) out.push_back(k);
  if (n <= 32) out.push_back(n);
  return out;
}

}  // namespace

std::vector<Opt> beam_actions(const UOp* sink, const Target& target, const std::vector<Opt>& applied,
                              bool allow_threads) {
  std::vector<Opt> out;
  bool threaded = false;
  for (const Opt& o : applied) threaded = threaded || (o.op == OptOp::Split && o.type == AxisType::Thread);
  const int64_t room = kMaxUnrolled / unrolled(applied);
  std::vector<const UOp*> loops, reduces;
  classify_ranges(sink, &loops, &reduces);
  std::vector<int64_t> swappable;
  for (const UOp* r : loops) {
    const auto& ra = r->as<RangeArg>();
    int64_t n = const_bound(r);
    if (n <= 1 || (ra.type != AxisType::Loop && ra.type != AxisType::Global)) continue;
    swappable.push_back(ra.id);
    for (int64_t k : split_amounts(n, {2, 3, 4, 5, 7, 8, 16}))
      if (k <= room) out.push_back(Opt::upcast(ra.id, k));
    if (target.has_local && ra.type == AxisType::Global)
      for (int64_t k : {2, 4, 8, 16, 32})
        if (n % k == 0) out.push_back(Opt::local(ra.id, k));
    if (allow_threads && !threaded && target.has_threads && target.cores > 1 && n >= target.cores)
      out.push_back(Opt::thread(ra.id, target.cores));
  }
  for (const UOp* r : reduces) {
    const auto& ra = r->as<RangeArg>();
    int64_t n = const_bound(r);
    if (n <= 1 || ra.type != AxisType::Reduce) continue;
    for (int64_t k : split_amounts(n, {2, 3, 4, 7, 8, 16}))
      if (k <= room) out.push_back(Opt::unroll(ra.id, k));
    // blocks of 8 or 64 steps in a loop of their own, the sum accumulated in the output (CPU)
    if (target.has_threads && !target.has_local)
      for (int64_t rows : {8, 64})
        if (n >= 4 * rows && n % rows == 0 && reduce_blocks_rule(sink, r).empty())
          out.push_back(Opt::split(ra.id, n / rows, AxisType::Loop, true));
    if (target.has_local)
      for (int64_t k : {8, 16, 32})
        if (n % k == 0) {
          out.push_back(Opt::group(ra.id, k));
          out.push_back(Opt::group(ra.id, k, true));
        }
  }
  // A swap of the pair the last opt swapped would undo it: the kernel of two steps back, compiled
  // again for nothing (BEAM met [.. UPCAST(0,2) SWAP(1,0) SWAP(0,1)] as the kernel of [.. UPCAST(0,2)]).
  const Opt* last_swap = !applied.empty() && applied.back().op == OptOp::Swap ? &applied.back() : nullptr;
  auto undoes_last = [&](int64_t a, int64_t b) {
    return last_swap &&
           ((last_swap->axis == a && last_swap->amount == b) || (last_swap->axis == b && last_swap->amount == a));
  };
  for (size_t i = 0; i < swappable.size(); i++)
    for (size_t j = i + 1; j < swappable.size(); j++)
      if (!undoes_last(swappable[i], swappable[j])) out.push_back(Opt::swap(swappable[i], swappable[j]));
  // Tensor cores only as the first opt; a candidate whose kernel is not their matmul fails to lower.
  if (applied.empty())
    for (size_t t = 0; t < target.tensor_cores.size(); t++)
      for (const UOp* r : reduces)
        for (bool pad : {false, true}) out.push_back(Opt::tc(r->as<RangeArg>().id, int64_t(t), pad));
  return out;
}

namespace {

// Roughly how many operations a run executes: each op of the linearized kernel times the trip
// counts of the loops around it (vector ops count their lanes). A candidate whose opts move a reduce
// inside a loop it did not depend on (a swap that recomputes softmax's row max per element) does
// orders of magnitude more work; it is not worth a run that could take minutes.
double estimate_ops(const LoweredKernel& k) {
  std::vector<double> trips{1.0};
  double ops = 0;
  for (const UOp* u : k.linear->src()) {
    if (u->op == Op::Range) {
      trips.push_back(trips.back() * double(std::max<int64_t>(1, const_bound(u))));
    } else if (u->op == Op::End) {
      if (trips.size() > 1) trips.pop_back();
    } else if (is_elementwise(u->op) || u->op == Op::Load || u->op == Op::Store) {
      ops += trips.back() * double(std::max(1, int(u->dtype.lanes)));
    }
  }
  return ops;
}
// A candidate may do this many times the heuristic's operations, or any amount that would still run
// in a few milliseconds at the heuristic's speed (the plain loop nest of a small convolution does
// 10 times its work, and is where the search from scratch starts).
constexpr double kMaxExtraWork = 8.0;
constexpr double kSmallRunMs = 50.0;
// The search from scratch is left out where the plain loop nest runs longer than this: its first
// steps' candidates would run about as long (a 4096 matmul's plain nest takes seconds).
constexpr double kMaxPlainStartMs = 500.0;

struct Candidate {
  std::vector<Opt> opts;
  std::shared_ptr<const DeviceKernel> kernel;
  uint64_t optimized_hash = 0;  // the kernel after its opts: different lists can give the same kernel
  std::vector<Opt> next;        // the opts that may follow
  double ms = kInf;
  double ops = 0;  // estimate_ops
  bool ok = false;
};

// Lowers and compiles every candidate, in parallel, each in a scratch graph of its own.
void compile_all(std::vector<Candidate>& cands, const UOp* ast, ComputeDevice& device, const LowerOptions& base) {
  on_all_cores(cands.size(), [&](size_t i) {
    Candidate& c = cands[i];
    try {
      Graph scratch;
      LowerOptions lo = base;
      lo.opts = c.opts;
      lo.on_stage = nullptr;
      LoweredKernel k = lower_kernel(scratch, copy_into(scratch, ast), device.target(), lo);
      const UOp* optimized = nullptr;
      for (const auto& [name, root] : k.stages)
        if (name == "optimized") optimized = root;
      c.optimized_hash = optimized ? optimized->content_hash() : 0;
      c.next = optimized ? beam_actions(optimized, device.target(), k.opts, base.allow_threads) : std::vector<Opt>{};
      c.ops = estimate_ops(k);
      c.kernel = device.compile_scratch(k);
      c.ok = true;
    } catch (const Error&) {
      c.ok = false;  // an opt that does not apply here, or a kernel the target cannot take
    }
  });
}

// Zero-filled buffers for the kernel's params, shared by every candidate (opts do not change them).
struct Buffers {
  std::vector<std::shared_ptr<Storage>> storage;
  std::vector<DevicePtr> ptrs;
};

Buffers make_buffers(ComputeDevice& device, const DeviceKernel& k) {
  Buffers b;
  int64_t slots = 0;
  for (const KernelParam& p : k.params) slots = std::max(slots, p.slot + 1);
  b.storage.resize(size_t(slots));
  b.ptrs.assign(size_t(slots), DevicePtr{nullptr, 0});
  for (const KernelParam& p : k.params) {
    size_t bytes = size_t(std::max<int64_t>(p.size, 0)) * size_t(p.dtype.itemsize());
    auto s = device.allocate(bytes);
    if (bytes > 0) {
      std::vector<char> zeros(bytes, 0);
      device.copy_in(*s, 0, zeros.data(), bytes);
    }
    b.ptrs[size_t(p.slot)] = DevicePtr{s->ptr(), 0};
    b.storage[size_t(p.slot)] = std::move(s);
  }
  return b;
}

// The fastest of a few runs in milliseconds, or kInf; stops after one run that is far slower than `best`.
double time_kernel(ComputeDevice& device, const DeviceKernel& k, const Buffers& b, double best,
                   const BeamOptions& options) {
  LaunchSize size;
  for (size_t d = 0; d < 3; d++) {
    size.global[d] = k.dims.global[d].eval(nullptr);
    size.local[d] = k.dims.local[d];
  }
  auto launch = [&] { return options.time_launch ? options.time_launch(k) : device.time_launch(k, b.ptrs, {}, size); };
  try {
    double warm = launch();                         // warm: caches, page faults, lazy binding
    if (warm > 2 * kEarlyStop * best) return warm;  // far behind even with a cold start: one run is enough
    double fastest = kInf;
    const int runs = warm > 50 ? 1 : kRuns;  // long kernels vary less from run to run, and cost more to repeat
    for (int r = 0; r < runs; r++) {
      fastest = std::min(fastest, launch());
      if (fastest > kEarlyStop * best) break;
    }
    return fastest;
  } catch (const Error&) {
    return kInf;
  }
}

std::string cache_key(const UOp* ast, const Target& target, const LowerOptions& base, const BeamOptions& o) {
  return cat("beam/2/", disk_cache_version(), "/", kernel_id_str(ast->content_hash()), "/", target.key(), "/w", o.width,
             "/s", o.max_steps, "/t", int(base.allow_threads), "/m", base.min_ops_per_thread);
}

constexpr std::string_view kValueMagic = "sinter-beam-1\n";

}  // namespace

std::vector<Opt> beam_search(const UOp* ast, ComputeDevice& device, const LowerOptions& base_in,
                             const BeamOptions& options) {
  LowerOptions base = base_in;
  base.opts.reset();
  base.on_stage = nullptr;
  // The heuristic's choice: the starting point, and the answer where nothing can be timed.
  std::vector<Opt> heuristic;
  bool has_vars = false;
  {
    Graph scratch;
    LoweredKernel k = lower_kernel(scratch, copy_into(scratch, ast), device.target(), base);
    heuristic = k.opts;
    has_vars = !k.vars.empty();
  }
  if (has_vars || !device.cannot_run().empty() || options.width <= 0) return heuristic;

  const std::string key = cache_key(ast, device.target(), base, options);
  // Timings made up by a test (time_launch) find nothing worth keeping, nor take a kept answer.
  const bool keep = !options.time_launch;
  if (keep) {
    std::lock_guard<std::mutex> lk(g_mu);
    if (auto it = g_memory.find(key); it != g_memory.end()) {
      g_stats.memory_hits++;
      return it->second;
    }
  }
  std::shared_ptr<DiskCache> disk = options.disk_cache && keep ? disk_cache() : nullptr;
  if (disk) {
    if (std::optional<std::string> v = disk->get(key); v && v->starts_with(kValueMagic)) {
      std::vector<Opt> opts;
      bool usable = parse_opts(std::string_view(*v).substr(kValueMagic.size()), &opts);
      if (usable) {  // a foreign or stale entry that does not apply is searched again (and replaced)
        try {
          Graph scratch;
          LowerOptions lo = base;
          lo.opts = opts;
          (void)optimize_kernel(scratch, copy_into(scratch, ast), device.target(), lo);
        } catch (const Error&) {
          usable = false;
        }
      }
      if (usable) {
        std::lock_guard<std::mutex> lk(g_mu);
        g_stats.disk_hits++;
        g_memory[key] = opts;
        return opts;
      }
    }
  }

  auto t_start = std::chrono::steady_clock::now();
  std::vector<Candidate> seeds(2);
  seeds[0].opts = heuristic;
  seeds[1].opts = {};
  compile_all(seeds, ast, device, base);
  if (!seeds[0].ok) return heuristic;
  Buffers bufs;
  try {
    bufs = make_buffers(device, *seeds[0].kernel);
  } catch (const Error&) {
    return heuristic;  // its buffers do not fit this device (an input of 2^63 bytes compiles): nothing can be timed
  }
  std::set<std::vector<std::string>> seen_lists;
  // Each kernel's timing (by optimized_hash), kept for both searches: different lists of opts often
  // give the same kernel, which is timed once and may still be grown by the search that meets it.
  std::map<uint64_t, double> timed_ms;
  uint64_t compiled = seeds.size(), timed = 0;
  auto list_key = [](const std::vector<Opt>& opts) {
    std::vector<std::string> words;
    for (const Opt& o : opts) words.push_back(opt_str(o));
    return words;
  };
  // c's time: its kernel's earlier timing where another list of opts gave the same kernel, else a
  // timing now (early stop against `best`) kept for later. c's code is freed either way.
  auto time_candidate = [&](Candidate& c, double best) {
    if (auto it = timed_ms.find(c.optimized_hash); it != timed_ms.end()) {
      c.ms = it->second;
    } else {
      c.ms = time_kernel(device, *c.kernel, bufs, best, options);
      timed_ms[c.optimized_hash] = c.ms;
      timed++;
    }
    c.kernel.reset();
  };
  const double heuristic_ops = seeds[0].ops;
  double heuristic_ms = kInf;
  auto too_much_work = [&](const Candidate& c) {
    double times = c.ops / std::max(heuristic_ops, 1.0);
    return times > kMaxExtraWork && times * heuristic_ms > kSmallRunMs;
  };
  // The heuristic first, timed twice: a search's first timing runs on a cold machine (a 64-channel
  // convolution: 2.63 ms first, 1.49 ms in the final comparison), and the heuristic's time decides
  // whether the plain start is too much work to time, and what the first step must beat.
  Candidate& first = seeds[0];
  Candidate& plain = seeds[1];
  for (const Candidate& c : seeds) seen_lists.insert(list_key(c.opts));
  first.ms = time_kernel(device, *first.kernel, bufs, kInf, options);
  first.ms = std::min(first.ms, time_kernel(device, *first.kernel, bufs, kInf, options));
  first.kernel.reset();
  heuristic_ms = first.ms;
  timed_ms[first.optimized_hash] = first.ms;
  timed++;
  // The plain start, timed in full (not stopped early against the heuristic, which it trails by its
  // nature: a single cold run set where the second search starts and what it must beat), unless
  // one run already shows it too long to start from.
  // (Where the heuristic adds nothing, the plain nest is its kernel and takes its time.)
  if (plain.ok && too_much_work(plain)) plain.ok = false;
  if (plain.ok) time_candidate(plain, kMaxPlainStartMs / (2 * kEarlyStop));
  if (options.debug >= 2)
    std::fprintf(stderr, "sn: beam %-28s starts: heuristic %.3f ms, plain %.3f ms%s\n", kernel_name(ast).c_str(),
                 first.ms, plain.ms, plain.ok ? "" : " (not searched)");
  if (seeds[0].ms == kInf) return heuristic;
  Candidate best = seeds[0];

  // Two searches: one grows the heuristic's list, one starts from the plain loop nest (as tinygrad's
  // does). Each goes on while its own best improves, so the second is not cut off where its early
  // steps are slower than the heuristic: appending opts to the heuristic's list cannot undo its
  // choices (a convolution's 7-column tile where the whole 14-wide row is faster), and its product
  // of upcasts often leaves no room for more.
  auto elapsed_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(); };
  bool from_scratch = false;  // the search from the plain loop nest ran
  // grow(seed, deadline_s): no step starts after deadline_s (seconds since the search began).
  auto grow = [&](Candidate seed, double deadline_s) {
    if (!seed.ok || seed.ms == kInf) return;
    std::vector<Candidate> beam{std::move(seed)};
    for (int step = 0; step < options.max_steps; step++) {
      if (elapsed_s() > deadline_s) {
        if (options.debug >= 2)
          std::fprintf(stderr, "sn: beam %-28s stops at step %d: its time (until %.1f s) is spent\n",
                       kernel_name(ast).c_str(), step, deadline_s);
        break;
      }
      std::vector<Candidate> fresh;
      for (const Candidate& c : beam)
        for (const Opt& a : c.next) {
          Candidate n;
          n.opts = c.opts;
          n.opts.push_back(a);
          if (seen_lists.insert(list_key(n.opts)).second) fresh.push_back(std::move(n));
        }
      if (fresh.empty()) break;
      auto t_compile = std::chrono::steady_clock::now();
      compile_all(fresh, ast, device, base);
      compiled += fresh.size();
      from_scratch = from_scratch || beam.front().opts.empty();  // (its first step ran)
      const double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_compile).count();
      const double beam_best = beam.front().ms;
      std::set<uint64_t> this_step;  // kernels met earlier in this step: one copy in the beam is enough
      for (Candidate& c : fresh) {
        if (elapsed_s() > deadline_s + options.budget_s)
          c.ok = false;  // a step too long for the budget: the rest untimed
        if (too_much_work(c)) c.ok = false;
        if (!c.ok || !this_step.insert(c.optimized_hash).second) {
          c.ok = false;
          continue;
        }
        auto t_time = std::chrono::steady_clock::now();
        time_candidate(c, beam_best);
        if (options.debug >= 3)
          std::fprintf(stderr, "sn: beam   candidate [%s]: %.3f ms (timing took %.0f ms)\n", opts_str(c.opts).c_str(),
                       c.ms,
                       std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_time).count());
      }
      std::erase_if(fresh, [&](const Candidate& c) { return !c.ok || c.ms == kInf || c.ms > kEarlyStop * beam_best; });
      std::sort(fresh.begin(), fresh.end(), [](const Candidate& a, const Candidate& b) { return a.ms < b.ms; });
      if (fresh.size() > size_t(options.width)) fresh.resize(size_t(options.width));
      if (options.debug >= 2)
        std::fprintf(stderr,
                     "sn: beam %-28s step %d: %zu kept, best %.3f ms [%s] (this search %.3f ms, all %.3f ms); "
                     "compiled in %.1f s\n",
                     kernel_name(ast).c_str(), step, fresh.size(), fresh.empty() ? kInf : fresh.front().ms,
                     fresh.empty() ? "" : opts_str(fresh.front().opts).c_str(), beam_best, best.ms, compile_s);
      if (fresh.empty() || fresh.front().ms >= beam_best) break;  // no step forward
      if (fresh.front().ms < best.ms) best = fresh.front();
      beam = std::move(fresh);
    }
  };
  // The budget: half for the first search where the second will run, and for the second the rest,
  // or half from its own start where the first spent more (a first step of slow candidates).
  const bool second = plain.ok && plain.ms <= kMaxPlainStartMs;
  grow(first, second ? options.budget_s / 2 : options.budget_s);
  if (second) grow(plain, std::max(options.budget_s, elapsed_s() + options.budget_s / 2));

  // The last word between the winner and the heuristic: timed in turns, so that a moment of load on
  // the machine (another process, a thread pool waking up) cannot make the heuristic look slower.
  double final_heuristic_ms = heuristic_ms;
  if (best.opts != heuristic) {
    std::vector<Candidate> pair(2);
    pair[0].opts = best.opts;
    pair[1].opts = heuristic;
    compile_all(pair, ast, device, base);
    compiled += 2;
    if (pair[0].ok && pair[1].ok) {
      double ms[2] = {kInf, kInf};
      for (int round = 0; round < 3; round++)
        for (int i : {1, 0}) ms[i] = std::min(ms[i], time_kernel(device, *pair[size_t(i)].kernel, bufs, kInf, options));
      timed += 6;
      final_heuristic_ms = ms[1];
      best.ms = std::min(ms[0], ms[1]);
      if (ms[1] <= ms[0]) best.opts = heuristic;
    }
  }
  if (options.debug >= 2)
    std::fprintf(
        stderr,
        "sn: beam %-28s %.3f ms [%s] vs heuristic %.3f ms [%s]; %" PRIu64 " compiled, %" PRIu64 " timed in %.0f ms\n",
        kernel_name(ast).c_str(), best.ms, opts_str(best.opts).c_str(), final_heuristic_ms, opts_str(heuristic).c_str(),
        compiled, timed, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_start).count());
  {
    std::lock_guard<std::mutex> lk(g_mu);
    g_stats.searches++;
    g_stats.from_scratch += from_scratch ? 1 : 0;
    g_stats.compiled += compiled;
    g_stats.timed += timed;
    if (keep) g_memory[key] = best.opts;
  }
  if (disk) disk->put(key, cat(kValueMagic, opts_str(best.opts)));
  return best.opts;
}

BeamStats beam_stats() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_stats;
}

int beam_width_from_env() {
  const char* v = std::getenv("SN_BEAM");
  if (v == nullptr) return 0;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  return end != v && *end == '\0' && n > 0 && n <= 64 ? int(n) : 0;
}

void reset_beam_memory() {
  std::lock_guard<std::mutex> lk(g_mu);
  g_memory.clear();
}

}  // namespace sn
