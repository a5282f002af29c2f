// Gradients (core/tensor/gradient.h) checked against central finite differences in float64: the
// gradient graph is compiled and run on the CPU; the loss at each perturbed input is evaluated by
// the oracle, which shares no code with the gradient rules or the compiler.
#include <gtest/gtest.h>

#include "core/tensor/gradient.h"

#if SN_BACKEND_CPU
#include <array>
#include <cstdlib>
#include <functional>

#include "core/opt/opt.h"
#include "core/schedule/schedule.h"
#include "core/tensor/compose.h"
#include "tests/unit/test_pipeline_util.h"

namespace sn {
namespace {

using namespace testrt;
using Dims = std::vector<int64_t>;
using Build = std::function<const UOp*(Graph&, const std::vector<const UOp*>&)>;
// Makes the inputs it differentiates (float64, appended to xs) and returns y.
using Make = std::function<const UOp*(Graph&, std::vector<const UOp*>& xs)>;

const DType f64 = dtypes::float64;

struct Spec {
  std::vector<Dims> shapes;  // float64 inputs, each differentiated (the op cases)
  double lo = -2, hi = 2;    // input values (keep away from kinks and poles)
  double step = 1e-6;        // finite-difference step, relative to max(1, |x|)
};

// loss = sum(y * w) for a fixed random w of y's shape: every element of y's gradient differs, so a
// rule that mixes up elements or axes cannot pass.
const UOp* weighted_loss(Graph& g, const UOp* y, Rng& rng, oracle::BufferData& data) {
  Dims ys = static_shape(y);
  const UOp* w = input(g, y->dtype, ys);
  data[buffer_of(w)] = random_array(rng, y->dtype, {numel(ys)}, -1, 1);
  Dims all;
  for (size_t k = 0; k < ys.size(); k++) all.push_back(int64_t(k));
  return reduce(g, mul(g, y, w), Op::Add, all);
}

double loss_at(const UOp* loss, const oracle::BufferData& data) { return oracle::evaluate(loss, data).f.at(0); }

// Builds y = build(inputs), differentiates sum(y * w) by every input, runs the gradients compiled,
// and compares each element with a central difference of the oracle's loss. Returns the number of
// gradient elements checked.
int64_t check_gradient(const std::string& what, const Spec& spec, const Make& make, uint64_t seed = 1) {
  Graph g;
  Rng rng(seed);
  oracle::BufferData data;
  std::vector<const UOp*> xs;
  const UOp* y = make(g, xs);
  for (const UOp* x : xs) data[buffer_of(x)] = random_array(rng, f64, {numel(static_shape(x))}, spec.lo, spec.hi);
  const UOp* loss = weighted_loss(g, y, rng, data);
  std::vector<const UOp*> grads = gradient(g, loss, xs);
  std::vector<const UOp*> outs{loss};
  outs.insert(outs.end(), grads.begin(), grads.end());
  std::vector<Array> got = compile_and_run(g, outs, data);
  // the compiler must agree with the oracle on the gradient graph too (a compile bug, not a rule)
  std::vector<Array> want = oracle::evaluate(outs, data);
  for (size_t i = 1; i < outs.size(); i++)
    EXPECT_EQ(mismatch(got[i], want[i], 1e-9, 1e-9), "") << what << ": compiled gradient " << i - 1 << " vs oracle";

  double l0 = loss_at(loss, data);
  EXPECT_NEAR(got[0].f[0], l0, 1e-9 * (1 + std::fabs(l0))) << what << ": the loss itself";
  int64_t checked = 0;
  for (size_t i = 0; i < xs.size(); i++) {
    const UOp* buf = buffer_of(xs[i]);
    Array base = data.at(buf);
    EXPECT_EQ(got[i + 1].shape, static_shape(xs[i])) << what << ": gradient " << i << " shape";
    int bad = 0;
    for (size_t k = 0; k < base.f.size(); k++) {
      double x = base.f[k], h = spec.step * std::max(1.0, std::fabs(x));
      data[buf].f[k] = x + h;
      double up = loss_at(loss, data);
      data[buf].f[k] = x - h;
      double down = loss_at(loss, data);
      data[buf].f[k] = x;
      double fd = (up - down) / (2 * h), an = got[i + 1].f[k];
      // central differences are exact to O(h^2) plus rounding of the loss over 2h
      double tol = 1e-5 * (1 + std::fabs(fd)) + 1e-15 * (1 + std::fabs(l0)) / h;
      if (!(std::fabs(an - fd) <= tol) && bad++ < 4)
        ADD_FAILURE() << what << ": d loss / d x" << i << "[" << k << "] = " << an << ", finite difference " << fd
                      << " (x = " << x << ")";
      checked++;
    }
  }
  return checked;
}

struct Case {
  const char* name;
  Spec spec;
  Build build;
};

const UOp* c(Graph& g, double v) { return constant(g, f64, v); }

// Every op the tensor front builds, alone and in the compositions of compose.h.
std::vector<Case> op_cases() {
  auto un = [](Op op) { return [op](Graph& g, auto& x) { return unary(g, op, x[0]); }; };
  auto bin = [](Op op) { return [op](Graph& g, auto& x) { return binary(g, op, x[0], x[1]); }; };
  const Spec one{{{3, 4}}}, two{{{3, 4}, {3, 4}}}, positive{{{3, 4}}, 0.5, 3}, positive2{{{3, 4}, {3, 4}}, 0.5, 2};
  return {
      {"add", two, bin(Op::Add)},
      {"sub", two, bin(Op::Sub)},
      {"mul", two, bin(Op::Mul)},
      {"div", positive2, bin(Op::Div)},
      {"max", two, bin(Op::Max)},
      {"pow", positive2, bin(Op::Pow)},
      {"neg", one, un(Op::Neg)},
      {"recip", positive, un(Op::Recip)},
      {"exp2", one, un(Op::Exp2)},
      {"log2", positive, un(Op::Log2)},
      {"sin", one, un(Op::Sin)},
      {"sqrt", positive, un(Op::Sqrt)},
      {"trunc (zero almost everywhere)", one,
       [](Graph& g, auto& x) { return add(g, x[0], unary(g, Op::Trunc, mul(g, x[0], c(g, 3.3)))); }},
      {"mulacc", {{{3, 4}, {3, 4}, {3, 4}}}, [](Graph& g, auto& x) { return mulacc(g, x[0], x[1], x[2]); }},
      {"where over a comparison", two,
       [](Graph& g, auto& x) { return where(g, cmplt(g, x[0], x[1]), mul(g, x[0], x[1]), sub(g, x[0], x[1])); }},
      {"cast through float64 -> int32 (none) and back", one,
       [](Graph& g, auto& x) { return mul(g, x[0], cast(g, cast(g, mul(g, x[0], c(g, 4.3)), dtypes::int32), f64)); }},
      {"cast to float32 and back", Spec{{{3, 4}}, -2, 2, 1e-2},
       [](Graph& g, auto& x) { return mul(g, cast(g, cast(g, x[0], dtypes::float32), f64), c(g, 2)); }},
      {"broadcast operands", {{{3, 1}, {4}}}, bin(Op::Mul)},
      {"broadcast against a scalar", {{{2, 3}, {}}}, bin(Op::Sub)},
      {"reshape", one,
       [](Graph& g, auto& x) {
         return mul(g, reshape(g, x[0], {2, 6}), reshape(g, x[0], {2, 6}));
       }},
      {"permute",
       {{{2, 3, 4}}},
       [](Graph& g, auto& x) {
         return permute(g, x[0], {2, 0, 1});
       }},
      {"expand",
       {{{3, 1}}},
       [](Graph& g, auto& x) {
         return expand(g, x[0], {3, 5});
       }},
      {"flip", one,
       [](Graph& g, auto& x) {
         return mul(g, flip(g, x[0], {1, 0}), x[0]);
       }},
      {"pad", one,
       [](Graph& g, auto& x) {
         return pad(g, x[0], {1, 2}, {5, 7});
       }},
      {"shrink", one,
       [](Graph& g, auto& x) {
         return shrink(g, x[0], {1, 1}, {2, 2});
       }},
      {"reduce add",
       {{{2, 3, 4}}},
       [](Graph& g, auto& x) {
         return reduce(g, x[0], Op::Add, {0, 2});
       }},
      {"reduce max", {{{2, 3, 4}}}, [](Graph& g, auto& x) { return reduce(g, x[0], Op::Max, {1}); }},
      {"reduce max with ties (an expanded axis)",
       {{{3, 1}}},
       [](Graph& g, auto& x) {
         return reduce(g, expand(g, x[0], {3, 4}), Op::Max, {1});
       }},
      {"reduce mul", {{{2, 3}}, 0.5, 2}, [](Graph& g, auto& x) { return reduce(g, x[0], Op::Mul, {1}); }},
      {"contiguous markers", one,
       [](Graph& g, auto& x) {
         const UOp* t = g.make(Op::Contiguous, f64, {mul(g, x[0], x[0])});
         return contiguous_backward(g, mul(g, t, x[0]));
       }},
      // compositions (compose.h), through their primitives
      {"gemm", {{{3, 4}, {4, 5}}}, [](Graph& g, auto& x) { return gemm(g, x[0], x[1]); }},
      {"batched matmul", {{{2, 3, 4}, {4, 2}}}, [](Graph& g, auto& x) { return matmul(g, x[0], x[1]); }},
      {"conv2d",
       {{{2, 2, 5, 5}, {3, 2, 3, 3}, {3}}},
       [](Graph& g, auto& x) {
         return conv2d(g, x[0], x[1], x[2], {1, 1}, {1, 1});
       }},
      {"conv2d strided, dilated, grouped",
       {{{1, 4, 7, 7}, {4, 2, 2, 2}}},
       [](Graph& g, auto& x) {
         return conv2d(g, x[0], x[1], nullptr, {2, 2}, {1, 1}, {2, 2}, 2);
       }},
      {"max_pool2d",
       {{{1, 2, 4, 4}}},
       [](Graph& g, auto& x) {
         return max_pool2d(g, x[0], {2, 2}, {2, 2});
       }},
      {"max_pool2d, windows shorter than the stride (rows cut at the end)",
       {{{1, 2, 7, 8}}},
       [](Graph& g, auto& x) {
         return max_pool2d(g, x[0], {2, 1}, {3, 2});
       }},
      {"max_pool2d 3x3 stride 2, padded (windows that overlap)",
       {{{1, 2, 7, 6}}},
       [](Graph& g, auto& x) {
         return max_pool2d(g, x[0], {3, 3}, {2, 2}, {1, 1});
       }},
      {"avg_pool2d 2x2 stride 2, padded",
       {{{1, 2, 5, 5}}},
       [](Graph& g, auto& x) {
         return avg_pool2d(g, x[0], {2, 2}, {2, 2}, {1, 1});
       }},
      {"avg_pool2d padded",
       {{{1, 2, 4, 4}}},
       [](Graph& g, auto& x) {
         return avg_pool2d(g, x[0], {3, 3}, {1, 1}, {1, 1});
       }},
      {"softmax", one, [](Graph& g, auto& x) { return softmax(g, x[0], -1); }},
      {"log_softmax", one, [](Graph& g, auto& x) { return log_softmax(g, x[0], 0); }},
      {"layernorm", {{{3, 4}, {4}, {4}}}, [](Graph& g, auto& x) { return layernorm(g, x[0], 1, x[1], x[2], 1e-5); }},
      {"relu", one, [](Graph& g, auto& x) { return relu(g, x[0]); }},
      {"gelu", one, [](Graph& g, auto& x) { return gelu(g, x[0]); }},
      {"sigmoid", one, [](Graph& g, auto& x) { return sigmoid(g, x[0]); }},
      {"tanh", one, [](Graph& g, auto& x) { return tensor_tanh(g, x[0]); }},
      {"exp", one, [](Graph& g, auto& x) { return tensor_exp(g, x[0]); }},
      {"log", positive, [](Graph& g, auto& x) { return tensor_log(g, x[0]); }},
      {"cumsum", one, [](Graph& g, auto& x) { return cumsum(g, x[0], 1); }},
      {"cat",
       {{{2, 3}, {4, 3}}},
       [](Graph& g, auto& x) {
         const UOp* xs[] = {x[0], x[1]};
         return concat(g, xs, 0);
       }},
      {"stack", two,
       [](Graph& g, auto& x) {
         const UOp* xs[] = {x[0], x[1]};
         return stack(g, xs, 1);
       }},
      {"gather (indices carry no gradient)", one,
       [](Graph& g, auto& x) {
         const UOp* idx = cast(g, argmax(g, x[0], 1, true), dtypes::int32);
         return gather(g, x[0], 1, idx);
       }},
      {"take", one,
       [](Graph& g, auto& x) {
         return take(g, x[0], mod(g, arange(g, 5, dtypes::int32), constant(g, dtypes::int32, 3)));
       }},
      {"scatter_add",
       {{{3, 4}, {2, 4}}},
       [](Graph& g, auto& x) {
         const UOp* idx = reshape(g, mod(g, arange(g, 8, dtypes::int32), constant(g, dtypes::int32, 3)), {2, 4});
         return scatter_add(g, x[0], 0, idx, x[1]);
       }},
      {"index: gather rows, repeated and out of range",
       {{{4, 3}}},
       [](Graph& g, auto& x) {
         const UOp* ids[] = {sub(
             g,
             mod(g, mul(g, arange(g, 7, dtypes::int32), constant(g, dtypes::int32, 3)), constant(g, dtypes::int32, 6)),
             constant(g, dtypes::int32, 1))};
         return index(g, x[0], ids);
       }},
      {"index: a scalar and a vector index",
       {{{3, 4, 2}}},
       [](Graph& g, auto& x) {
         const UOp* ids[] = {constant(g, dtypes::int32, 1),
                             mod(g, arange(g, 5, dtypes::int32), constant(g, dtypes::int32, 4))};
         return index(g, x[0], ids);
       }},
      {"stack",
       {{{2, 3}, {2, 3}}},
       [](Graph& g, auto& x) {
         const UOp* xs[] = {x[0], mul(g, x[0], x[1]), x[1]};
         return stack_leading(g, xs);
       }},
      {"slice", one, [](Graph& g, auto& x) { return slice(g, x[0], 3, 5, f64); }},
      {"one_hot mask (no gradient through the indices)", one,
       [](Graph& g, auto& x) {
         const UOp* hot = cast(g, one_hot(g, argmax(g, x[0], 1), 4, dtypes::int32), f64);
         return mul(g, hot, x[0]);
       }},
  };
}

TEST(Gradient, EveryOpMatchesFiniteDifferences) {
  int64_t checked = 0;
  int cases = 0;
  for (const Case& k : op_cases()) {
    SCOPED_TRACE(k.name);
    Make make = [&](Graph& g, std::vector<const UOp*>& xs) {
      for (const Dims& s : k.spec.shapes) xs.push_back(input(g, f64, s));
      return k.build(g, xs);
    };
    checked += check_gradient(k.name, k.spec, make);
    cases++;
  }
  std::printf("gradients: %d ops, %lld elements checked against finite differences\n", cases, (long long)checked);
}

// Random differentiable float64 graphs: unary functions, binary ops with broadcast partners,
// movement ops, reductions and matmuls, chained.
class GradGraphGen {
 public:
  GradGraphGen(Graph& g, Rng& rng) : g_(g), rng_(rng) {}

