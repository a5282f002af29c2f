// The persistent kernel cache across processes (core/runtime/disk_cache.h). Two processes, one
// after the other, compile the same kernels (those of bench_cpu: add, sum, matmul, softmax,
// conv2d, cumsum) with one fresh SN_CACHE_DIR: process 1 lowers and compiles each with LLVM and
// stores it; process 2 (a new CpuCompiler: new LLJIT, empty memory cache) links each from disk.
// One row per kernel:
//   case  kernel  name  p1_ms  p2_ms  ratio     (p1 / p2; p1 = key + lower + LLVM + store, p2 = key + disk get + link)
// then the mean per kernel and the target: process 2 at most 1 ms per kernel (judged on the mean and
// on the slowest kernel, the first, which waits for the cache if its open is not done).
// Then the same for whole programs (the small CNN and ResNet-18, with weights as inputs and as constants,
// through compile_program on a fresh runtime, in a cache directory of their own): a program's time covers
// its schedule, its constants (hashed, scanned for finiteness, packed at compile) and every kernel.
//   bench_compile_cache                   runs both processes twice (this program again, with --child
//                                         and with --child-models)
//   bench_compile_cache --child           one process: prints "K case index name ms compiled|disk" lines
//   bench_compile_cache --child-models    one process: prints "P model launches kernels ms from_disk" lines
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "bench/models.h"
#include "core/pipeline.h"
#include "core/schedule/schedule.h"
#include "core/tensor/compose.h"
#include "core/tensor/tensor.h"

