// The hand-coded optimizer for targets with GLOBAL/LOCAL axes (learned from tinygrad's
// hand_coded_optimizations). Every LOOP axis starts as GLOBAL (opt.cpp). In order:
//   0. TC: a matmul of the inputs of one of the target's tensor cores runs on it (the first opt; its
//      innermost reduce axis that it takes; padded to the tile only where no tile fits as it is);
//      then no group reduce
//   1. GROUP_REDUCE: a reduction to few outputs (<= 2048) splits its largest reduce axis across
//      the work-items of a group (GROUPTOP: each work-item reduces a contiguous chunk), the
//      partials combined through local memory; an axis that no group size divides is padded
//   2. UPCAST: register tiles where loads are reused across an output axis (a load that does not
//      move along it), on the axes with the most reuse other than the innermost: 16 copies (4x4),
//      or 8 (4x2) where the innermost is reused too and step 5 gives it 8 (an 8x8 matmul tile);
//      smaller tiles where the work-items left would not give every multiprocessor 4 work-groups
//   3. UNROLL the innermost reduce axis of an ungrouped reduce (fully when short, else by 4; by 4
//      what a tensor core leaves of it); a pooling window (window_reduce) whole
//   4. LOCAL: up to three output axes, innermost first, split into the work-group (at most 128
//      work-items, fewer when a group reduce already uses some; at most 32 on an axis with an
//      outer axis after it); an axis that no local size divides is padded to a multiple of 8 when
//      that costs at most a quarter more work. The innermost axis becomes the group's dimension 0
//      (consecutive work-items: a warp)
//   5. UPCAST what stays global of the innermost axis, after LOCAL took its inner part: by 4 in a
//      plain elementwise kernel, by its share of step 2's tile where loads are reused across it. Each
//      work-item's copies are a work-group apart, so every load of a warp stays contiguous
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/codegen/kernel_util.h"
#include "core/opt/opt.h"

