// A model compiled once with a symbolic batch (input_sym, a bounded variable b) against the same model
// compiled for one fixed batch size, both run at that size. One row per (model, batch):
//   name  static_ms  symbolic_ms  ratio (symbolic / static)  max_err
// Times are medians of repeated runs in the same process, on the same inputs; max_err is the largest
// difference between the two programs' outputs. Issue 11's goal: at the variable's largest value the
// symbolic program is within 10% of the static one (ratio <= 1.10). Rows at a smaller batch show what a
// program compiled for the worst case costs at an ordinary one.
//   mlp_b<N>      x (N,512) -> linear 2048 + relu -> linear 512 (biases); b in [1, 256]
//   cnn_b<N>      conv 3->16 (32x32) + relu + maxpool 2x2, conv 16->32 (16x16) + relu + maxpool 2x2,
//                 flatten 2048 -> linear 10, softmax; b in [1, 64]
//   bench_symbolic [filter]    runs only the rows whose name contains `filter`
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/pipeline.h"
#include "core/runtime/runtime.h"
#include "core/tensor/compose.h"
#include "core/tensor/tensor.h"

namespace {

using namespace sn;
using Clock = std::chrono::steady_clock;

// Median of repeated runs: at least 5, more while the total stays under ~1.5 s (at most 41).
double median_ms(const std::function<void()>& fn) {
  fn();
  std::vector<double> t;
  double total = 0;
  while (t.size() < 5 || (total < 1500 && t.size() < 41)) {
    auto t0 = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    total += t.back();
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-0.5f, 0.5f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// A model on a batch dim that is either a constant or the variable b: its inputs (data first, then the
// weights, each with its static shape at the batch size run) and its output.
struct Built {
  std::vector<const UOp*> inputs;
  std::vector<std::vector<int64_t>> shapes;
  const UOp* output = nullptr;
};

struct ModelBuilder {
  Graph& g;
  Built m;
  const UOp* weight(std::vector<int64_t> shape) {
    const UOp* w = input(g, dtypes::float32, shape);
    m.inputs.push_back(w);
    m.shapes.push_back(shape);
    return w;
  }
  const UOp* data(const Dim& batch, int64_t n, std::vector<int64_t> rest) {
    Shape s{batch};
    std::vector<int64_t> shape{n};
    for (int64_t d : rest) {
      s.push_back(Dim::of(d));
      shape.push_back(d);
    }
    const UOp* x = input_sym(g, dtypes::float32, s);
    m.inputs.push_back(x);
    m.shapes.push_back(shape);
    return x;
  }
  const UOp* linear(const UOp* x, int64_t k, int64_t o) {
    const UOp* w = weight({k, o});
    const UOp* b = weight({o});
    return add(g, matmul(g, x, w), b);
  }
  const UOp* conv(const UOp* x, int64_t ci, int64_t co) {
    const UOp* w = weight({co, ci, 3, 3});
    const UOp* b = weight({co});
    return relu(g, conv2d(g, x, w, b, {1, 1}, {1, 1}));
  }
};

Built mlp(Graph& g, const Dim& batch, int64_t n) {
  ModelBuilder b{g, {}};
  const UOp* x = b.data(batch, n, {512});
  const UOp* h = relu(g, b.linear(x, 512, 2048));
  b.m.output = b.linear(h, 2048, 512);
  return b.m;
}

Built cnn(Graph& g, const Dim& batch, int64_t n) {
  ModelBuilder b{g, {}};
  const UOp* x = b.data(batch, n, {3, 32, 32});
  const UOp* h = max_pool2d(g, b.conv(x, 3, 16), {2, 2}, {2, 2});
  h = max_pool2d(g, b.conv(h, 16, 32), {2, 2}, {2, 2});
  h = reshape_sym(g, h, Shape{batch, Dim::of(32 * 8 * 8)});
  b.m.output = softmax(g, b.linear(h, 2048, 10), 1);
  return b.m;
}

using ModelFn = Built (*)(Graph&, const Dim&, int64_t);

struct Timed {
  double ms = 0;
  std::vector<float> out;
};

// Compiles the model (batch `dim` built for size n), runs it at n on inputs made from `seed`.
Timed run_model(Runtime& rt, ModelFn fn, bool symbolic, int64_t bound, int64_t n) {
  Graph g;
  Dim batch = symbolic ? Dim{0, g.var("b", 1, bound)} : Dim::of(n);
  Built m = fn(g, batch, n);
  CompileOptions opts;
  opts.inputs = m.inputs;
  auto dev = rt.device("CPU");
  auto p = compile_program(rt, g, std::vector<const UOp*>{m.output}, dev, opts);
  if (std::getenv("SN_BENCH_OPTS"))
    for (const auto& l : p->launches)
      std::printf("#   %s %s: %s\n", symbolic ? "symbolic" : "static", l.kernel->name.c_str(),
                  opts_str(l.kernel->opts).c_str());
  std::vector<std::pair<std::string, int64_t>> vars;
  if (symbolic) vars.emplace_back("b", n);
  std::vector<std::shared_ptr<Buffer>> ins;
  for (size_t i = 0; i < m.shapes.size(); i++) {
    auto buf = Buffer::allocate(dev, dtypes::float32, m.shapes[i]);
    auto v = random_floats(size_t(buf->numel()), uint32_t(100 + i));
    buf->copy_in(v.data(), buf->nbytes());
    ins.push_back(buf);
  }
  auto out = symbolic ? p->allocate_output(0, vars) : p->allocate_output(0);
  std::vector<std::shared_ptr<Buffer>> outs{out};
  Timed t;
  t.ms = median_ms([&] { p->run(ins, outs, vars); });
  t.out.resize(size_t(out->numel()));
  out->copy_out(t.out.data(), out->nbytes());
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  setenv("SN_CACHE", "0", 1);  // both programs compile here, with the same compiler state
  const char* filter = argc > 1 ? argv[1] : "";
  Runtime rt;
  std::printf("# CPU; medians in ms; ratio = symbolic / static at the same batch (goal at the bound: <= 1.10)\n");
  std::printf("%-12s %8s %11s %11s %7s %10s\n", "name", "bound", "static", "symbolic", "ratio", "max_err");
  struct Row {
    const char* model;
    ModelFn fn;
    int64_t bound, n;
  };
  const Row rows[] = {
      {"mlp", mlp, 256, 256}, {"mlp", mlp, 256, 64}, {"cnn", cnn, 64, 64}, {"cnn", cnn, 64, 8}, {"cnn", cnn, 8, 8}};
  bool ok = true;
  for (const Row& r : rows) {
    std::string name = std::string(r.model) + "_b" + std::to_string(r.n);
    if (name.find(filter) == std::string::npos) continue;
    Timed s = run_model(rt, r.fn, false, r.bound, r.n);
    Timed v = run_model(rt, r.fn, true, r.bound, r.n);
    double err = 0;
    for (size_t i = 0; i < s.out.size(); i++) err = std::max(err, double(std::fabs(s.out[i] - v.out[i])));
    bool same = s.out.size() == v.out.size() && err < 1e-3;
    ok = ok && same;
    std::printf("%-12s %8lld %11.3f %11.3f %7.2f %10.2g%s\n", name.c_str(), static_cast<long long>(r.bound), s.ms, v.ms,
                v.ms / s.ms, err, same ? "" : "   RESULT MISMATCH");
    std::fflush(stdout);
  }
  return ok ? 0 : 1;
}