namespace {

using namespace sn;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct BenchCase {
  std::string name;
  std::function<std::vector<const UOp*>(Graph&)> build;
};

std::vector<BenchCase> cases() {
  const DType f32 = dtypes::float32;
  auto conv = [f32](int64_t N, int64_t CI, int64_t CO, int64_t H, int64_t W) {
    return [=](Graph& g) -> std::vector<const UOp*> {
      const UOp* x = input(g, f32, {N, CI, H, W});
      const UOp* w = input(g, f32, {CO, CI, 3, 3});
      return {conv2d(g, x, w, nullptr, {1, 1}, {1, 1})};
    };
  };
  return {
      {"add_4096x4096",
       [f32](Graph& g) -> std::vector<const UOp*> {
         return {add(g, input(g, f32, {4096, 4096}), input(g, f32, {4096, 4096}))};
       }},
      {"sum_4096x4096",
       [f32](Graph& g) -> std::vector<const UOp*> {
         return {reduce(g, input(g, f32, {4096, 4096}), Op::Add, {0, 1})};
       }},
      {"matmul_1024",
       [f32](Graph& g) -> std::vector<const UOp*> {
         return {gemm(g, input(g, f32, {1024, 1024}), input(g, f32, {1024, 1024}))};
       }},
      {"softmax_4096x4096",
       [f32](Graph& g) -> std::vector<const UOp*> {
         return {softmax(g, input(g, f32, {4096, 4096}), 1)};
       }},
      {"conv2d_64x56x56", conv(1, 64, 64, 56, 56)},
      {"conv2d_cnn1_b8", conv(8, 3, 16, 32, 32)},
      {"conv2d_cnn2_b8", conv(8, 16, 32, 16, 16)},
      {"cumsum_1M", [f32](Graph& g) -> std::vector<const UOp*> { return {cumsum(g, input(g, f32, {1000000}), 0)}; }},
  };
}

// One process: schedules every case and compiles each kernel with one fresh CpuCompiler, timing
// compile_ast (kernel key, then the memory cache, the disk cache, or lower + LLVM).
int child() {
  auto t0 = Clock::now();
  CpuCompiler compiler;
  std::printf("S jit_setup %.3f\n", ms_since(t0));
  for (const BenchCase& c : cases()) {
    Graph g;
    std::vector<const UOp*> outs = c.build(g);
    Schedule s = schedule_graph(g, outs);
    for (size_t k = 0; k < s.kernels.size(); k++) {
      uint64_t disk_before = compiler.stats().disk_hits;
      auto t = Clock::now();
      auto kernel = compiler.compile_ast(g, s.kernels[k].ast);
      double ms = ms_since(t);
      bool from_disk = compiler.stats().disk_hits > disk_before;
      std::printf("K %s %zu %s %.3f %s\n", c.name.c_str(), k, kernel->name.c_str(), ms,
                  from_disk ? "disk" : "compiled");
    }
  }
  return 0;
}

// One process: compiles each model as one program on a fresh runtime (its CPU device opened first,
// untimed, as the kernel rows leave out the LLJIT's setup).
int child_models() {
  struct ModelCase {
    const char* name;
    bench::Model (*build)(Graph&);
  };
  const ModelCase models[] = {
      {"small_cnn_b8", [](Graph& g) { return bench::small_cnn(g, 8); }},
      {"small_cnn_b8_cw", [](Graph& g) { return bench::small_cnn(g, 8, true); }},
      {"resnet18_b1", [](Graph& g) { return bench::resnet18(g, 1); }},
      {"resnet18_b1_cw", [](Graph& g) { return bench::resnet18(g, 1, true); }},
  };
  for (const ModelCase& m : models) {
    Runtime rt(RuntimeOptions{.debug = 0, .threads = 0});
    std::shared_ptr<ComputeDevice> dev = rt.device("CPU");
    Graph g;
    bench::Model model = m.build(g);
    auto t = Clock::now();
    std::shared_ptr<const Program> p = compile_program(rt, g, model.outputs, dev, {});
    double ms = ms_since(t);
    ComputeDevice::Stats st = dev->stats();
    std::printf("P %s %zu %llu %.3f %llu\n", m.name, p->launches.size(),
                static_cast<unsigned long long>(st.compiled + st.disk_hits + st.cache_hits), ms,
                static_cast<unsigned long long>(st.disk_hits));
  }
  return 0;
}

struct Row {
  std::string name;
  double ms = 0;
  std::string how;
};

// Runs one child process; its rows by "case index".
bool run_child(std::map<std::string, Row>& rows, std::vector<std::string>& order, double& setup_ms) {
  // popen runs a shell: name this program by its path, not /proc/self/exe (that would be the shell).
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  FILE* p = popen(("'" + self + "' --child").c_str(), "r");
  if (!p) return false;
  char line[1024];
  while (std::fgets(line, sizeof line, p)) {
    char kind[4], a[256], name[512], how[32];
    size_t idx = 0;
    double ms = 0;
    if (std::sscanf(line, "%3s %255s %zu %511s %lf %31s", kind, a, &idx, name, &ms, how) == 6 && kind[0] == 'K') {
      std::string key = std::string(a) + " " + std::to_string(idx);
      if (!rows.count(key)) order.push_back(key);
      rows[key] = Row{name, ms, how};
    } else if (std::sscanf(line, "S %255s %lf", a, &setup_ms) == 2) {
    }
  }
  return pclose(p) == 0;
}

struct ModelRow {
  size_t launches = 0, kernels = 0, from_disk = 0;
  double ms = 0;
};

// Runs one model child process; its rows by model, in order.
bool run_model_child(std::vector<std::pair<std::string, ModelRow>>& rows) {
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  FILE* p = popen(("'" + self + "' --child-models").c_str(), "r");
  if (!p) return false;
  char line[1024];
  while (std::fgets(line, sizeof line, p)) {
    char name[256];
    ModelRow r;
    if (std::sscanf(line, "P %255s %zu %zu %lf %zu", name, &r.launches, &r.kernels, &r.ms, &r.from_disk) == 5)
      rows.emplace_back(name, r);
  }
  return pclose(p) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--child") == 0) return child();
  if (argc > 1 && std::strcmp(argv[1], "--child-models") == 0) return child_models();
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("sn_bench_compile_cache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  setenv("SN_CACHE_DIR", dir.c_str(), 1);
  unsetenv("SN_CACHE");
  std::map<std::string, Row> p1, p2;
  std::vector<std::string> order, order2;
  double setup1 = 0, setup2 = 0;
  bool ok = run_child(p1, order, setup1) && run_child(p2, order2, setup2);
  std::error_code ec;
  uintmax_t db_bytes = fs::file_size(dir / "cache.db", ec);
  if (ec) db_bytes = 0;
  fs::remove_all(dir, ec);
  // the models, in a cache of their own
  fs::create_directories(dir);
  std::vector<std::pair<std::string, ModelRow>> m1, m2;
  ok = ok && run_model_child(m1) && run_model_child(m2) && !m1.empty() && m1.size() == m2.size();
  fs::remove_all(dir, ec);
  if (!ok || order.empty()) {
    std::printf("bench_compile_cache: a child process failed\n");
    return 1;
  }
  std::printf("# CPU kernels compiled by process 1 (empty cache) and process 2 (same SN_CACHE_DIR); ms per kernel\n");
  std::printf(
      "# setup (a new CpuCompiler: LLJIT, and beside it the disk cache, opened where it exists): p1 %.2f ms, p2 %.2f "
      "ms (not in "
      "the rows)\n",
      setup1, setup2);
  std::printf("%-20s %3s %-28s %10s %10s %8s  %s\n", "case", "k", "kernel", "p1_ms", "p2_ms", "ratio", "p1/p2");
  double sum1 = 0, sum2 = 0, max2 = 0;
  size_t n = 0, from_disk = 0;
  for (const std::string& key : order) {
    const Row& a = p1[key];
    const Row& b = p2[key];
    std::string c = key.substr(0, key.find(' ')), k = key.substr(key.find(' ') + 1);
    std::printf("%-20s %3s %-28s %10.3f %10.3f %8.1f  %s/%s\n", c.c_str(), k.c_str(), a.name.substr(0, 28).c_str(),
                a.ms, b.ms, b.ms > 0 ? a.ms / b.ms : 0.0, a.how.c_str(), b.how.c_str());
    sum1 += a.ms;
    sum2 += b.ms;
    max2 = std::max(max2, b.ms);
    n++;
    from_disk += b.how == "disk";
  }
  std::printf("\n%-20s %3zu %-28s %10.3f %10.3f %8.1f\n", "mean per kernel", n, "", sum1 / double(n), sum2 / double(n),
              sum2 > 0 ? sum1 / sum2 : 0.0);
  std::printf(
      "# process 2: %zu of %zu kernels from disk, max %.3f ms; target <= 1 ms per kernel: %s (mean), %s (every "
      "kernel)\n",
      from_disk, n, max2, sum2 / double(n) <= 1.0 ? "met" : "NOT met", max2 <= 1.0 ? "met" : "NOT met");
  std::printf("# cache.db: %.1f KiB\n", double(db_bytes) / 1024.0);

  std::printf("\n# whole programs (compile_program on a fresh runtime, its device opened first): ms per program\n");
  std::printf("%-20s %8s %8s %10s %10s %8s %12s  %s\n", "model", "launches", "kernels", "p1_ms", "p2_ms", "ratio",
              "p2_ms/kernel", "p2 from disk");
  bool models_met = true, models_from_disk = true;
  for (size_t i = 0; i < m1.size(); i++) {
    const ModelRow& a = m1[i].second;
    const ModelRow& b = m2[i].second;
    const double per_kernel = b.kernels ? b.ms / double(b.kernels) : 0.0;
    std::printf("%-20s %8zu %8zu %10.2f %10.2f %8.1f %12.3f  %zu of %zu\n", m1[i].first.c_str(), a.launches, a.kernels,
                a.ms, b.ms, b.ms > 0 ? a.ms / b.ms : 0.0, per_kernel, b.from_disk, b.kernels);
    models_met = models_met && per_kernel <= 1.0;
    models_from_disk = models_from_disk && b.from_disk == b.kernels;
  }
  std::printf("# process 2, whole programs: target <= 1 ms per kernel: %s\n", models_met ? "met" : "NOT met");
  return from_disk == n && models_from_disk ? 0 : 1;
}
