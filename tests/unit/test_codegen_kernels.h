// Builders for hand-written kernel ASTs (the kernel IR of core/schedule/schedule.h), shared by
// the codegen and CPU backend tests.
#pragma once
#include <cstdint>
#include <vector>

#include "core/ir/graph.h"

namespace sn::testk {

struct KernelBuilder {
  Graph& g;

  const UOp* param(int64_t slot, DType dt, int64_t n) {
    return g.make(Op::Param, dt.as_ptr(AddrSpace::Global), {g.shape_uop(std::vector<int64_t>{n})},
                  ParamArg{slot, Device{{"CPU"}, false}, AddrSpace::Global});
  }
  const UOp* range(int64_t n, int64_t id, AxisType t = AxisType::Loop) { return range(g.cint(n), id, t); }
  const UOp* range(const UOp* bound, int64_t id, AxisType t = AxisType::Loop) {
    return g.make(Op::Range, dtypes::index, {bound}, RangeArg{id, t});
  }
  const UOp* index(const UOp* p, const UOp* idx) { return g.make(Op::Index, p->dtype, {p, idx}); }
  const UOp* load(const UOp* p, const UOp* idx) { return g.make(Op::Load, p->dtype.base(), {index(p, idx)}); }
  const UOp* load(const UOp* p, const UOp* idx, const UOp* alt, const UOp* gate) {
    return g.make(Op::Load, p->dtype.base(), {index(p, idx), alt, gate});
  }
  const UOp* store(const UOp* p, const UOp* idx, const UOp* v) {
    return g.make(Op::Store, dtypes::void_, {index(p, idx), v});
  }
  const UOp* store(const UOp* p, const UOp* idx, const UOp* v, const UOp* gate) {
    return g.make(Op::Store, dtypes::void_, {index(p, idx), v, gate});
  }
  const UOp* reduce(Op op, const UOp* v, std::vector<const UOp*> ranges) {
    std::vector<const UOp*> src{v};
    src.insert(src.end(), ranges.begin(), ranges.end());
    return g.make(Op::Reduce, v->dtype, src, ReduceArg{op, {}});
  }
  const UOp* sink(std::vector<const UOp*> stores, std::string name = "") {
    return g.make(Op::Sink, dtypes::void_, stores, std::move(name));
  }
  const UOp* c(int64_t v) { return g.cint(v); }
  const UOp* add(const UOp* a, const UOp* b) { return g.alu(Op::Add, a, b); }
  const UOp* mul(const UOp* a, const UOp* b) { return g.alu(Op::Mul, a, b); }
  // Row-major flat index of coordinates with the given dims.
  const UOp* flat(std::vector<const UOp*> idx, std::vector<int64_t> dims) {
    const UOp* out = idx[0];
    for (size_t i = 1; i < idx.size(); i++) out = add(mul(out, c(dims[i])), idx[i]);
    return out;
  }
};

// A tile wider than the panels it reads (AVX2's 16 lanes over a weight packed in 8-wide panels):
// out[i, j] = sum_k A[i, k] * (B[j / 8, k, j % 8] + (k < K - 1 ? C[j / 4, k, j % 4] : 0))
//             + D[(j + 3) % 8 + 8 * (j / 8)]
// over params A (slot 0, I x K), B (1, J x K), O (2, I x J), C (3, J x K) and D (4, J).
inline const UOp* panels_kernel(Graph& g, int64_t I, int64_t J, int64_t K) {
  KernelBuilder b{g};
  auto *A = b.param(0, dtypes::float32, I * K), *B = b.param(1, dtypes::float32, J * K),
       *C = b.param(3, dtypes::float32, J * K), *D = b.param(4, dtypes::float32, J),
       *O = b.param(2, dtypes::float32, I * J);
  auto *i = b.range(I, 0), *j = b.range(J, 1), *k = b.range(K, 2, AxisType::Reduce);
  auto mod = [&](const UOp* x, int64_t m) { return g.alu(Op::Mod, x, b.c(m)); };
  auto div = [&](const UOp* x, int64_t m) { return g.alu(Op::Idiv, x, b.c(m)); };
  auto panel = [&](int64_t w) { return b.add(b.add(b.mul(div(j, w), b.c(K * w)), b.mul(k, b.c(w))), mod(j, w)); };
  auto* gate = g.alu(Op::CmpLt, k, b.c(K - 1));
  auto* d = b.load(D, b.add(mod(b.add(j, b.c(3)), 8), b.mul(div(j, 8), b.c(8))));
  auto* v = b.mul(b.load(A, b.add(b.mul(i, b.c(K)), k)),
                  b.add(b.load(B, panel(8)), b.load(C, panel(4), g.cfloat(0.0), gate)));
  return b.sink({b.store(O, b.flat({i, j}, {I, J}), b.add(b.reduce(Op::Add, v, {k}), d))});
}
// panels_kernel's out[y, x] from its inputs.
template <class V>
double panels_reference(const V& a, const V& b, const V& c, const V& d, int64_t K, int64_t y, int64_t x) {
  double w = 0;
  for (int64_t z = 0; z < K; z++)
    w += double(a[size_t(y * K + z)]) * (double(b[size_t(x / 8 * K * 8 + z * 8 + x % 8)]) +
                                         (z < K - 1 ? double(c[size_t(x / 4 * K * 4 + z * 4 + x % 4)]) : 0));
  return w + double(d[size_t((x + 3) % 8 + 8 * (x / 8))]);
}

}  // namespace sn::testk
