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

}  // namespace sn::testk
