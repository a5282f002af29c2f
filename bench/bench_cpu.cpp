// CPU execution against baselines measured in the same run. One row per case:
//   name  ours_ms  baseline_ms  ratio  onednn_ms  ours/onednn  paired  GFLOP/s  oneDNN implementation
// (medians of repeated runs; ratio = ours / baseline, the baseline of the list below; ours/onednn = ours / the
// oneDNN primitive(s) doing the same work, "n/a" when bench_cpu was built without oneDNN or the case has none; where
// oneDNN has a row, ours and oneDNN's are timed in alternating blocks, and paired is the median of the blocks'
// round-by-round ratios: time_against_dnnl. GFLOP/s rows also give ours as a share of the FMA peak measured at the
// start of the run: fma_peak)
// SN_BENCH_THREADS=N runs ours and every baseline on N threads instead of one per core.
// then, per case, the cold compile: kernel count, total pipeline time, and per kernel the time of our lowering
// stages (optimize .. linearize) and of LLVM, and the stages of the slowest kernel (the goal is per kernel:
// an average over a row's kernels hid a 1.7 ms convolution beside its 0.2 ms weight packing). The model rows'
// total_ms is the cold compile of the whole model.
//
// Cases and their baselines:
//   add_4096x4096     c = a + b (f32)             memcpy moving the same bytes: the add reads 128 MiB and
//                                                 writes 64 MiB, so memcpy of 96 MiB (96 read + 96 written),
//                                                 split over the same thread count (bandwidth ceiling)
//   add_4096x4096_nt  the same add               STREAM's add (c = a + b) with non-temporal stores, AVX, same
//                                                 threads: the bandwidth an add can reach (3 arrays moved, not 4)
//   sum_4096x4096     sum of all 16M f32          the same for 64 MiB read: memcpy of 32 MiB, same threads
//   matmul_1024       (1024x1024) @ (1024x1024)   OpenBLAS cblas_sgemm on the same thread count; oneDNN matmul
//                                                 (f32, plain row-major operands like ours and OpenBLAS')
//   matmul_2048       (2048x2048) @ (2048x2048)   same
//   matmul_4096       (4096x4096) @ (4096x4096)   same
//   matmul_1020       (1020x1020) @ (1020x1020)   same: a size no vector tile divides (1020 = 4 x 255)
//   matvec_4096       (1x4096) @ (4096x4096)      OpenBLAS cblas_sgemv; oneDNN matmul with M = 1 (plain)
//   matvec_4096_cw    the same with the matrix a constant of our program (Binary data; a language model's
//                     decode step): its packing runs once, at compile time. Same baselines, on the plain matrix
//   matmul_32x4096    (32x4096) @ (4096x4096), both inputs: a batch of 32 through a linear layer whose weight
//                     is larger than the caches. OpenBLAS cblas_sgemm; oneDNN matmul with M = 32 (plain)
//   matmul_16x2048    (16x2048) @ (2048x2048), both inputs: 16 rows through a weight the caches hold (read in
//                     blocks of its rows, SPLIT(k, blocks, LOOP, top)). Same baselines
//   mlp_256x512x2048x512   x (256x512) -> linear 2048 + relu -> linear 512 (with biases), one program of ours;
//                     OpenBLAS: two sgemm + bias/relu loops; oneDNN: two matmuls (bias, relu post-op; weights in
//                     the layout it asks for, reordered outside the timed region: they are constants)
//   softmax_4096x4096 softmax over each row       a plain C++ loop (max, exp, sum, scale) split over rows on
//                                                 the same thread count, compiled -O2
//   conv2d_64x56x56   1x64x56x56 * 64x64x3x3,     im2col + cblas_sgemm (OpenBLAS), the classic CPU lowering;
//                     pad 1 (ResNet-18, batch 1)  oneDNN convolution (forward_inference, direct; layouts
//                                                 format_tag::any, input and weights reordered outside the timed
//                                                 region: only the primitive is timed)
//   conv2d_128x28x28, conv2d_256x14x14, conv2d_512x7x7   ResNet-18's other 3x3 convolutions (batch 1): same
//   conv2d_cnn1_b8    8x3x32x32 * 16x3x3x3        the same per image (a small CNN's first convolution)
//   conv2d_64to100x56 1x64x56x56 * 100x64x3x3     the same: output channels no vector divides
//   conv2d_cnn2_b8    8x16x16x16 * 32x16x3x3      the same (its second)
//   conv2d_stem_7x7s2 1x3x224x224 * 64x3x7x7, stride 2, pad 3: ResNet-18's stem; conv2d_64to128s2 1x64x56x56 *
//                     128x64x3x3, stride 2: its first downsampling; conv2d_1x1s2_64to128 the 1x1 stride-2 shortcut
//                     beside it. The same baselines (report rows: ResNet-18's layers beside its 3x3 ones)
//   conv2d_*_cw       ResNet-18's four 3x3 convolutions with the weight a constant of our program (Binary
//                     data) instead of an input: its packing runs once, at compile time, as oneDNN's weight
//                     reorder runs outside its timed region in every row
//   model_cnn_b8      a small CNN at batch 8 as ONE program of ours: conv 3->16 (32x32) + relu + maxpool 2x2,
//                     conv 16->32 (16x16) + relu + maxpool 2x2, flatten 2048 -> linear 10, softmax. oneDNN:
//                     the same layers as primitives (conv + bias + relu post-op, pooling, reorder to NCHW for the
//                     flatten, matmul + bias, softmax) run in sequence and timed together; the network input's
//                     reorder is outside the timed region. Its output is the reference for ours.
//   model_resnet18_b1 ResNet-18 forward, batch 1, 224x224 (batchnorm folded away: convs with bias): conv 7x7/2 +
//                     relu + maxpool 3x3/2, 8 basic blocks (1x1/2 downsample convs, residual adds), global
//                     avgpool, fc 1000; oneDNN: convs with bias, sum (residual) and relu post-ops, pooling, fc
//                     matmul, in sequence as above. Its output is the reference for ours.
//   model_cnn_b8_cw, model_resnet18_b1_cw   the same two models with weights and biases as constants of our
//                     program (Binary data) instead of inputs: what does not depend on the input (the weight
//                     packing) runs once, at compile time, as oneDNN's weight reorders run outside its timing
//   cumsum_1M         inclusive prefix sum of     a sequential C++ loop (one thread: a scan does not split
//                     1,000,000 f32               without extra passes); ours is the scan in blocks (of 4, then 16)
// Each result is checked against its baseline's (a wrong fast kernel is not a result); oneDNN's results are
// checked against OpenBLAS' where both exist.
//   bench_cpu [filter]    runs only the cases whose name contains `filter`
#include <cblas.h>
#include <dlfcn.h>
#include <immintrin.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/opt/search.h"
#include "core/pipeline.h"
#include "core/tensor/compose.h"
#include "core/tensor/tensor.h"

#ifdef SN_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace {

using namespace sn;
using Clock = std::chrono::steady_clock;

const char* g_filter = "";
int g_threads = 1;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Median of repeated runs: at least 3, more while the total stays under ~1.5 s (at most 25).
double median_ms(const std::function<void()>& fn) {
  fn();  // warm up: first touch of pages, thread pool start
  std::vector<double> t;
  double total = 0;
  while (t.size() < 3 || (total < 1500 && t.size() < 25)) {
    auto t0 = Clock::now();
    fn();
    t.push_back(ms_since(t0));
    total += t.back();
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Lets the previous library's idle worker threads go to sleep before the next one is timed: OpenBLAS' workers
// spin (sched_yield) for ~0.1 s after a call and OpenMP's (oneDNN) briefly too; on a machine with few cores a
// spinning leftover thread takes a core from the library being timed (seen here: oneDNN convolutions right after
// OpenBLAS timed at a flat ~8 ms instead of 0.1-5 ms).
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(250)); }

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// A float32 tensor of `shape` holding v as a constant of the program (Binary bytes viewed as floats).
const UOp* constant_floats(Graph& g, const std::vector<float>& v, const std::vector<int64_t>& shape) {
  std::string bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  return reshape(g, slice(g, binary_data(g, std::move(bytes)), 0, int64_t(v.size()), dtypes::float32), shape);
}

