// Cold compile time against the LLVM floor, in one run. For each case (bench_cpu's kernels, the
// small CNN at batch 8, ResNet-18 at batch 1) a fresh runtime compiles the program with nothing
// cached (SN_CACHE=0, no BEAM); the floor is each kernel's own LLVM IR compiled by a bare LLJIT
// (stock O3, same codegen level) in the same process. Three runs per case; the columns are the
// median run:
//   total_ms         wall time of compile_program (schedule, lowering, LLVM, precompute, plan)
//   ours/kernel      our lowering stages (optimize .. linearize) per kernel: the lowering thread's CPU time
//                    (the backend compiles earlier kernels on every core meanwhile)
//   llvm/kernel      our backend (render, parse, optimize, codegen, link) per kernel
//   floor/kernel     the bare LLJIT per kernel
//   total/floor      total_ms over the summed floor (the goal: at most 1.5)
//   cpu_ms           CPU time of compile_program on all of the process's threads (user + system):
//                    the work, where total_ms is the work spread over the cores
// Then, per model, the slowest kernels of the median run.
//   bench_compile [filter]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "bench/models.h"
#include "core/pipeline.h"
#include "core/runtime/disk_cache.h"
#include "core/runtime/runtime.h"

namespace {

using namespace sn;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// The process's CPU time so far (all threads, user + system), in ms.
double process_cpu_ms() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto ms = [](const timeval& t) { return double(t.tv_sec) * 1e3 + double(t.tv_usec) / 1e3; };
  return ms(ru.ru_utime) + ms(ru.ru_stime);
}

struct BenchCase {
  std::string name;
  bool model;
  std::function<std::vector<const UOp*>(Graph&)> build;
};

std::vector<BenchCase> cases() {
  const DType f32 = dtypes::float32;
  auto conv = [f32](int64_t n, int64_t ci, int64_t co, int64_t h) {
    return [=](Graph& g) -> std::vector<const UOp*> {
      return {conv2d(g, input(g, f32, {n, ci, h, h}), input(g, f32, {co, ci, 3, 3}), nullptr, {1, 1}, {1, 1})};
    };
  };
  return {
      {"add_4096x4096", false,
       [f32](Graph& g) -> std::vector<const UOp*> {
         return {add(g, input(g, f32, {4096, 4096}), input(g, f32, {4096, 4096}))};
       }},
      {"sum_4096x4096", false,
       [f32](Graph& g) -> std::vector<const UOp*> {
         return {reduce(g, input(g, f32, {4096, 4096}), Op::Add, {0, 1})};
       }},
      {"matmul_1024", false,
       [f32](Graph& g) -> std::vector<const UOp*> {
         return {gemm(g, input(g, f32, {1024, 1024}), input(g, f32, {1024, 1024}))};
       }},
      {"matmul_2048", false,
       [f32](Graph& g) -> std::vector<const UOp*> {
         return {gemm(g, input(g, f32, {2048, 2048}), input(g, f32, {2048, 2048}))};
       }},
      {"softmax_4096x4096", false,
       [f32](Graph& g) -> std::vector<const UOp*> {
         return {softmax(g, input(g, f32, {4096, 4096}), 1)};
       }},
      {"conv2d_64x56x56", false, conv(1, 64, 64, 56)},
      {"small_cnn_b8", true, [](Graph& g) { return bench::small_cnn(g, 8).outputs; }},
      {"resnet18_b1", true, [](Graph& g) { return bench::resnet18(g, 1).outputs; }},
  };
}

struct KernelTime {
  std::string name;
  double ours = 0, llvm = 0, llvm_opt = 0, floor = 0;  // llvm_opt: of llvm, the IR optimization pipeline
};

struct Run {
  double total = 0, cpu = 0;
  std::vector<KernelTime> kernels;
  double sum(double KernelTime::*f) const {
    double s = 0;
    for (const KernelTime& k : kernels) s += k.*f;
    return s;
  }
};

Run compile_once(const BenchCase& c) {
  Graph g;
  std::vector<const UOp*> outs = c.build(g);
  Runtime rt(RuntimeOptions{.debug = -1, .threads = 0});  // SN_DEBUG=2: per-stage times
  CompileOptions o;
  o.beam = 0;
  const double c0 = process_cpu_ms();
  auto t0 = Clock::now();
  auto p = compile_program(rt, g, outs, nullptr, o);
  Run r;
  r.total = ms_since(t0);
  r.cpu = process_cpu_ms() - c0;
  for (const Launch& l : p->launches) {
    KernelTime k;
    k.name = l.kernel->name;
    for (const auto& [stage, ms] : l.kernel->stage_ms) k.ours += ms;
    k.llvm = l.kernel->compile_ms;
    const auto* ck = dynamic_cast<const CpuKernel*>(l.kernel.get());
    if (ck && l.kernel->compile_ms > 0) {
      k.llvm_opt = ck->opt_ms;
      k.floor = llvm_floor_ms(ck->source, ck->symbol);
    }
    r.kernels.push_back(k);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  setenv("SN_CACHE", "0", 1);  // cold: nothing from disk
  unsetenv("SN_BEAM");
  reset_disk_cache();
  const char* filter = argc > 1 ? argv[1] : "";
  std::printf("# cold compile vs the LLVM floor (bare LLJIT, stock O3, same level); median of 3 runs, per kernel\n");
  std::printf("%-20s %7s %10s %12s %12s %13s %12s %9s   %s\n", "case", "kernels", "total_ms", "ours/kernel",
              "llvm/kernel", "floor/kernel", "total/floor", "cpu_ms", "runs total_ms");
  std::vector<std::pair<std::string, Run>> models;
  for (const BenchCase& c : cases()) {
    if (!std::strstr(c.name.c_str(), filter)) continue;
    std::vector<Run> runs;
    for (int i = 0; i < 3; i++) runs.push_back(compile_once(c));
    std::vector<Run> sorted = runs;
    std::sort(sorted.begin(), sorted.end(), [](const Run& a, const Run& b) { return a.total < b.total; });
    const Run& med = sorted[1];
    const double n = double(std::max<size_t>(1, med.kernels.size()));
    const double floor = med.sum(&KernelTime::floor);
    std::printf("%-20s %7zu %10.1f %12.2f %12.2f %13.2f %12.2f %9.1f   %.1f %.1f %.1f\n", c.name.c_str(),
                med.kernels.size(), med.total, med.sum(&KernelTime::ours) / n, med.sum(&KernelTime::llvm) / n,
                floor / n, floor > 0 ? med.total / floor : 0.0, med.cpu, runs[0].total, runs[1].total, runs[2].total);
    if (c.model) models.emplace_back(c.name, med);
  }
  for (auto& [name, run] : models) {
    std::sort(run.kernels.begin(), run.kernels.end(),
              [](const KernelTime& a, const KernelTime& b) { return a.ours + a.llvm > b.ours + b.llvm; });
    std::printf("\n# %s: slowest kernels (median run)\n%-40s %9s %9s %13s %9s\n", name.c_str(), "kernel", "ours_ms",
                "llvm_ms", "(of it: opt)", "floor_ms");
    for (size_t k = 0; k < std::min<size_t>(8, run.kernels.size()); k++)
      std::printf("%-40s %9.2f %9.2f %13.2f %9.2f\n", run.kernels[k].name.c_str(), run.kernels[k].ours,
                  run.kernels[k].llvm, run.kernels[k].llvm_opt, run.kernels[k].floor);
  }
  return 0;
}
