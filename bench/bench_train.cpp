// A training step on the CPU: the gradients of a loss by every weight, against the model's forward
// pass measured in the same run. Models (bench/models.h): the small CNN at batch 8 and ResNet-18 at
// batch 1, weights as inputs; loss = sum(output * r) for a fixed random r of the output's shape, so
// the backward pass starts from a dense gradient. One row per model:
//   model  forward_ms  step_ms  ratio  (step / forward: the forward pass and the backward's
//                                       input and weight gradients; about 3 where each backward
//                                       convolution runs as fast as its forward one)
//   and the slowest kernel of the step (name, ms); with --kernels, the step's 12 slowest launches.
// Times are the median of 30 runs after 3 warm-ups (2 threads unless SN_BENCH_THREADS). The step
// compiles once; its compile time is printed too (with the disk cache as SN_CACHE leaves it: a
// second run reads the kernels from disk). No goal of the issues yet: report rows.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/models.h"
#include "core/pipeline.h"
#include "core/tensor/gradient.h"

namespace {

using namespace sn;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct Timed {
  double median_ms = 0;
  std::vector<double> launch_ms;  // per launch, the run with the median total
  std::string worst_name;
  double worst_ms = 0;
};

// Runs program p on random inputs: the median of `runs` timed runs, with per-launch times.
Timed time_program(const std::shared_ptr<const Program>& p, const std::shared_ptr<ComputeDevice>& dev, int runs) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  CommandBuffer cb(p);
  for (size_t i = 0; i < p->inputs.size(); i++) {
    auto b = Buffer::allocate(dev, p->inputs[i].dtype, p->inputs[i].shape);
    std::vector<float> v(static_cast<size_t>(b->numel()));
    for (float& f : v) f = u(rng);
    b->copy_in(v.data(), v.size() * sizeof(float));
    cb.set_input(i, b);
  }
  for (size_t i = 0; i < p->outputs.size(); i++) cb.set_output(i, p->allocate_output(i));
  cb.set_timing(true);
  for (int i = 0; i < 3; i++) cb.run();
  std::vector<std::pair<double, std::vector<double>>> all;
  for (int i = 0; i < runs; i++) {
    auto t0 = Clock::now();
    cb.run();
    all.emplace_back(ms_since(t0), cb.timings_ms());
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Timed t;
  t.median_ms = all[all.size() / 2].first;
  t.launch_ms = all[all.size() / 2].second;
  for (size_t k = 0; k < t.launch_ms.size() && k < p->launches.size(); k++)
    if (t.launch_ms[k] > t.worst_ms) t.worst_ms = t.launch_ms[k], t.worst_name = p->launches[k].kernel->name;
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const bool list_kernels = argc > 1 && std::string(argv[1]) == "--kernels";
  int threads = 2;
  if (const char* t = std::getenv("SN_BENCH_THREADS"); t != nullptr && std::atoi(t) > 0) threads = std::atoi(t);
  Runtime rt(RuntimeOptions{.threads = threads});
  auto dev = rt.device("CPU");
  std::printf("%-18s %10s %10s %7s %11s   %s\n", "model", "forward_ms", "step_ms", "ratio", "compile_ms",
              "slowest kernel of the step");
  for (const std::string model : {"small_cnn_b8", "resnet18_b1"}) {
    Graph g;
    bench::Model m = model == "small_cnn_b8" ? bench::small_cnn(g, 8) : bench::resnet18(g, 1);
    const UOp* out = m.outputs[0];
    std::vector<int64_t> shape, axes;
    for (const auto& d : *out->shape()) {
      axes.push_back(int64_t(shape.size()));
      shape.push_back(d.value);
    }
    const UOp* r = input(g, dtypes::float32, shape);
    const UOp* loss = reduce(g, mul(g, out, r), Op::Add, axes);
    std::vector<const UOp*> weights(m.inputs.begin() + 1, m.inputs.end());
    std::vector<const UOp*> step = gradient(g, loss, weights);
    step.insert(step.begin(), loss);
    CompileOptions fo, so;
    fo.inputs = m.inputs;
    so.inputs = m.inputs;
    so.inputs.push_back(r);
    auto forward = compile_program(rt, g, m.outputs, dev, fo);
    auto t0 = Clock::now();
    auto train = compile_program(rt, g, step, dev, so);
    const double compile_ms = ms_since(t0);
    Timed f = time_program(forward, dev, 30), s = time_program(train, dev, 30);
    std::printf("%-18s %10.3f %10.3f %7.2f %11.1f   %s %.3f ms (%zu launches)\n", model.c_str(), f.median_ms,
                s.median_ms, s.median_ms / f.median_ms, compile_ms, s.worst_name.c_str(), s.worst_ms,
                train->launches.size());
    if (list_kernels) {  // the step's 12 slowest launches
      std::vector<size_t> order(s.launch_ms.size());
      for (size_t k = 0; k < order.size(); k++) order[k] = k;
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s.launch_ms[a] > s.launch_ms[b]; });
      for (size_t i = 0; i < order.size() && i < 12; i++)
        std::printf("    %3zu %-32s %8.3f ms\n", order[i], train->launches[order[i]].kernel->name.c_str(),
                    s.launch_ms[order[i]]);
    }
  }
}