// Runs fn(begin, end) over [0, n) split into g_threads contiguous parts.
void parallel_rows(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  std::vector<std::thread> ts;
  int64_t per = (n + g_threads - 1) / g_threads;
  for (int t = 0; t < g_threads; t++) {
    int64_t b = t * per, e = std::min(n, b + per);
    if (b < e) ts.emplace_back(fn, b, e);
  }
  for (auto& th : ts) th.join();
}

// memcpy of `bytes` split over g_threads threads (the bandwidth baseline of add and sum).
double memcpy_ms(size_t bytes);

struct Case {
  std::string name;
  double ours_ms = 0, base_ms = 0;  // base_ms <= 0: the case has no baseline besides oneDNN
  size_t kernels = 0;
  double compile_ms = 0, llvm_ms = 0, stages_ms = 0;  // stages: our lowering (optimize .. linearize)
  double stages_max_ms = 0;                           // the slowest kernel's stages
  double gflop = 0;                                   // work of one run, when the case knows it
  double max_err = 0;
  bool ok = true;
  double dnnl_ms = -1;      // oneDNN doing the same work (< 0: not measured)
  double paired = -1;       // the median of each round's ours / oneDNN (time_against_dnnl; < 0: not measured)
  std::string dnnl_impl{};  // which oneDNN implementation(s) ran
  double dnnl_err = 0;      // oneDNN's result against OpenBLAS' (when both exist)
  bool dnnl_ok = true;
  bool checked = true;  // false: no reference was available (a model without oneDNN)
};

// A compiled program with its buffers: inputs filled from host data, outputs allocated.
struct Compiled {
  std::shared_ptr<const Program> program;
  std::vector<std::shared_ptr<Buffer>> in, out;
  void run() const { program->run(in, out); }
  std::vector<float> output(size_t i = 0) const {
    std::vector<float> v(size_t(out[i]->numel()));
    out[i]->copy_out(v.data(), v.size() * sizeof(float));
    return v;
  }
};

// Ours and oneDNN timed in alternating blocks, kRounds rounds of at least 3 runs and up to ~0.25 s each, and each
// one's median over all its runs. This 2-vCPU guest changes speed between states that last seconds (one kernel's
// two-thread median was 0.90, 1.08 and 1.58 ms in three runs of the same process; each half alone 0.85 ms), so two
// blocks timed seconds apart can land in different states and their ratio then says nothing about the kernels.
// Alternating puts both in the same states about as often. (OpenMP's workers spin briefly after a call, so a short
// pause separates the blocks.) After the pause each block warms up for 10 ms of runs, not one run: the cores take
// milliseconds to come back to speed after an idle pause, and a kernel of tens of microseconds timed right after
// one ran 3x slower (the small CNN's first convolution, 8x3x32x32 -> 16 channels, medians after a 30 ms pause:
// 0.12 ms with one run of warm-up, 0.078 ms with 2 ms of runs, 0.052 ms with 5 ms; 0.040 ms without pauses).
// Both libraries get the same warm-up; a kernel longer than 10 ms still warms up with one run.
// Besides the two medians over all runs (ours_ms, dnnl_ms: the ours/dnn column, comparable with earlier runs), the
// ratio of each round's two adjacent blocks, and their median (the paired column): a slow state that lasts through
// one block and not the next moves one round's ratio, where it moves a whole library's median when it happens to
// fall on more of one library's blocks (a matmul at 97% of the FMA peak read 0.96 and 1.11 against oneDNN in two
// runs of the same binary).
constexpr int kRounds = 5;
void time_against_dnnl(Case& c, const std::function<void()>& ours, const std::function<void()>& dnnl) {
  std::vector<double> a, b;
  auto block = [](const std::function<void()>& fn, std::vector<double>& t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    const auto warm = Clock::now();
    do fn();  // warm up after the other library ran
    while (ms_since(warm) < 10);
    double total = 0;
    for (size_t n = 0; n < 3 || (total < 250 && n < 9); n++) {
      auto t0 = Clock::now();
      fn();
      t.push_back(ms_since(t0));
      total += t.back();
    }
  };
  auto median = [](std::vector<double> t) {
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  settle();
  std::vector<double> rounds;  // each round's ours / oneDNN, from its two adjacent blocks
  for (int round = 0; round < kRounds; round++) {
    std::vector<double> ra, rb;
    block(dnnl, rb);
    block(ours, ra);
    rounds.push_back(median(ra) / median(rb));
    a.insert(a.end(), ra.begin(), ra.end());
    b.insert(b.end(), rb.begin(), rb.end());
  }
  c.ours_ms = median(a);
  c.dnnl_ms = median(b);
  c.paired = median(rounds);
}

// Compiles `outs` with a fresh runtime (nothing cached: the compile is cold) and fills the inputs.
Compiled compile_cold(Graph& g, const std::vector<const UOp*>& outs, const std::vector<std::vector<float>>& inputs,
                      Case& c) {
  static std::vector<std::unique_ptr<Runtime>> runtimes;  // kept alive: their devices own the JIT code
  runtimes.push_back(std::make_unique<Runtime>(RuntimeOptions{.debug = -1, .threads = g_threads}));
  Runtime& rt = *runtimes.back();
  auto t0 = Clock::now();
  Compiled out;
  out.program = compile_program(rt, g, outs);
  c.compile_ms = ms_since(t0);
  c.kernels = out.program->launches.size();
  for (const Launch& l : out.program->launches) {
    c.llvm_ms += l.kernel->compile_ms;
    double kernel_ms = 0;
    for (const auto& [stage, ms] : l.kernel->stage_ms) kernel_ms += ms;
    c.stages_ms += kernel_ms;
    c.stages_max_ms = std::max(c.stages_max_ms, kernel_ms);
  }
  for (size_t i = 0; i < inputs.size(); i++) {
    const TensorSpec& s = out.program->inputs[i];
    auto b = Buffer::allocate(out.program->device, s.dtype, s.shape);
    b->copy_in(inputs[i].data(), inputs[i].size() * sizeof(float));
    out.in.push_back(b);
  }
  for (size_t i = 0; i < out.program->outputs.size(); i++) out.out.push_back(out.program->allocate_output(i));
  return out;
}

// Largest |got - want| / (1 + |want|); false when over rtol (or the sizes differ).
bool max_rel_err(const std::vector<float>& got, const std::vector<float>& want, double rtol, double& max_err) {
  if (got.size() != want.size()) return false;
  bool ok = true;
  for (size_t i = 0; i < got.size(); i++) {
    double err = std::fabs(double(got[i]) - double(want[i])) / (1.0 + std::fabs(double(want[i])));
    max_err = std::max(max_err, err);
    if (!(err <= rtol)) ok = false;
  }
  return ok;
}

void compare(Case& c, const std::vector<float>& got, const std::vector<float>& want, double rtol) {
  if (!max_rel_err(got, want, rtol, c.max_err)) c.ok = false;
}

// oneDNN's result against the baseline's.
[[maybe_unused]] void compare_dnnl(Case& c, const std::vector<float>& got, const std::vector<float>& want,
                                   double rtol) {
  if (!max_rel_err(got, want, rtol, c.dnnl_err)) c.dnnl_ok = false;
}

bool selected(const std::string& name) { return std::strstr(name.c_str(), g_filter) != nullptr; }

double memcpy_ms(size_t bytes) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);  // both touched once: no page faults timed
  return median_ms([&] {
    parallel_rows(int64_t(bytes),
                  [&](int64_t b, int64_t e) { std::memcpy(dst.data() + b, src.data() + b, size_t(e - b)); });
  });
}

