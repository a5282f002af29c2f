// Tensor cores without the instruction (part of isel, after the parallel axes are indices): a Wmma of an emulated
// TensorCoreShape (Target::tensor_cores, `emulated`) becomes what the warp's tensor core would do, through local
// memory. Every lane stores its A and B fragment elements where the layout puts them in its warp's tiles (a Local
// Buffer, one tile per warp of the work-group), a Barrier, then each lane computes its C elements from the tiles (a
// Mulacc chain over k in float32), and a second Barrier before anyone may store again (the Wmma sits in the reduce
// loop). So a tensor-core kernel (the TC opt, the fragment layouts, the accumulation through C) runs, and is checked
// against the oracle, on any target with local memory: OpenCL on pocl in the tests.
#include <algorithm>
#include <unordered_map>

#include "core/codegen/codegen.h"
#include "core/codegen/kernel_util.h"

namespace sn {

const UOp* emulate_tensor_cores(Graph& g, const UOp* sink, const Target& target) {
  if (std::none_of(target.tensor_cores.begin(), target.tensor_cores.end(),
                   [](const TensorCoreShape& tc) { return tc.emulated; }))
    return sink;
  std::vector<const UOp*> topo = toposort(sink);
  bool any = false;
  for (const UOp* u : topo)
    if (u->op == Op::Wmma) {
      const TensorCoreShape* tc = target.tensor_core(u->as<std::string>());
      if (!tc) fail(Code::Internal, "tensor cores: the ", target.renderer, " target has no ", u->as<std::string>());
      any = any || tc->emulated;
    }
  if (!any) return sink;

  // The lane is the WARP axis, work-item dimension 0 (core/codegen/parallel.cpp); the warp's slot in
  // the work-group counts the other dimensions.
  const UOp* lane = nullptr;
  const UOp *lidx1 = nullptr, *lidx2 = nullptr;
  uint64_t next_buf = 1;
  for (const UOp* u : topo) {
    if (u->op == Op::Buffer) next_buf = std::max(next_buf, u->as<BufferArg>().id + 1);
    if (u->op != Op::Special) continue;
    const std::string& name = u->as<std::string>();
    if (name == "lidx0") lane = u;
    if (name == "lidx1") lidx1 = u;
    if (name == "lidx2") lidx2 = u;
  }
  const UOp* slot = g.cint(0);
  int64_t warps = 1;
  for (const UOp* x : {lidx2, lidx1}) {
    if (!x) continue;
    if (x->src(0)->op != Op::Const)
      fail(Code::Internal, "tensor cores: a work-group dimension without a constant size");
    slot = g.alu(Op::Add, g.alu(Op::Mul, slot, x->src(0)), x);
    warps *= int64_t(x->src(0)->const_int());
  }
  if (!lane) fail(Code::Internal, "tensor cores: a Wmma in a kernel without work-items");

  // One pair of tiles per kernel: each emulated Wmma stores into them after the one before has read
  // them (the rebuild visits the Wmmas in an order their dependencies allow).
  const UOp *a_tile = nullptr, *b_tile = nullptr, *last_read = nullptr;
  const TensorCoreShape* tile_shape = nullptr;
  Rebuilder rb(g, [&](const UOp* u, std::span<const UOp* const> s) -> const UOp* {
    if (u->op != Op::Wmma) return g.replace_src(u, s);
    const TensorCoreShape& tc = *target.tensor_core(u->as<std::string>());
    if (!tc.emulated) return g.replace_src(u, s);
    const DType f32 = dtypes::float32;
    if (!tile_shape) {
      int64_t bytes = warps * (tc.m * tc.k + tc.k * tc.n) * 4;
      if (bytes > target.local_memory_bytes)
        fail(Code::Unsupported, "tensor cores: emulating ", tc.name, " needs ", bytes, " bytes of local memory, the ",
             target.renderer, " target has ", target.local_memory_bytes);
      a_tile = g.make(Op::Buffer, f32, {}, BufferArg{next_buf++, warps * tc.m * tc.k, Device{}, AddrSpace::Local});
      b_tile = g.make(Op::Buffer, f32, {}, BufferArg{next_buf++, warps * tc.k * tc.n, Device{}, AddrSpace::Local});
      tile_shape = &tc;
    } else if (tile_shape->m != tc.m || tile_shape->n != tc.n || tile_shape->k != tc.k) {
      fail(Code::Unsupported, "tensor cores: one kernel emulates ", tile_shape->name, " and ", tc.name);
    }
    const UOp* a_free = last_read ? g.make(Op::After, f32, {a_tile, last_read}) : a_tile;
    const UOp* b_free = last_read ? g.make(Op::After, f32, {b_tile, last_read}) : b_tile;
    auto at = [&](const UOp* tile, int64_t tile_size, const UOp* row, int64_t cols, const UOp* col) {
      const UOp* i = g.alu(Op::Add, g.alu(Op::Mul, slot, g.cint(tile_size)),
                           g.alu(Op::Add, g.alu(Op::Mul, row, g.cint(cols)), col));
      return g.make(Op::Index, f32.as_ptr(AddrSpace::Local), {tile, i});
    };
    auto elem = [&](const UOp* frag, int e) -> const UOp* {
      return frag->op == Op::Vectorize ? frag->src(size_t(e)) : g.make(Op::Gep, frag->dtype.base(), {frag}, int64_t(e));
    };
    std::vector<const UOp*> stores;
    for (int e = 0; e < tc.a_elems; e++)
      stores.push_back(g.make(
          Op::Store, dtypes::void_,
          {at(a_free, tc.m * tc.k, fragment_coord(g, tc.a_row, lane, e), tc.k, fragment_coord(g, tc.a_col, lane, e)),
           g.cast(elem(s[0], e), f32)}));
    for (int e = 0; e < tc.b_elems; e++)
      stores.push_back(g.make(
          Op::Store, dtypes::void_,
          {at(b_free, tc.k * tc.n, fragment_coord(g, tc.b_row, lane, e), tc.n, fragment_coord(g, tc.b_col, lane, e)),
           g.cast(elem(s[1], e), f32)}));
    const UOp* filled = g.make(Op::Barrier, dtypes::void_, stores);
    const UOp* a_ready = g.make(Op::After, f32, {a_tile, filled});
    const UOp* b_ready = g.make(Op::After, f32, {b_tile, filled});
    std::vector<const UOp*> d;
    for (int e = 0; e < tc.c_elems; e++) {
      const UOp* row = fragment_coord(g, tc.c_row, lane, e);
      const UOp* col = fragment_coord(g, tc.c_col, lane, e);
      const UOp* acc = elem(s[2], e);
      for (int64_t kk = 0; kk < tc.k; kk++)
        acc = g.alu(Op::Mulacc, g.make(Op::Load, f32, {at(a_ready, tc.m * tc.k, row, tc.k, g.cint(kk))}),
                    g.make(Op::Load, f32, {at(b_ready, tc.k * tc.n, g.cint(kk), tc.n, col)}), acc);
      d.push_back(acc);
    }
    // Everyone has read the tiles before the next Wmma (the next step of the loop) writes them.
    const UOp* read = g.make(Op::Barrier, dtypes::void_, d);
    for (auto& x : d) x = g.make(Op::After, x->dtype, {x, read});
    last_read = read;
    return g.make(Op::Vectorize, u->dtype, d);
  });
  return rb.get(sink);
}

}  // namespace sn