  const UOp* build(std::vector<const UOp*>& xs) {
    xs_ = &xs;
    const UOp* x = fresh(random_shape());
    int steps = int(rng_.integer(2, 7));
    for (int s = 0; s < steps; s++) x = step(x);
    return x;
  }

 private:
  Graph& g_;
  Rng& rng_;
  std::vector<const UOp*>* xs_ = nullptr;

  Dims random_shape() {
    Dims s(size_t(rng_.integer(1, 3)));
    for (auto& d : s) d = rng_.integer(1, 4);
    return s;
  }
  const UOp* fresh(const Dims& s) {
    xs_->push_back(input(g_, f64, s));
    return xs_->back();
  }
  const UOp* c(double v) { return constant(g_, f64, v); }
  // A smooth function of x that stays bounded for bounded x.
  const UOp* smooth(const UOp* x) {
    switch (rng_.integer(0, 8)) {
      case 0:
        return unary(g_, Op::Sin, x);
      case 1:
        return tensor_tanh(g_, x);
      case 2:
        return sigmoid(g_, x);
      case 3:
        return mul(g_, x, x);
      case 4:
        return unary(g_, Op::Sqrt, add(g_, mul(g_, x, x), c(0.5)));
      case 5:
        return unary(g_, Op::Log2, add(g_, mul(g_, x, x), c(0.5)));
      case 6:
        return unary(g_, Op::Recip, add(g_, mul(g_, x, x), c(1)));
      case 7:
        return unary(g_, Op::Exp2, unary(g_, Op::Sin, x));
      default:
        return neg(g_, x);
    }
  }
  const UOp* partner(const UOp* x) {
    Dims ps = static_shape(x);
    for (auto& d : ps)
      if (rng_.coin(0.3)) d = 1;
    if (!ps.empty() && rng_.coin(0.2)) ps.erase(ps.begin());
    if (rng_.coin(0.3)) return smooth(x);  // reuse: the gradient sums over several paths
    return fresh(ps);
  }
  const UOp* step(const UOp* x) {
    Dims s = static_shape(x);
    switch (rng_.integer(0, 9)) {
      case 0:
      case 1:
        return smooth(x);
      case 2:
        return add(g_, x, partner(x));
      case 3:
        return mul(g_, x, partner(x));
      case 4:
        return rng_.coin() ? maximum(g_, x, partner(x)) : where(g_, cmplt(g_, x, partner(x)), x, smooth(x));
      case 5: {  // a movement op
        size_t k = size_t(rng_.integer(0, int64_t(s.size()) - 1));
        switch (rng_.integer(0, 4)) {
          case 0: {
            Dims order(s.size());
            for (size_t i = 0; i < s.size(); i++) order[i] = int64_t((i + 1) % s.size());
            return permute(g_, x, order);
          }
          case 1: {
            Dims f(s.size(), 0);
            f[k] = 1;
            return flip(g_, x, f);
          }
          case 2: {
            Dims off(s.size(), 0), ns = s;
            off[k] = 1, ns[k] += 2;
            return pad(g_, x, off, ns);
          }
          case 3: {
            if (s[k] < 2) return reshape(g_, x, {numel(s)});
            Dims off(s.size(), 0), ns = s;
            off[k] = 1, ns[k] -= 1;
            return shrink(g_, x, off, ns);
          }
          default: {
            Dims e = s;
            e.insert(e.begin() + int64_t(k), 1);
            Dims big = e;
            big[k] = 3;
            return expand(g_, reshape(g_, x, e), big);
          }
        }
      }
      case 6:
      case 7: {
        if (s.size() < 2 && rng_.coin()) return smooth(x);
        int64_t axis = rng_.integer(0, int64_t(s.size()) - 1);
        return reduce(g_, x, rng_.coin(0.6) ? Op::Add : Op::Max, {axis});
      }
      case 8: {  // a matmul against a fresh (last dim, n) input
        if (s.empty()) return smooth(x);
        const UOp* w = fresh({s.back(), rng_.integer(1, 4)});
        if (s.size() == 1) return reshape(g_, gemm(g_, reshape(g_, x, {1, s[0]}), w), {static_shape(w)[1]});
        return matmul(g_, x, w);
      }
      default:
        return softmax(g_, x, -1);
    }
  }
};

int env_or(const char* name, int n) {
  const char* e = std::getenv(name);
  return e && *e ? std::atoi(e) : n;
}

// SN_GRAD_FUZZ_CASES=N runs N graphs (CI: 150).
TEST(Gradient, RandomGraphsMatchFiniteDifferences) {
  int cases = env_or("SN_GRAD_FUZZ_CASES", 150), only = env_or("SN_GRAD_FUZZ_SEED", -1);
  int64_t checked = 0;
  for (int i = 0; i < cases; i++) {
    uint64_t seed = 1000 + uint64_t(i);
    if (only >= 0 && seed != uint64_t(only)) continue;
    Make make = [seed](Graph& g, std::vector<const UOp*>& xs) {
      Rng r(seed);
      const UOp* y = GradGraphGen(g, r).build(xs);
      if (std::getenv("SN_GRAD_FUZZ_SEED")) std::printf("%s\n", to_tree(y).c_str());
      return y;
    };
    checked += check_gradient(cat("random graph ", seed), Spec{}, make, seed);
    if (::testing::Test::HasFailure()) break;
  }
  std::printf("gradients: %d random graphs, %lld elements checked against finite differences\n", cases,
              (long long)checked);
}

TEST(Gradient, DetachStopsTheGradient) {
  Graph g;
  Rng rng(7);
  oracle::BufferData data;
  const UOp* x = input(g, f64, {5});
  data[buffer_of(x)] = random_array(rng, f64, {5});
  // d/dx sum(x * detach(x)) = detach(x) = x, where without Detach it would be 2x
  const UOp* loss = reduce(g, mul(g, x, detach(g, x)), Op::Add, {0});
  const UOp* d = gradient(g, loss, {&x, 1})[0];
  std::vector<Array> got = compile_and_run(g, {d}, data);
  for (size_t k = 0; k < 5; k++) EXPECT_DOUBLE_EQ(got[0].f[k], data[buffer_of(x)].f[k]);
}

// Windows that do not overlap (a 2x2 pool of stride 2) are rows of the input cut by a reshape, not
// tiles: the pool's gradient is one kernel, the max recomputed beside its mask (through tiles it was
// four, one a sum over the tiles with remainders in its indexes). Its values against the oracle.
// The gradient of sum(max_pool2d(x) * r) by x, x of (2, 4, 16, 16) and r of the pool's (2, 4, 8, 8)
// shape, random in `data`.
struct PoolGradient {
  Graph g;
  oracle::BufferData data;
  const UOp* x = nullptr;
  std::vector<const UOp*> d;
  PoolGradient(uint64_t seed, std::array<int64_t, 2> kernel, std::array<int64_t, 2> padding) {
    Rng rng(seed);
    x = input(g, dtypes::float32, {2, 4, 16, 16});
    const UOp* r = input(g, dtypes::float32, {2, 4, 8, 8});
    data[buffer_of(x)] = random_array(rng, dtypes::float32, {2 * 4 * 16 * 16});
    data[buffer_of(r)] = random_array(rng, dtypes::float32, {2 * 4 * 8 * 8});
    const UOp* loss = reduce(g, mul(g, max_pool2d(g, x, kernel, {2, 2}, padding), r), Op::Add, {0, 1, 2, 3});
    d = gradient(g, loss, {&x, 1});
  }
};

TEST(Gradient, APoolOfWindowsThatDoNotOverlapHasAOneKernelGradient) {
  PoolGradient p(9, {2, 2}, {0, 0});
  Graph& g = p.g;
  const std::vector<const UOp*>& d = p.d;
  oracle::BufferData& data = p.data;
  EXPECT_EQ(schedule_graph(g, d).kernels.size(), 1u);
  expect_matches_oracle(g, d, data, "2x2 max pool's gradient");
}

// Windows that overlap (ResNet's 3x3 stride-2 max pool) are stacked strided views of the input:
// the gradient sums the views' pads elementwise. No kernel sums over the tiles of the windows'
// expand (ResNet-18's training step ran that one in 10.8 ms, now 0.8 ms): the only reductions are
// over the 3x3 windows (the max, recomputed, and its ties).
TEST(Gradient, AnOverlappingPoolsGradientSumsNoTiles) {
  PoolGradient p(10, {3, 3}, {1, 1});
  Graph& g = p.g;
  const std::vector<const UOp*>& d = p.d;
  oracle::BufferData& data = p.data;
  const UOp* x = p.x;
  for (const auto& k : schedule_graph(g, d).kernels) {
    const std::string name = kernel_name(k.ast);
    if (name.rfind("r_", 0) == 0) {
      EXPECT_EQ(name.substr(name.size() - 4), "_3_3") << name;
    }
  }
  expect_matches_oracle(g, d, data, "3x3 stride-2 max pool's gradient");
  // The forward pool over a computed value (a relu) reads it at its 9 taps, each inlined: still
  // one kernel (ResNet-18's stem's bias and relu are computed in its max pool's kernel).
  const UOp* pooled = max_pool2d(g, relu(g, x), {3, 3}, {2, 2}, {1, 1});
  EXPECT_EQ(schedule_graph(g, std::vector<const UOp*>{pooled}).kernels.size(), 1u);
}

TEST(Gradient, UnusedInputsGetZerosAndWrtMayBeIntermediate) {
  Graph g;
  Rng rng(8);
  oracle::BufferData data;
  const UOp* x = input(g, dtypes::float32, {2, 3});
  const UOp* unused = input(g, dtypes::float32, {4});
  data[buffer_of(x)] = random_array(rng, dtypes::float32, {6});
  data[buffer_of(unused)] = random_array(rng, dtypes::float32, {4});
  const UOp* h = mul(g, x, constant(g, dtypes::float32, 3));
  const UOp* loss = reduce(g, mul(g, h, h), Op::Add, {0, 1});
  const UOp* wrt[] = {x, unused, h};
  std::vector<const UOp*> d = gradient(g, loss, wrt);
  std::vector<Array> got = compile_and_run(g, d, data);
  const Array& xv = data[buffer_of(x)];
  for (size_t k = 0; k < 6; k++) {
    EXPECT_NEAR(got[0].f[k], 18 * xv.f[k], 1e-5 * (1 + std::fabs(18 * xv.f[k])));  // d(9x^2)/dx
    EXPECT_NEAR(got[2].f[k], 6 * xv.f[k], 1e-5 * (1 + std::fabs(6 * xv.f[k])));    // d(h^2)/dh = 2h
  }
  EXPECT_EQ(got[1].shape, (Dims{4}));
  for (double v : got[1].f) EXPECT_EQ(v, 0);
}

TEST(Gradient, BadArgumentsAreClearErrors) {
  Graph g;
  const UOp* x = input(g, dtypes::float32, {3});
  const UOp* n = input(g, dtypes::int32, {3});
  auto message = [&](const UOp* loss, const UOp* wrt) {
    return testutil::error_of([&] { gradient(g, loss, {&wrt, 1}); });
  };
  EXPECT_NE(message(x, x).find("one element"), std::string::npos) << message(x, x);
  const UOp* isum = reduce(g, n, Op::Add, {0});
  EXPECT_NE(message(isum, x).find("float"), std::string::npos) << message(isum, x);
  const UOp* loss = reduce(g, x, Op::Add, {0});
  EXPECT_NE(message(loss, n).find("float tensors only"), std::string::npos) << message(loss, n);
  const UOp* through_bits = reduce(g, bitcast(g, bitcast(g, x, dtypes::int32), dtypes::float32), Op::Add, {0});
  // x -> int32 bits carries no gradient, so this one is zero, not an error
  EXPECT_EQ(message(through_bits, x), "");
  const UOp* f16 = bitcast(g, x, dtypes::float16);  // float32 -> float16 halves: (6,)
  const UOp* bad = reduce(g, cast(g, f16, dtypes::float32), Op::Add, {0});
  std::string m = message(bad, x);
  EXPECT_NE(m.find("Bitcast"), std::string::npos) << m;
}

// Found by the random graphs: the mask of max's gradient compares the recomputed input with the
// reduced max. The CPU computed one with libm's log2 (scalar) and the other with libmvec's (vector),
// which differ in the last bit, and the mask came out empty: one value must have the same bits
// wherever it is computed.
TEST(Gradient, MaxMaskOfARecomputedTranscendental) {
  Graph g;
  oracle::BufferData data;
  const UOp* a = input(g, dtypes::float64, {3, 1});
  data[buffer_of(a)] = Array::from_doubles(dtypes::float64, {3}, {1, 1.0173028656873737, 2});
  const UOp* b = input(g, dtypes::float64, {3, 1});
  data[buffer_of(b)] = Array::from_doubles(dtypes::float64, {3}, {0.5, 1.4659199388148973, 0.2});
  const UOp* w = input(g, dtypes::float64, {1, 1});
  data[buffer_of(w)] = Array::from_doubles(dtypes::float64, {1}, {0.7});
  const UOp* f = mul(g, unary(g, Op::Log2, add(g, mul(g, a, a), constant(g, dtypes::float64, 0.5))), b);
  const UOp* s = shrink(g, f, {1, 0}, {2, 1});
  const UOp* m = reduce(g, s, Op::Max, {0});
  const UOp* loss = reduce(g, mul(g, m, w), Op::Add, {0, 1});
  const UOp* wrt[] = {a, b};
  auto d = gradient(g, loss, wrt);
  expect_matches_oracle(g, {d[0]}, data, "da");
}

}  // namespace
}  // namespace sn
#endif