// ---- oneDNN --------------------------------------------------------------------------------------------------

#ifdef SN_HAVE_DNNL

namespace dn {
using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

engine& eng() {
  static engine e(engine::kind::cpu, 0);
  return e;
}
stream& strm() {
  static stream s(eng());
  return s;
}

memory::desc md(const memory::dims& d, tag t) { return memory::desc(d, dt::f32, t); }

memory make(const memory::desc& d, const float* data = nullptr) {
  memory m(d, eng());
  if (data != nullptr) std::memcpy(m.get_data_handle(), data, d.get_size());
  return m;
}

// m in layout d: m itself, or a reorder done here (not timed).
memory to_desc(const memory& m, const memory::desc& d) {
  if (m.get_desc() == d) return m;
  memory src = m, out(d, eng());
  reorder(src, out).execute(strm(), src, out);
  strm().wait();
  return out;
}

// The contents of m in the plain row-major layout `t` of its dims.
std::vector<float> read(const memory& m, tag t) {
  memory plain = to_desc(m, md(m.get_desc().dims(), t));
  std::vector<float> v(plain.get_desc().get_size() / sizeof(float));
  std::memcpy(v.data(), plain.get_data_handle(), v.size() * sizeof(float));
  return v;
}

// A sequence of primitives run in order (one layer, or a whole network). Constant operands (weights, biases) and
// the network's input are put in the layouts the primitives ask for when the net is built, outside run().
struct Net {
  std::vector<std::pair<primitive, std::unordered_map<int, memory>>> steps;
  std::vector<std::string> impls;
  double gflop = 0;

  void add(primitive p, std::unordered_map<int, memory> args, const std::string& impl) {
    steps.emplace_back(std::move(p), std::move(args));
    impls.push_back(impl);
  }
  void run() {
    for (auto& [p, args] : steps) p.execute(strm(), args);
    strm().wait();
  }
  // "brg:avx2 x3 + jit:avx2 x2": the implementations that ran, with their counts, in first-use order.
  std::string impl_summary() const {
    std::vector<std::pair<std::string, int>> counts;
    for (const std::string& s : impls) {
      auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& p) { return p.first == s; });
      if (it == counts.end())
        counts.emplace_back(s, 1);
      else
        it->second++;
    }
    std::string out;
    for (const auto& [s, n] : counts) out += (out.empty() ? "" : " + ") + s + (n > 1 ? " x" + std::to_string(n) : "");
    return out;
  }
  // m in layout d. A reorder step of the net (timed) unless it is the net's first step: that is the network's
  // input, prepared outside the timed region.
  memory ensure(const memory& m, const memory::desc& d) {
    if (m.get_desc() == d) return m;
    if (steps.empty()) return to_desc(m, d);
    memory out(d, eng());
    reorder::primitive_desc pd(eng(), m.get_desc(), eng(), d);
    add(reorder(pd), {{DNNL_ARG_FROM, m}, {DNNL_ARG_TO, out}}, std::string("reorder:") + pd.impl_info_str());
    return out;
  }

  // Convolution of x (N, CI, H, W) with co k x k filters (OIHW data w, bias b or null); then + residual (sum
  // post-op into the residual's memory, which the result overwrites) and relu (eltwise post-op) when asked.
  memory conv(const memory& x, int64_t co, int64_t k, int64_t s, int64_t p, const float* w, const float* b,
              bool with_relu, const memory* residual = nullptr) {
    memory::dims d = x.get_desc().dims();
    int64_t n = d[0], ci = d[1], oh = (d[2] + 2 * p - k) / s + 1, ow = (d[3] + 2 * p - k) / s + 1;
    memory::desc src = md(d, tag::any), wd = md({co, ci, k, k}, tag::any), bd = md({co}, tag::x);
    memory::desc dst = residual != nullptr ? residual->get_desc() : md({n, co, oh, ow}, tag::any);
    convolution_forward::desc desc =
        b != nullptr ? convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct, src, wd,
                                                 bd, dst, {s, s}, {p, p}, {p, p})
                     : convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct, src, wd,
                                                 dst, {s, s}, {p, p}, {p, p});
    post_ops po;
    if (residual != nullptr) po.append_sum(1.0f);
    if (with_relu) po.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
    primitive_attr attr;
    attr.set_post_ops(po);
    convolution_forward::primitive_desc pd(desc, attr, eng());
    memory xin = ensure(x, pd.src_desc());
    memory wm = to_desc(make(md({co, ci, k, k}, tag::oihw), w), pd.weights_desc());
    memory out = residual != nullptr ? *residual : make(pd.dst_desc());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, xin}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, out}};
    if (b != nullptr) args[DNNL_ARG_BIAS] = make(bd, b);
    add(convolution_forward(pd), std::move(args), pd.impl_info_str());
    gflop += 2.0 * double(n * co * oh * ow) * double(ci * k * k) / 1e9;
    return out;
  }

  memory pool(const memory& x, algorithm alg, int64_t k, int64_t s, int64_t p) {
    memory::dims d = x.get_desc().dims();
    int64_t oh = (d[2] + 2 * p - k) / s + 1, ow = (d[3] + 2 * p - k) / s + 1;
    pooling_forward::desc desc(prop_kind::forward_inference, alg, x.get_desc(), md({d[0], d[1], oh, ow}, tag::any),
                               {s, s}, {k, k}, {p, p}, {p, p});
    pooling_forward::primitive_desc pd(desc, eng());
    memory out = make(pd.dst_desc());
    add(pooling_forward(pd), {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, out}}, pd.impl_info_str());
    return out;
  }

  // (N, C, H, W) in any layout -> (N, C*H*W) row-major (a reorder to NCHW when needed, then a view).
  memory flatten(const memory& x) {
    memory::dims d = x.get_desc().dims();
    memory plain = ensure(x, md(d, d.size() == 4 ? tag::nchw : tag::ab));
    int64_t rest = 1;
    for (size_t i = 1; i < d.size(); i++) rest *= d[i];
    return memory(md({d[0], rest}, tag::ab), eng(), plain.get_data_handle());
  }

  // x (M, K) row-major @ w (K, N) row-major data (+ bias b (N) when given, relu when asked). weights_any: let
  // oneDNN choose the weights' layout (they are constants); otherwise plain row-major like ours and OpenBLAS'.
  memory matmul(const memory& x, int64_t nout, const float* w, const float* b, bool with_relu, bool weights_any) {
    memory::dims d = x.get_desc().dims();
    int64_t m = d[0], k = d[1];
    memory::desc src = md({m, k}, tag::ab), wd = md({k, nout}, weights_any ? tag::any : tag::ab),
                 bd = md({1, nout}, tag::ab), dst = md({m, nout}, tag::ab);
    dnnl::matmul::desc desc = b != nullptr ? dnnl::matmul::desc(src, wd, bd, dst) : dnnl::matmul::desc(src, wd, dst);
    post_ops po;
    if (with_relu) po.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
    primitive_attr attr;
    attr.set_post_ops(po);
    dnnl::matmul::primitive_desc pd(desc, attr, eng());
    memory xin = ensure(x, pd.src_desc());
    memory wm = to_desc(make(md({k, nout}, tag::ab), w), pd.weights_desc());
    memory out = make(pd.dst_desc());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, xin}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, out}};
    if (b != nullptr) args[DNNL_ARG_BIAS] = make(bd, b);
    add(dnnl::matmul(pd), std::move(args), pd.impl_info_str());
    gflop += 2.0 * double(m) * double(k) * double(nout) / 1e9;
    return out;
  }

  memory softmax(const memory& x, int axis) {
    softmax_forward::desc desc(prop_kind::forward_inference, x.get_desc(), axis);
    softmax_forward::primitive_desc pd(desc, eng());
    memory out = make(pd.dst_desc());
    add(softmax_forward(pd), {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, out}}, pd.impl_info_str());
    return out;
  }
};

}  // namespace dn
#else
#endif