namespace sn {

namespace {

int64_t id_of(const UOp* r) { return r->as<RangeArg>().id; }
AxisType type_of(const UOp* r) { return r->as<RangeArg>().type; }

std::vector<const UOp*> ranges_typed(const UOp* sink, AxisType t) {
  std::vector<const UOp*> out;
  for (const UOp* r : ranges_of(sink))
    if (type_of(r) == t) out.push_back(r);
  return out;
}

// Elements of local memory a group reduce of `group` work-items needs per Reduce it splits.
int64_t local_bytes_for(const UOp* sink, const UOp* axis, int64_t group) {
  int64_t bytes = 0;
  for (const UOp* u : toposort(sink))
    if (u->op == Op::Reduce && std::find(u->src().begin() + 1, u->src().end(), axis) != u->src().end())
      bytes += group * std::max(4, u->dtype.itemsize());
  return bytes;
}

// The reduce axis worth splitting across a work-group: of a Reduce that runs directly in the
// grid (every loop around it is GLOBAL) and holds no other reduce, its longest constant axis.
const UOp* group_candidate(const UOp* sink) {
  std::vector<const UOp*> topo = toposort(sink);
  OpenRanges open(topo);
  const UOp* best = nullptr;
  for (const UOp* u : topo) {
    if (u->op != Op::Reduce || u->nsrc() < 2) continue;
    bool in_grid = true;
    for (const UOp* r : open.of(u)) in_grid = in_grid && type_of(r) == AxisType::Global;
    for (const UOp* x : toposort(u->src(0))) in_grid = in_grid && x->op != Op::Reduce;
    if (!in_grid) continue;
    for (size_t i = 1; i < u->nsrc(); i++) {
      const UOp* r = u->src(i);
      if (type_of(r) == AxisType::Reduce && const_bound(r) > 0 && (!best || const_bound(r) > const_bound(best)))
        best = r;
    }
  }
  return best;
}

}  // namespace

void gpu_heuristic(Graph& g, OptState& k, const Target& target, const LowerOptions& opts) {
  (void)opts;
  auto apply = [&](const Opt& o) { apply_opt(g, k, o, target); };
  auto try_apply = [&](const Opt& o) {
    OptState before = k;
    try {
      apply_opt(g, k, o, target);
      return true;
    } catch (const Error&) {
      k = before;
      return false;
    }
  };
  double outputs = 1;
  for (const UOp* r : ranges_typed(k.sink, AxisType::Global)) {
    int64_t n = const_bound(r);
    outputs *= n > 0 ? double(n) : 1e9;  // a symbolic axis counts as large
  }
  const int64_t max_items = std::min<int64_t>(128, target.max_local_total);
  int64_t group_items = 1;

  // 0. TC: tensor cores for a matmul of their input type (apply_tc checks the kernel's form). The
  // warp's lanes are the work-group's first dimension.
  bool tensor_core = false;
  int64_t warp_items = 1;
  {
    std::vector<const UOp*> rs = ranges_typed(k.sink, AxisType::Reduce);
    for (bool pad : {false, true})  // a tile that fits before one that needs padding
      for (size_t t = 0; t < target.tensor_cores.size() && !tensor_core; t++)
        for (size_t i = rs.size(); i-- > 0 && !tensor_core;)
          if (try_apply(Opt::tc(id_of(rs[i]), int64_t(t), pad))) {
            tensor_core = true;
            warp_items = target.tensor_cores[t].threads;
          }
  }

  // 1. GROUP_REDUCE for reductions to few outputs.
  if (target.has_shared && !k.nolocals && outputs <= 2048 && !tensor_core) {
    if (const UOp* axis = group_candidate(k.sink); axis && const_bound(axis) >= 32) {
      int64_t n = const_bound(axis);
      for (int64_t size : {256, 128, 64, 32, 16}) {
        if (size > target.max_local_total || size > target.max_local_size[0] || n < 2 * size) continue;
        if (local_bytes_for(k.sink, axis, size) > target.local_memory_bytes) continue;
        if (n % size != 0) {
          if (size != 16) continue;  // pad only to the smallest group: at most 15 wasted steps
          apply(Opt::padto(id_of(axis), size));
        }
        if (try_apply(Opt::group(id_of(axis), size, true))) {
          group_items = size;
          break;
        }
      }
    }
  }

  // 2. UPCAST: register tiles along axes whose copies share loads.
  std::vector<const UOp*> reduces;
  {
    std::vector<const UOp*> loops;
    classify_ranges(k.sink, &loops, &reduces);
  }
  // The innermost output axis (the largest id): LOCAL makes it the work-group's dimension 0. Its
  // register copies wait for step 5, since copies adjacent in memory would spread each load of a
  // warp over 4x the span. A 4096^3 f32 matmul on an H200: 4 TFLOP/s with a 16x1 tile whose warps
  // were 4 rows of 8 columns; 12.5 with a 4x4 tile of adjacent columns; 18.7 with 4x4 and 28.9
  // with 8x8 whose columns are a work-group apart, 32-column warps.
  const std::vector<const UOp*> output_axes = ranges_typed(k.sink, AxisType::Global);  // by id
  const UOp* inner = output_axes.empty() ? nullptr : output_axes.back();
  const int64_t inner_id = inner ? id_of(inner) : -1;
  bool inner_reused = false;
  int64_t upcast = 1, inner_copies = 1;
  // Whether the outputs divided among register copies (`copies` per work-item) still give every
  // multiprocessor 4 full work-groups to switch between. 3x3 convolutions at batch 1 on an H200
  // (132 SMs): 64x56x56 ran 0.223 / 0.093 / 0.072 / 0.065 ms with 16 / 8 / 4 / 1 copies,
  // 256x14x14 0.617 / 0.251 / 0.212 / 0.171 ms with 16 / 4 / 2 / 1.
  auto fills_units = [&](int64_t copies) {
    return target.compute_units <= 0 ||
           outputs / double(copies) >= 4.0 * double(target.compute_units) * double(max_items);
  };
  if (!reduces.empty() && outputs >= 1024 && group_items == 1) {
    int64_t other_copies = 1;  // what the other axes take, 4 at a time
    for (int pass = 0; pass < 2; pass++) {
      const UOp* best = nullptr;
      int64_t best_shared = 0;
      std::vector<const UOp*> loads;
      for (const UOp* u : toposort(k.sink))
        if (u->op == Op::Load) loads.push_back(u);
      for (const UOp* r : ranges_typed(k.sink, AxisType::Global)) {
        int64_t shared = 0;  // loads that do not move along r: each copy reuses them
        for (const UOp* l : loads) shared += !depends_on(l->src(0), r);
        if (id_of(r) == inner_id) {
          inner_reused = inner_reused || shared > 0;
          continue;
        }
        if (const_bound(r) < 8 || const_bound(r) % 4 != 0) continue;
        if (shared > best_shared) best = r, best_shared = shared;
      }
      if (pass == 0) {
        // The tile: 64 copies where the innermost axis takes its part after LOCAL (at most 32 of
        // it), 8x8; else 16 on the other axes. Halved while it would leave multiprocessors idle.
        // The innermost axis' part is the square root's (8 of 64, 4 of 32 or 16, 2 of 8 or 4).
        const int64_t n = const_bound(inner);
        const bool inner_room = inner_reused && n > 0 && n % (32 * 4) == 0;
        int64_t copies = inner_room ? 64 : 16;
        while (copies > 1 && !fills_units(copies)) copies /= 2;
        while (inner_room && 4 * inner_copies * inner_copies <= copies && n % (32 * 2 * inner_copies) == 0)
          inner_copies *= 2;
        other_copies = copies / inner_copies;
      }
      const int64_t amount = std::min<int64_t>(4, other_copies);
      if (!best || amount < 2) break;
      apply(Opt::upcast(id_of(best), amount));
      upcast *= amount;
      other_copies /= amount;
    }
  }
  // 3. UNROLL the innermost reduce axis of reduces that were not grouped.
  {
    std::vector<const UOp*> rs = ranges_typed(k.sink, AxisType::Reduce);
    // Pooling windows (window_reduce) are unrolled whole, as on the CPU: a pool reads each tap from
    // a view of its own (compose.cpp's window_axis_taps), which a loop over the window's rows would
    // load for every row, masked.
    std::vector<Opt> windows;
    bool pools = !rs.empty() && !tensor_core;
    for (const UOp* u : toposort(k.sink))
      if (u->op == Op::Reduce) pools = pools && window_reduce(u, &windows);
    int64_t steps = 1;
    for (const Opt& o : windows) steps *= o.amount;
    if (pools && windows.size() >= 2 && upcast * steps <= 64 && group_items == 1) {
      for (const Opt& o : windows) apply(o);
    } else if (!rs.empty() && group_items == 1) {
      const UOp* last = rs.back();
      int64_t n = const_bound(last);
      if (tensor_core) {
        // A Wmma already takes k elements of the reduce per step; 4 steps unrolled still overlap
        // their loads with the previous step's Wmmas (a bf16 4096^3 matmul on an H200: 63 -> 73
        // TFLOP/s).
        if (n >= 8 && n % 4 == 0) apply(Opt::unroll(id_of(last), 4));
      } else if (n > 1 && n <= 8 && upcast * n <= 64)
        apply(Opt::unroll(id_of(last), n));
      else if (n >= 16 && n % 4 == 0)
        apply(Opt::unroll(id_of(last), 4));
    }
  }

  // 4. LOCAL: split output axes into the work-group, innermost first.
  if (!k.nolocals) {
    int64_t budget = max_items / group_items / warp_items;
    std::vector<const UOp*> globals = ranges_typed(k.sink, AxisType::Global);
    std::sort(globals.begin(), globals.end(), [](const UOp* a, const UOp* b) { return id_of(a) > id_of(b); });
    int dims = group_items > 1 || warp_items > 1 ? 1 : 0;
    // Sizes are chosen innermost first; the splits are applied outermost first, since the newest
    // range is the innermost (parallel.cpp gives the largest id dimension 0).
    std::vector<Opt> locals;
    for (size_t i = 0; i < globals.size(); i++) {
      const UOp* r = globals[i];
      if (dims >= 3 || budget < 2) break;
      int64_t n = const_bound(r);
      if (n < 2) continue;
      // An axis takes at most 32 work-items while an outer axis may take the rest; the outermost
      // takes what is left (a 1-D kernel gets a whole work-group: 32-item groups cap a GPU's
      // occupancy, since an SM holds a bounded number of groups).
      bool outer_left = false;
      for (size_t j = i + 1; j < globals.size(); j++) outer_left = outer_left || const_bound(globals[j]) >= 2;
      const int64_t cap = outer_left ? 32 : budget;
      int64_t chosen = 0;
      for (int64_t size : {128, 64, 32, 16, 8, 4, 2})
        if (size <= cap && size <= budget && size <= target.max_local_size[size_t(dims)] && n % size == 0 &&
            n >= size) {
          chosen = size;
          break;
        }
      if (!chosen && n >= 16 && budget >= 8 && (n + 7) / 8 * 8 * 4 <= n * 5) {
        apply(Opt::padto(id_of(r), 8));
        chosen = 8;
      }
      if (!chosen) continue;
      locals.push_back(Opt::local(id_of(r), chosen));
      budget /= chosen;
      dims++;
    }
    for (size_t i = locals.size(); i-- > 0;) try_apply(locals[i]);
  }

  // 5. The innermost axis's work-item takes copies a work-group apart (4 in an elementwise kernel,
  // step 2's share of a tile): UPCAST of what stays global of it, after LOCAL took its inner part.
  // Each load of a warp stays contiguous, and there are fewer work-groups: one element per
  // work-item ran a 2^28-element add on an H200 at 0.6x of its copy bandwidth, bound by launching
  // 2M work-groups.
  if (inner && !ranges_typed(k.sink, AxisType::Local).empty() &&
      ((reduces.empty() && outputs >= 4096) || inner_reused)) {
    // What LOCAL left of the innermost axis (it keeps the axis' id); where LOCAL took all of it,
    // an elementwise kernel's innermost global axis that is left.
    const UOp* rest = k.range(inner_id);
    if (!rest && !inner_reused) {
      std::vector<const UOp*> globals = ranges_typed(k.sink, AxisType::Global);
      if (!globals.empty()) rest = globals.back();
    }
    const int64_t n = rest ? const_bound(rest) : 0;
    if (inner_reused) {
      if (rest && inner_copies > 1 && n % inner_copies == 0) try_apply(Opt::upcast(id_of(rest), inner_copies));
    } else if (rest && n % 4 == 0 && n >= 16) {
      try_apply(Opt::upcast(id_of(rest), 4));
    }
  }
}

}  // namespace sn