// ---- networks, written once for both builders ----------------------------------------------------------------

// Weights of a network, drawn in the order its layers are built, so both builders get the same numbers.
struct Weights {
  uint32_t seed = 100;
  std::vector<float> next(size_t n, int64_t fan_in) {
    float a = std::sqrt(3.0f / float(fan_in));  // unit-variance outputs for unit-variance inputs
    return random_floats(n, seed++, -a, a);
  }
  std::vector<float> bias(size_t n) { return random_floats(n, seed++, -0.1f, 0.1f); }
};

// Ours: one graph; every weight is an input of the program (in creation order, after the network's input).
struct SinterNet {
  using T = const UOp*;
  Graph g;
  Weights wts;
  std::vector<std::vector<float>> data;  // the inputs' contents, in the program's input order
  double gflop = 0;
  bool const_weights = false;  // weights and biases as constants of the program, not inputs

  T param(const std::vector<int64_t>& shape, std::vector<float> v) {
    T t = input(g, dtypes::float32, shape);
    data.push_back(std::move(v));
    return t;
  }
  // A weight or bias: an input, or with const_weights a constant (what no input changes, a weight
  // packing, then runs once, at compile time).
  T weight(const std::vector<int64_t>& shape, std::vector<float> v) {
    return const_weights ? constant_floats(g, v, shape) : param(shape, std::move(v));
  }
  T conv(T x, int64_t co, int64_t k, int64_t s, int64_t p, bool with_relu, T residual = nullptr) {
    std::vector<int64_t> d = static_shape(x);
    int64_t ci = d[1], oh = (d[2] + 2 * p - k) / s + 1, ow = (d[3] + 2 * p - k) / s + 1;
    T w = weight({co, ci, k, k}, wts.next(size_t(co * ci * k * k), ci * k * k));
    T b = weight({co}, wts.bias(size_t(co)));
    T y = conv2d(g, x, w, b, {s, s}, {p, p});
    if (residual != nullptr) y = add(g, y, residual);
    if (with_relu) y = relu(g, y);
    gflop += 2.0 * double(d[0] * co * oh * ow) * double(ci * k * k) / 1e9;
    return y;
  }
  T maxpool(T x, int64_t k, int64_t s, int64_t p) { return max_pool2d(g, x, {k, k}, {s, s}, {p, p}); }
  T avgpool(T x, int64_t k, int64_t s, int64_t p) { return avg_pool2d(g, x, {k, k}, {s, s}, {p, p}); }
  T flatten(T x) {
    std::vector<int64_t> d = static_shape(x);
    return reshape(g, x, {d[0], numel(d) / d[0]});
  }
  T linear(T x, int64_t n, bool with_relu) {
    std::vector<int64_t> d = static_shape(x);
    T w = weight({d[1], n}, wts.next(size_t(d[1] * n), d[1]));
    T b = weight({n}, wts.bias(size_t(n)));
    T y = add(g, gemm(g, x, w), b);
    gflop += 2.0 * double(d[0]) * double(d[1]) * double(n) / 1e9;
    return with_relu ? relu(g, y) : y;
  }
  T softmax(T x) { return sn::softmax(g, x, 1); }
};

#ifdef SN_HAVE_DNNL
// oneDNN: the same layers as primitives in one dn::Net (see there for what is timed).
struct DnnlNet {
  using T = dnnl::memory;
  dn::Net net;
  Weights wts;

  T conv(const T& x, int64_t co, int64_t k, int64_t s, int64_t p, bool with_relu, const T& residual = T()) {
    int64_t ci = x.get_desc().dims()[1];
    std::vector<float> w = wts.next(size_t(co * ci * k * k), ci * k * k), b = wts.bias(size_t(co));
    return net.conv(x, co, k, s, p, w.data(), b.data(), with_relu, residual.get(true) != nullptr ? &residual : nullptr);
  }
  T maxpool(const T& x, int64_t k, int64_t s, int64_t p) { return net.pool(x, dnnl::algorithm::pooling_max, k, s, p); }
  T avgpool(const T& x, int64_t k, int64_t s, int64_t p) {
    return net.pool(x, dnnl::algorithm::pooling_avg_include_padding, k, s, p);
  }
  T flatten(const T& x) { return net.flatten(x); }
  T linear(const T& x, int64_t n, bool with_relu) {
    int64_t k = x.get_desc().dims()[1];
    std::vector<float> w = wts.next(size_t(k * n), k), b = wts.bias(size_t(n));
    return net.matmul(x, n, w.data(), b.data(), with_relu, /*weights_any=*/true);
  }
  T softmax(const T& x) { return net.softmax(x, 1); }
};
#endif

// A small CNN: conv 3->16 + relu + maxpool 2x2, conv 16->32 + relu + maxpool 2x2, flatten, linear 10, softmax.
template <class B>
typename B::T small_cnn(B& b, typename B::T x) {
  x = b.maxpool(b.conv(x, 16, 3, 1, 1, true), 2, 2, 0);
  x = b.maxpool(b.conv(x, 32, 3, 1, 1, true), 2, 2, 0);
  return b.softmax(b.linear(b.flatten(x), 10, false));
}

// ResNet-18 (batchnorm folded into the convolutions' weights and biases, so: convs with bias).
template <class B>
typename B::T resnet18(B& b, typename B::T x) {
  x = b.maxpool(b.conv(x, 64, 7, 2, 3, true), 3, 2, 1);
  int64_t c = 64;
  for (int stage = 0; stage < 4; stage++) {
    int64_t co = int64_t(64) << stage;
    for (int block = 0; block < 2; block++) {
      int64_t s = stage > 0 && block == 0 ? 2 : 1;
      typename B::T shortcut = s != 1 || co != c ? b.conv(x, co, 1, s, 0, false) : x;
      typename B::T y = b.conv(x, co, 3, s, 1, true);
      x = b.conv(y, co, 3, 1, 1, true, shortcut);  // relu(conv(y) + shortcut)
      c = co;
    }
  }
  return b.linear(b.flatten(b.avgpool(x, 7, 7, 0)), 1000, false);
}

// x (256, 512) -> linear 2048 + relu -> linear 512.
template <class B>
typename B::T mlp(B& b, typename B::T x) {
  return b.linear(b.linear(x, 2048, true), 512, false);
}

// ---- cases -----------------------------------------------------------------------------------------------------

#ifdef SN_HAVE_DNNL
// oneDNN's matmul (plain row-major operands) of a (m, k) @ w (k, n), timed and checked against `want`.
void dnnl_matmul(Case& c, const Compiled& ours, int64_t m, int64_t k, int64_t n, const std::vector<float>& a,
                 const std::vector<float>& w, const std::vector<float>& want, double rtol) {
  dn::Net net;
  dnnl::memory out = net.matmul(dn::make(dn::md({m, k}, dn::tag::ab), a.data()), n, w.data(), nullptr, false, false);
  time_against_dnnl(
      c, [&] { ours.run(); }, [&] { net.run(); });
  c.dnnl_impl = net.impl_summary();
  compare_dnnl(c, dn::read(out, dn::tag::ab), want, rtol);
}
#endif

// c = a + b on two 4096x4096 inputs, compiled and timed into c.ours_ms; the inputs in da, db.
Compiled timed_add(Case& c, std::vector<float>& da, std::vector<float>& db) {
  const int64_t n = 4096;
  Graph g;
  const UOp* a = input(g, dtypes::float32, {n, n});
  const UOp* b = input(g, dtypes::float32, {n, n});
  da = random_floats(size_t(n * n), 1);
  db = random_floats(size_t(n * n), 2);
  Compiled p = compile_cold(g, {add(g, a, b)}, {da, db}, c);
  c.ours_ms = median_ms([&] { p.run(); });
  return p;
}

Case bench_add() {
  Case c{"add_4096x4096"};
  std::vector<float> da, db;
  Compiled p = timed_add(c, da, db);
  c.base_ms = memcpy_ms(da.size() * sizeof(float) * 3 / 2);
  std::vector<float> want(da.size());
  for (size_t i = 0; i < want.size(); i++) want[i] = da[i] + db[i];
  compare(c, p.output(), want, 0);
  return c;
}

// STREAM's add, c = a + b over n floats, with non-temporal (streaming) stores: c is written around the
// caches, so the add moves 3 arrays, not 4 (no read of c's lines before they are written). 8-float AVX
// loads and streaming stores on 32-byte aligned arrays, split over the same threads; results checked.
__attribute__((target("avx"))) void stream_add(const float* a, const float* b, float* c, int64_t lo, int64_t hi) {
  int64_t i = lo;
  for (; i + 8 <= hi; i += 8) _mm256_stream_ps(c + i, _mm256_add_ps(_mm256_load_ps(a + i), _mm256_load_ps(b + i)));
  for (; i < hi; i++) c[i] = a[i] + b[i];
  _mm_sfence();
}

double stream_add_ms(const std::vector<float>& da, const std::vector<float>& db, std::vector<float>& out) {
  const size_t n = da.size();
  auto aligned = [](size_t count) {
    return std::unique_ptr<float, decltype(&std::free)>(
        static_cast<float*>(std::aligned_alloc(64, (count * sizeof(float) + 63) / 64 * 64)), &std::free);
  };
  auto a = aligned(n), b = aligned(n), c = aligned(n);
  std::memcpy(a.get(), da.data(), n * sizeof(float));
  std::memcpy(b.get(), db.data(), n * sizeof(float));
  std::memset(c.get(), 0, n * sizeof(float));  // touched once: no page faults timed
  // Split on 8-float boundaries so every thread's part stays 32-byte aligned.
  double ms = median_ms([&] {
    parallel_rows(int64_t(n / 8),
                  [&](int64_t lo, int64_t hi) { stream_add(a.get(), b.get(), c.get(), lo * 8, hi * 8); });
    for (size_t i = n / 8 * 8; i < n; i++) c.get()[i] = a.get()[i] + b.get()[i];
  });
  out.assign(c.get(), c.get() + n);
  return ms;
}

// The same add as add_4096x4096 against STREAM's add with streaming stores (issue 13's baseline for it).
Case bench_add_stream() {
  Case c{"add_4096x4096_nt"};
  std::vector<float> da, db;
  Compiled p = timed_add(c, da, db);
  std::vector<float> want;
  c.base_ms = stream_add_ms(da, db, want);
  compare(c, p.output(), want, 0);
  return c;
}

Case bench_sum() {
  Case c{"sum_4096x4096"};
  const int64_t n = 4096;
  Graph g;
  const UOp* a = input(g, dtypes::float32, {n, n});
  auto da = random_floats(size_t(n * n), 3);
  Compiled p = compile_cold(g, {reduce(g, a, Op::Add, {0, 1})}, {da}, c);
  c.ours_ms = median_ms([&] { p.run(); });
  c.base_ms = memcpy_ms(size_t(n * n) * sizeof(float) / 2);
  double want = 0;
  for (float x : da) want += x;
  // A float32 sum of 16M values in any order is within ~1e-4 relative of the exact one here.
  std::vector<float> got = p.output();
  c.max_err = std::fabs(got[0] - want) / (1 + std::fabs(want));
  c.ok = c.max_err < 1e-3;
  return c;
}

Case bench_matmul(int64_t n) {
  Case c{"matmul_" + std::to_string(n)};
  Graph g;
  const UOp* a = input(g, dtypes::float32, {n, n});
  const UOp* b = input(g, dtypes::float32, {n, n});
  auto da = random_floats(size_t(n * n), 4), db = random_floats(size_t(n * n), 5);
  Compiled p = compile_cold(g, {gemm(g, a, b)}, {da, db}, c);
  c.ours_ms = median_ms([&] { p.run(); });
  std::vector<float> want(size_t(n * n));
  auto blas = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0f, da.data(), int(n), db.data(),
                int(n), 0.0f, want.data(), int(n));
  };
  c.base_ms = median_ms(blas);
  c.gflop = 2.0 * double(n) * double(n) * double(n) / 1e9;
  // Float32 rounding of a dot product grows with its length: 1e-4 up to n = 2048 (as before), 2e-4 at 4096 (both
  // we and oneDNN land near 1e-4 there against OpenBLAS).
  double rtol = 1e-4 * double(std::max<int64_t>(1, n / 2048));
  compare(c, p.output(), want, rtol);
#ifdef SN_HAVE_DNNL
  dnnl_matmul(c, p, n, n, n, da, db, want, rtol);
#endif
  return c;
}

// A batch of `rows` through a linear layer: x (rows, n) @ w (n, n), a matrix-vector product for one
// row; w an input, or a constant of the program (`const_weights`: a language model's decode step,
// whose weights are constants).
Case bench_linear(int64_t n, int64_t rows, bool const_weights = false) {
  Case c{(rows == 1 ? "matvec_" : "matmul_" + std::to_string(rows) + "x") + std::to_string(n) +
         (const_weights ? "_cw" : "")};
  Graph g;
  auto dx = random_floats(size_t(rows * n), 12), dw = random_floats(size_t(n * n), 13);
  const UOp* x = input(g, dtypes::float32, {rows, n});
  const UOp* w = const_weights ? constant_floats(g, dw, {n, n}) : input(g, dtypes::float32, {n, n});
  std::vector<std::vector<float>> inputs{dx};
  if (!const_weights) inputs.push_back(dw);
  Compiled p = compile_cold(g, {gemm(g, x, w)}, inputs, c);
  c.ours_ms = median_ms([&] { p.run(); });
  std::vector<float> want(static_cast<size_t>(rows * n));
  // y[j] = sum_k x[k] w[k][j]: w^T x with w row-major (n rows of n); several rows: one sgemm
  c.base_ms = median_ms([&] {
    if (rows == 1)
      cblas_sgemv(CblasRowMajor, CblasTrans, int(n), int(n), 1.0f, dw.data(), int(n), dx.data(), 1, 0.0f, want.data(),
                  1);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(rows), int(n), int(n), 1.0f, dx.data(), int(n),
                  dw.data(), int(n), 0.0f, want.data(), int(n));
  });
  c.gflop = 2.0 * double(rows) * double(n) * double(n) / 1e9;
  compare(c, p.output(), want, 1e-4);
#ifdef SN_HAVE_DNNL
  dnnl_matmul(c, p, rows, n, n, dx, dw, want, 1e-4);
#endif
  return c;
}

// A whole network (`build` applied to both builders) as one program of ours against oneDNN's layers in sequence,
// whose output is the reference. `blas` (optional) is an OpenBLAS version: it returns its median ms and fills its
// output, against which ours and oneDNN's are checked instead.
Case bench_model(const std::string& name, const std::vector<int64_t>& in_shape, const auto& build, double rtol,
                 const std::function<double(const std::vector<std::vector<float>>&, std::vector<float>&)>& blas = {},
                 bool const_weights = false) {
  Case c{name};
  SinterNet s;
  s.const_weights = const_weights;
  const UOp* x = s.param(in_shape, random_floats(size_t(numel(in_shape)), 11));
  const UOp* y = build(s, x);
  Compiled p = compile_cold(s.g, {y}, s.data, c);
  c.ours_ms = median_ms([&] { p.run(); });
  c.gflop = s.gflop;
  c.base_ms = -1;
  std::vector<float> got = p.output(), want;
  if (blas) {
    c.base_ms = blas(s.data, want);
    compare(c, got, want, rtol);
  }
#ifdef SN_HAVE_DNNL
  DnnlNet d;
  dnnl::memory in = dn::make(dn::md(in_shape, in_shape.size() == 4 ? dn::tag::nchw : dn::tag::ab), s.data[0].data());
  dnnl::memory out = build(d, in);
  d.net.run();
  std::vector<float> ref = dn::read(out, dn::tag::ab);
  time_against_dnnl(
      c, [&] { p.run(); }, [&] { d.net.run(); });
  c.dnnl_impl = d.net.impl_summary();
  if (blas)
    compare_dnnl(c, ref, want, rtol);
  else
    compare(c, got, ref, rtol);
#else
  if (!blas) c.checked = false;
#endif
  return c;
}

// The MLP's OpenBLAS version: sgemm, bias + relu, sgemm, bias (weights in s.data order: x, w1, b1, w2, b2).
double mlp_blas(const std::vector<std::vector<float>>& d, std::vector<float>& out) {
  const int m = 256, k = 512, h = 2048, n = 512;
  std::vector<float> hid(size_t(m) * h);
  out.assign(size_t(m) * n, 0.0f);
  return median_ms([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, h, k, 1.0f, d[0].data(), k, d[1].data(), h, 0.0f,
                hid.data(), h);
    parallel_rows(m, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++)
        for (int j = 0; j < h; j++) hid[size_t(r * h + j)] = std::max(0.0f, hid[size_t(r * h + j)] + d[2][size_t(j)]);
    });
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, h, 1.0f, hid.data(), h, d[3].data(), n, 0.0f,
                out.data(), n);
    parallel_rows(m, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++)
        for (int j = 0; j < n; j++) out[size_t(r * n + j)] += d[4][size_t(j)];
    });
  });
}

Case bench_softmax() {
  Case c{"softmax_4096x4096"};
  const int64_t n = 4096;
  Graph g;
  const UOp* x = input(g, dtypes::float32, {n, n});
  auto dx = random_floats(size_t(n * n), 6, -4, 4);
  Compiled p = compile_cold(g, {softmax(g, x, 1)}, {dx}, c);
  c.ours_ms = median_ms([&] { p.run(); });
  std::vector<float> want(size_t(n * n));
  auto reference = [&] {
    parallel_rows(n, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) {
        const float* in = dx.data() + r * n;
        float* out = want.data() + r * n;
        float m = in[0];
        for (int64_t j = 1; j < n; j++) m = std::max(m, in[j]);
        float s = 0;
        for (int64_t j = 0; j < n; j++) s += (out[j] = std::exp(in[j] - m));
        float inv = 1.0f / s;
        for (int64_t j = 0; j < n; j++) out[j] *= inv;
      }
    });
  };
  c.base_ms = median_ms(reference);
  compare(c, p.output(), want, 1e-5);
  return c;
}

Case bench_cumsum() {
  Case c{"cumsum_1M"};
  const int64_t n = 1000000;
  Graph g;
  const UOp* x = input(g, dtypes::float32, {n});
  auto dx = random_floats(size_t(n), 7, -1, 1);
  Compiled p = compile_cold(g, {cumsum(g, x, 0)}, {dx}, c);
  c.ours_ms = median_ms([&] { p.run(); });
  std::vector<float> want(static_cast<size_t>(n));
  auto reference = [&] {
    float acc = 0;
    for (int64_t i = 0; i < n; i++) want[size_t(i)] = acc += dx[size_t(i)];
  };
  c.base_ms = median_ms(reference);
  // Sums of up to a million values of either sign: compare against the running magnitude, not the value.
  std::vector<float> got = p.output();
  double scale = 0;
  for (size_t i = 0; i < got.size(); i++) {
    scale += std::fabs(double(dx[i]));
    double err = std::fabs(double(got[i]) - double(want[i])) / (1.0 + scale);
    c.max_err = std::max(c.max_err, err);
    if (!(err <= 1e-5)) c.ok = false;
  }
  return c;
}

// conv2d of (n, ci, h, w) with co 3x3 filters, stride 1, pad 1. Baseline: per image, im2col + cblas_sgemm.
// const_weights: the weight is a constant of our program (Binary data), as oneDNN's is reordered
// outside its timed region: the packing of it runs once, at compile time.
// A KxK convolution with stride S and padding P (ResNet-18's: 3x3 s1 p1 by default; its 7x7 s2 p3 stem, 3x3 s2
// p1 downsampling and 1x1 s2 p0 shortcut too), batch N, CI -> CO channels at HxW.
Case bench_conv(const std::string& name, int64_t N, int64_t CI, int64_t CO, int64_t H, int64_t W,
                bool const_weights = false, int64_t K = 3, int64_t S = 1, int64_t P = 1) {
  Case c{name};
  const int64_t OH = (H + 2 * P - K) / S + 1, OW = (W + 2 * P - K) / S + 1;
  Graph g;
  const UOp* x = input(g, dtypes::float32, {N, CI, H, W});
  auto dx = random_floats(size_t(N * CI * H * W), 7), dw = random_floats(size_t(CO * CI * K * K), 8, -0.1f, 0.1f);
  const UOp* w = const_weights ? constant_floats(g, dw, {CO, CI, K, K}) : input(g, dtypes::float32, {CO, CI, K, K});
  std::vector<std::vector<float>> inputs{dx};
  if (!const_weights) inputs.push_back(dw);
  Compiled p = compile_cold(g, {conv2d(g, x, w, nullptr, {S, S}, {P, P})}, inputs, c);
  c.ours_ms = median_ms([&] { p.run(); });
  // im2col: cols[(ci*K + ky)*K + kx][y*OW + x] = padded input; then out (CO, OH*OW) = w (CO, CI*K*K) @ cols.
  std::vector<float> cols(size_t(CI * K * K * OH * OW)), want(size_t(N * CO * OH * OW));
  auto baseline = [&] {
    for (int64_t n = 0; n < N; n++) {
      const float* img = dx.data() + n * CI * H * W;
      for (int64_t ci = 0; ci < CI; ci++)
        for (int64_t ky = 0; ky < K; ky++)
          for (int64_t kx = 0; kx < K; kx++) {
            float* row = cols.data() + ((ci * K + ky) * K + kx) * OH * OW;
            for (int64_t y = 0; y < OH; y++)
              for (int64_t xx = 0; xx < OW; xx++) {
                int64_t iy = y * S + ky - P, ix = xx * S + kx - P;
                row[y * OW + xx] = (iy >= 0 && iy < H && ix >= 0 && ix < W) ? img[(ci * H + iy) * W + ix] : 0.0f;
              }
          }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(CO), int(OH * OW), int(CI * K * K), 1.0f, dw.data(),
                  int(CI * K * K), cols.data(), int(OH * OW), 0.0f, want.data() + n * CO * OH * OW, int(OH * OW));
    }
  };
  c.base_ms = median_ms(baseline);
  c.gflop = 2.0 * double(N * CO * OH * OW) * double(CI * K * K) / 1e9;
  compare(c, p.output(), want, 1e-4);
#ifdef SN_HAVE_DNNL
  // Layouts of oneDNN's choice; the input and weights are reordered into them here, outside the timed region.
  dn::Net net;
  dnnl::memory out =
      net.conv(dn::make(dn::md({N, CI, H, W}, dn::tag::nchw), dx.data()), CO, K, S, P, dw.data(), nullptr, false);
  time_against_dnnl(
      c, [&] { p.run(); }, [&] { net.run(); });
  c.dnnl_impl = net.impl_summary();
  compare_dnnl(c, dn::read(out, dn::tag::nchw), want, 1e-4);
#endif
  return c;
}

}  // namespace

// OpenBLAS 0.3.21 (Debian 12) does not know newer CPUs (Sapphire/Emerald Rapids report as
// "Prescott") and then runs its SSE3 kernels, 5-7x below what it does with the AVX-512 ones: a
// baseline that weak flatters us. It picks its kernels when the library loads, from
// OPENBLAS_CORETYPE, so the benchmark re-executes itself with the core named after the CPU's
// vector extensions.
void use_fast_openblas_kernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  std::string core = openblas_get_corename();
  std::string lower;
  for (char ch : core) lower += char(std::tolower(static_cast<unsigned char>(ch)));
  bool generic = lower == "prescott" || lower == "core2" || lower == "nehalem" || lower == "generic" ||
                 lower == "atom" || lower == "katmai" || lower == "unknown";
  if (!generic) return;
  __builtin_cpu_init();
  const char* want = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                     : __builtin_cpu_supports("avx2")  ? "Haswell"
                                                       : nullptr;
  if (want == nullptr) return;
  std::printf("# OpenBLAS detected this CPU as %s; re-running with OPENBLAS_CORETYPE=%s\n", core.c_str(), want);
  std::fflush(stdout);
  setenv("OPENBLAS_CORETYPE", want, 1);
  execv("/proc/self/exe", argv);
  std::printf("# re-exec failed: the OpenBLAS baselines use its generic kernels\n");
}

std::string fmt_ms(double ms) {
  if (ms <= 0) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", ms);
  return buf;
}

std::string fmt_ratio(double num, double den) {
  if (num <= 0 || den <= 0) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", num / den);
  return buf;
}

// "ours 12.3 / baseline 45.6 / onednn 50.1 GFLOP/s", the parts measured.
// The cores' float32 FMA peak, measured now: per thread, 12 independent chains of vector FMAs (enough to hide a
// 4-cycle latency at two per cycle; nothing is loaded), on g_threads threads for about 0.2 s. The GFLOP/s rows
// print ours as a share of it: a kernel near it has no speed left to find, and its ratio to a library that is
// also near it is mostly the noise of this host. 0 where the CPU has no AVX2 FMA. It is measured again before
// each GFLOP/s row is printed and the best so far is kept (noise only slows it: this guest measured 136 and 195
// GFLOP/s minutes apart).
// One body for both vector widths (each function needs its own target attribute for its intrinsics).
#define SN_FMA_CHAINS(name, isa, V, set1, fmadd, first)       \
  __attribute__((target(isa))) float name(int64_t iters) {    \
    V a[12];                                                  \
    const V m = set1(0.999999f), c = set1(1e-6f);             \
    for (int i = 0; i < 12; i++) a[i] = set1(float(i));       \
    for (int64_t k = 0; k < iters; k++) {                     \
      a[0] = fmadd(a[0], m, c), a[1] = fmadd(a[1], m, c);     \
      a[2] = fmadd(a[2], m, c), a[3] = fmadd(a[3], m, c);     \
      a[4] = fmadd(a[4], m, c), a[5] = fmadd(a[5], m, c);     \
      a[6] = fmadd(a[6], m, c), a[7] = fmadd(a[7], m, c);     \
      a[8] = fmadd(a[8], m, c), a[9] = fmadd(a[9], m, c);     \
      a[10] = fmadd(a[10], m, c), a[11] = fmadd(a[11], m, c); \
    }                                                         \
    float out = 0;                                            \
    for (int i = 0; i < 12; i++) out += first(a[i]);          \
    return out;                                               \
  }
SN_FMA_CHAINS(fma_chains_avx2, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_cvtss_f32)
SN_FMA_CHAINS(fma_chains_avx512, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_cvtss_f32)
#undef SN_FMA_CHAINS

struct Peak {
  double gflops = 0;
  const char* isa = "";
};
Peak fma_peak() {
  Peak p;
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return p;
  p.isa = avx512 ? "AVX-512" : "AVX2";
  const double flop_per_iter = 12.0 * (avx512 ? 16 : 8) * 2;
  auto chains = [avx512](int64_t iters) { return avx512 ? fma_chains_avx512(iters) : fma_chains_avx2(iters); };
  volatile float sink = 0;
  auto t0 = Clock::now();
  sink = sink + chains(1 << 20);  // also brings the core up to speed
  const double per_iter_ms = ms_since(t0) / double(1 << 20);
  const auto iters = int64_t(200.0 / std::max(per_iter_ms, 1e-9));
  std::vector<float> out(static_cast<size_t>(g_threads));
  auto t1 = Clock::now();
  parallel_rows(g_threads, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; t++) out[size_t(t)] = chains(iters);
  });
  const double ms = ms_since(t1);
  for (float v : out) sink = sink + v;
  p.gflops = flop_per_iter * double(iters) * g_threads / ms * 1e-6;
  return p;
}
Peak g_peak;

std::string fmt_gflops(const Case& c) {
  if (c.gflop <= 0) return "";
  std::string out;
  char buf[64];
  for (auto [label, ms] :
       {std::pair<const char*, double>{"ours", c.ours_ms}, {"baseline", c.base_ms}, {"onednn", c.dnnl_ms}}) {
    if (ms <= 0) continue;
    std::snprintf(buf, sizeof buf, "%s%s %.1f", out.empty() ? "" : " / ", label, c.gflop / ms * 1e3);
    out += buf;
  }
  if (g_peak.gflops > 0 && c.ours_ms > 0) {
    std::snprintf(buf, sizeof buf, " (ours %.0f%% of peak)", 100 * c.gflop / c.ours_ms * 1e3 / g_peak.gflops);
    out += buf;
  }
  return "   GFLOP/s " + out;
}

int main(int argc, char** argv) {
  // The cold compile below measures LLVM, not the disk cache (bench_compile_cache measures that).
  setenv("SN_CACHE", "0", 1);
  use_fast_openblas_kernels(argv);
  if (argc > 1) g_filter = argv[1];
  g_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  // SN_BENCH_THREADS=1 (with taskset -c 0) compares one core with one core, ours and every baseline.
  if (const char* t = std::getenv("SN_BENCH_THREADS"); t != nullptr && std::atoi(t) > 0) g_threads = std::atoi(t);
  openblas_set_num_threads(g_threads);
  std::printf("# CPU, %d threads (ours and baselines alike); times are medians in ms; ratio = ours / baseline\n",
              g_threads);
  std::printf("# OpenBLAS kernels: %s\n", openblas_get_corename());
  if (int beam = beam_width_from_env(); beam > 0)
    std::printf("# our kernels: BEAM search, width %d (SN_BEAM; the compile table includes the search)\n", beam);
  else
    std::printf("# our kernels: the heuristic (SN_BEAM=N for BEAM search)\n");
#ifdef SN_HAVE_DNNL
  {
    // oneDNN (Debian's build) threads with OpenMP, loaded with it: set its thread count like the others'.
    using SetThreads = void (*)(int);
    using GetThreads = int (*)();
    auto set_threads = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    auto get_threads = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
    if (set_threads != nullptr) set_threads(g_threads);
    const dnnl_version_t* v = dnnl_version();
    std::printf("# oneDNN %d.%d.%d, %d threads (OpenMP); ours/onednn = ours / oneDNN's primitives\n", v->major,
                v->minor, v->patch, get_threads != nullptr ? get_threads() : -1);
  }
#else
  std::printf(
      "# oneDNN: not built in (apt-get install libdnnl-dev, re-run cmake with SN_BENCH_ONEDNN=ON): its columns print "
      "n/a\n");
#endif
  g_peak = fma_peak();
  if (g_peak.gflops > 0)
    std::printf(
        "# FMA peak measured now: %.1f GFLOP/s (%s, %d threads; \"of peak\" below is ours against the best "
        "measured so far)\n",
        g_peak.gflops, g_peak.isa, g_threads);
  std::printf("%-22s %11s %11s %7s %11s %8s %7s\n", "name", "ours", "baseline", "ratio", "onednn", "ours/dnn",
              "paired");
  std::vector<Case> cases;
  auto run = [&](const std::string& name, const std::function<Case()>& fn) {
    if (!selected(name)) return;
    try {
      settle();
      Case c = fn();
      if (c.gflop > 0 && g_peak.gflops > 0) g_peak.gflops = std::max(g_peak.gflops, fma_peak().gflops);
      std::printf("%-22s %11s %11s %7s %11s %8s %7s%s%s%s%s%s\n", c.name.c_str(), fmt_ms(c.ours_ms).c_str(),
                  fmt_ms(c.base_ms).c_str(), fmt_ratio(c.ours_ms, c.base_ms).c_str(), fmt_ms(c.dnnl_ms).c_str(),
                  fmt_ratio(c.ours_ms, c.dnnl_ms).c_str(), fmt_ratio(c.paired, 1).c_str(), fmt_gflops(c).c_str(),
                  c.dnnl_impl.empty() ? "" : ("   [" + c.dnnl_impl + "]").c_str(), c.ok ? "" : "   RESULT MISMATCH",
                  c.dnnl_ok ? "" : "   ONEDNN MISMATCH",
                  c.checked ? "" : "   (unchecked: no reference without oneDNN)");
      std::fflush(stdout);
      cases.push_back(c);
    } catch (const std::exception& e) {
      std::printf("%-22s failed: %s\n", name.c_str(), e.what());
      std::fflush(stdout);
      Case c{name};
      c.ok = false;
      cases.push_back(c);
    }
  };
  run("add_4096x4096", bench_add);
  run("add_4096x4096_nt", bench_add_stream);
  run("sum_4096x4096", bench_sum);
  run("matmul_1024", [] { return bench_matmul(1024); });
  run("matmul_2048", [] { return bench_matmul(2048); });
  run("matmul_4096", [] { return bench_matmul(4096); });
  run("matmul_1020", [] { return bench_matmul(1020); });
  run("matvec_4096", [] { return bench_linear(4096, 1); });
  run("matvec_4096_cw", [] { return bench_linear(4096, 1, true); });
  run("matmul_32x4096", [] { return bench_linear(4096, 32); });
  run("matmul_16x2048", [] { return bench_linear(2048, 16); });
  run("mlp_256x512x2048x512", [] {
    return bench_model(
        "mlp_256x512x2048x512", {256, 512}, [](auto& b, auto x) { return mlp(b, x); }, 1e-4, mlp_blas);
  });
  run("softmax_4096x4096", bench_softmax);
  // ResNet-18's 3x3 stride-1 convolutions at batch 1
  run("conv2d_64x56x56", [] { return bench_conv("conv2d_64x56x56", 1, 64, 64, 56, 56); });
  run("conv2d_128x28x28", [] { return bench_conv("conv2d_128x28x28", 1, 128, 128, 28, 28); });
  run("conv2d_256x14x14", [] { return bench_conv("conv2d_256x14x14", 1, 256, 256, 14, 14); });
  run("conv2d_512x7x7", [] { return bench_conv("conv2d_512x7x7", 1, 512, 512, 7, 7); });
  // the convolutions of a small CNN (batch 8): 3->16 at 32x32, 16->32 at 16x16
  run("conv2d_cnn1_b8", [] { return bench_conv("conv2d_cnn1_b8", 8, 3, 16, 32, 32); });
  run("conv2d_cnn2_b8", [] { return bench_conv("conv2d_cnn2_b8", 8, 16, 32, 16, 16); });
  run("conv2d_64to100x56", [] { return bench_conv("conv2d_64to100x56", 1, 64, 100, 56, 56); });
  // ResNet-18's other convolutions at batch 1 (report rows): the 7x7 stride-2 stem, a 3x3 stride-2 downsampling
  // and the 1x1 stride-2 shortcut beside it
  run("conv2d_stem_7x7s2", [] { return bench_conv("conv2d_stem_7x7s2", 1, 3, 64, 224, 224, false, 7, 2, 3); });
  run("conv2d_64to128s2", [] { return bench_conv("conv2d_64to128s2", 1, 64, 128, 56, 56, false, 3, 2, 1); });
  run("conv2d_1x1s2_64to128", [] { return bench_conv("conv2d_1x1s2_64to128", 1, 64, 128, 56, 56, false, 1, 2, 0); });
  // ResNet-18's convolutions again, with the weight a constant of our program (see bench_conv)
  run("conv2d_64x56x56_cw", [] { return bench_conv("conv2d_64x56x56_cw", 1, 64, 64, 56, 56, true); });
  run("conv2d_128x28x28_cw", [] { return bench_conv("conv2d_128x28x28_cw", 1, 128, 128, 28, 28, true); });
  run("conv2d_256x14x14_cw", [] { return bench_conv("conv2d_256x14x14_cw", 1, 256, 256, 14, 14, true); });
  run("conv2d_512x7x7_cw", [] { return bench_conv("conv2d_512x7x7_cw", 1, 512, 512, 7, 7, true); });
  run("model_cnn_b8", [] {
    return bench_model(
        "model_cnn_b8", {8, 3, 32, 32}, [](auto& b, auto x) { return small_cnn(b, x); }, 1e-3);
  });
  run("model_resnet18_b1", [] {
    return bench_model(
        "model_resnet18_b1", {1, 3, 224, 224}, [](auto& b, auto x) { return resnet18(b, x); }, 1e-3);
  });
  // The same models with their weights as constants of our program, as a deployed model has them (oneDNN's
  // are prepared outside its timed region in every row): the weight packing runs once, at compile time.
  run("model_cnn_b8_cw", [] {
    return bench_model(
        "model_cnn_b8_cw", {8, 3, 32, 32}, [](auto& b, auto x) { return small_cnn(b, x); }, 1e-3, {}, true);
  });
  run("model_resnet18_b1_cw", [] {
    return bench_model(
        "model_resnet18_b1_cw", {1, 3, 224, 224}, [](auto& b, auto x) { return resnet18(b, x); }, 1e-3, {}, true);
  });
  run("cumsum_1M", bench_cumsum);

  if (g_peak.gflops > 0) std::printf("# FMA peak, the best measured in this run: %.1f GFLOP/s\n", g_peak.gflops);
  std::printf("\n# cold compile (fresh runtime: nothing cached; the model rows compile the whole model)\n");
  std::printf("%-22s %8s %12s %16s %16s %10s %10s %17s\n", "name", "kernels", "total_ms", "stages_ms/kernel",
              "llvm_ms/kernel", "max_err", "onednn_err", "stages_ms_slowest");
  bool all_ok = true;
  for (const Case& c : cases) {
    all_ok = all_ok && c.ok && c.dnnl_ok;
    std::printf("%-22s %8zu %12.1f %16.2f %16.2f %10.2g %10.2g %17.2f\n", c.name.c_str(), c.kernels, c.compile_ms,
                c.kernels ? c.stages_ms / double(c.kernels) : 0.0, c.kernels ? c.llvm_ms / double(c.kernels) : 0.0,
                c.max_err, c.dnnl_err, c.stages_max_ms);
  }
  return all_ok ? 0 : 1;
}
