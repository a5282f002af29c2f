// The scheduler driver: Callify (buffers -> slots, content hash), the materialization plan,
// Rangeify of each materialized value (rangeify.cpp), and the launch order.
//
// Fusion rules (what becomes its own kernel, and why):
//  1. Every output is stored into its own fresh buffer (the caller owns it). An output listed
//     twice is computed once; the second buffer gets a copy kernel.
//  2. Contiguous is stored: the user asked for a materialized value. What is stored is its source,
//     where that is computed from memory, so that the source's other readers load it too.
//  3. Everything else is inlined into the kernel that consumes it: elementwise chains, movement
//     ops (index math), casts, and reductions together with their elementwise inputs and
//     consumers. A value read with several indexings is recomputed at each, except:
//  4. A Reduce is computed in the loops its index uses, before the loops it does not use (x -
//     max(x) along a row, softmax's max read inside the sum of exp: one kernel). When a loop it
//     does not use is outside one it uses (a column sum broadcast along rows), inlining would
//     recompute the whole reduction at every point of that loop: it is stored.
//     (rangeify.cpp: check_reduce_scope)
//  5. A Reduce reached with two different indexings, or from two kernels, is stored: recomputing
//     would duplicate the whole reduction. (rangeify.cpp: note_use)
//  6. An elementwise value reached with more than a few distinct indexings in one kernel is
//     stored, so that chains of stencils do not grow their recomputation without bound.
//  7. An elementwise value inlined at several places (other indexings, other kernels) whose
//     computation reads more than 3 buffers is stored (tinygrad's rule): every copy would read
//     them all, and each kernel inlining it keeps them alive. Of a chain of such values only the
//     one read at several places is stored (store_costly).
//  8. A reduction to fewer values than there are cores, over many elements (a sum of
//     everything), is split in two: partial reductions of T contiguous chunks (stored, one per
//     chunk, spread over the cores) and a reduction of the T partials (split_reduces, before
//     anything else).
//  9. The right operand of a large matrix product is packed: B (..., K, N) is copied into
//     (..., N/P, K, P) panels, P the width of the target's narrowest register tile
//     (ScheduleOptions::packed_panel: 32, 8 with AVX2), so the tile reads each k-step's row of a
//     panel contiguously, one vector load per panel where the tile is wider than P, instead of a
//     4 KiB-strided walk down B, which aliases in L1 and misses the TLB: matmul 1024^2 17 -> 7 ms
//     on 2 cores (pack_matmul_operand). A left operand computed by elementwise ops (the previous
//     layer's activation) is stored first. With few rows B is packed only where it is made of
//     constants (a model's weights) and the device runs the packing once, at compile time
//     (ScheduleOptions::precomputes; a compile-only device's exported program would pack at
//     every run), or, from 8 rows, where B is larger than the caches (ScheduleOptions::cache_bytes).
//     Where P does not divide N the last panel is padded with zeros, and the product reads a
//     view of the panels shrunk to N: a tile whose lanes run past N still reads inside the
//     panels (PADTO then leaves its loads ungated; matmul 1020^2 42 -> 12.4 ms, as fast as 1024).
//     A panel copy wider than P (a convolution's weight, which conv2d packs in 32-wide panels
//     before any target is known) is made again P wide (repanel), so the tiles of both read
//     whole runs of their panels.
// 0. Calls are resolved first: a function's body is substituted for its GetTuples and fuses
//    with its callers like any other value; a precompiled function's arguments and results are
//    materialized (Contiguous), so its body's kernels are the same at every call.
// 10. The value of an in-place update (assign) is stored, and a copy kernel writes it into the
//     input buffer after every other kernel: a kernel that reads the old value may run anywhere
//     before, and none reads the buffer after (an After reads as the stored value).
// Rules 4-7 are found while lowering. A value flagged by 4-6 is stored at once for the rest of the
// round (so a deep chain of reductions is explored once, not once per reader). A round that found
// anything is lowered again with the values of the first rule that has any (4, else 5, else 6,
// else 7) stored for good: whether a value is duplicated or recomputed too often is only known once the
// reductions around it are stored. The schedule comes from the first round that flags nothing;
// each round stores at least one more value, so this ends.
#include "core/schedule/schedule.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "core/rewrite/pattern.h"
#include "core/schedule/indexing.h"
#include "core/schedule/rangeify.h"
#include "core/tensor/function.h"
#include "core/tensor/tensor.h"
#include "core/util/checked.h"

namespace sn {

namespace {

// Elements to allocate for a value of this shape: its size, or the largest size its symbolic
// dims allow.
int64_t alloc_size(Graph& g, const UOp* u) {
  const Shape& s = *u->shape();
  if (auto n = shape_numel(s)) return *n;
  const MinMax& m = sched::numel_uop(g, s)->minmax();
  if (m.is_float || m.hi > i128(std::numeric_limits<int64_t>::max()))
    fail(Code::Unsupported, "schedule: cannot bound the size of the symbolic shape ", shape_str(s), " of ",
         op_name(u->op));
  return int64_t(std::max<i128>(m.hi, 0));
}

uint64_t hash_dtype(DType d) {
  return (uint64_t(d.scalar) << 24) | (uint64_t(d.lanes) << 8) | (uint64_t(d.ptr) << 4) | uint64_t(d.addrspace);
}

// Content hash of the program with each input Buffer replaced by its slot: the same program on
// other buffers (of the same sizes and devices) hashes the same.
uint64_t program_hash(const std::vector<const UOp*>& order, std::span<const UOp* const> roots,
                      const std::unordered_map<const UOp*, int>& input_slot) {
  std::unordered_map<const UOp*, uint64_t> h;
  for (const UOp* u : order) {
    uint64_t x = hash_combine(uint64_t(u->op) + 1, hash_dtype(u->dtype));
    if (u->op == Op::Buffer) {
      const BufferArg& b = u->as<BufferArg>();
      x = hash_combine(x, uint64_t(input_slot.at(u)));
      x = hash_combine(x, uint64_t(b.size));
      x = hash_combine(x, hash_arg(Arg{b.device.str()}));
      x = hash_combine(x, uint64_t(b.addrspace));
    } else {
      x = hash_combine(x, u->graph()->arg_hash(u));
    }
    for (const UOp* s : u->src()) x = hash_combine(x, h.at(s));
    h.emplace(u, x);
  }
  uint64_t out = hash_combine(0x5c4ed01e, roots.size());
  for (const UOp* o : roots) out = hash_combine(out, h.at(o));
  return out;
}

// DefineVars under `root`, in first-seen order of a depth-first walk.
void collect_vars(const UOp* root, std::unordered_set<const UOp*>& seen, std::vector<const UOp*>& vars) {
  std::vector<const UOp*> stack{root};
  std::unordered_set<const UOp*> visited{root};
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (u->op == Op::DefineVar && seen.insert(u).second) vars.push_back(u);
    for (size_t i = u->nsrc(); i-- > 0;)
      if (visited.insert(u->src(i)).second) stack.push_back(u->src(i));
  }
}

// Of the costly values (rule 7), stores those whose sharing is their own: a value read only by
// one other costly value (x - m read by * c, read by exp2, read twice) is shared just because
// its reader is, and storing the reader removes every recomputation of both.
void store_costly(const std::vector<const UOp*>& costly, const std::unordered_map<const UOp*, const UOp*>& sole_reader,
                  const sched::Plan& plan, std::unordered_set<const UOp*>& realized) {
  std::unordered_set<const UOp*> is_costly(costly.begin(), costly.end());
  for (const UOp* c : costly) {
    const UOp* u = c;
    bool inherited = false;
    for (;;) {  // up through the single readers, movement ops included
      auto it = sole_reader.find(u);
      if (it == sole_reader.end() || it->second == nullptr) break;
      u = it->second;
      if (plan.stored_in.count(u) || realized.count(u)) break;
      if (is_costly.count(u)) {
        inherited = true;
        break;
      }
      if (!is_elementwise(u->op) && !is_movement(u->op)) break;
    }
    if (!inherited) realized.insert(c);
  }
}

// Rule 8. Reduce(x) over the trailing axes of x, with few outputs and many reduced elements,
// becomes Reduce(Contiguous(Reduce(x viewed as (outer..., T, N/T)) over the last axis)) over T.
// Float16/bfloat16/fp8 partials would be rounded to the narrow type (a reduce accumulates them in
// float32): those are left alone.
const UOp* split_reduce(Graph& g, const UOp* u) {
  constexpr int64_t kMaxOutputs = 16, kMinElements = int64_t(1) << 16, kMinChunk = 4096;
  const UOp* x = u->src(0);
  const Shape* xs = x->shape();
  DType dt = u->dtype;
  if (!xs || dt.lanes != 1 || !(dt.scalar == Scalar::Float32 || dt.scalar == Scalar::Float64 || dt.is_int()))
    return nullptr;
  std::vector<int64_t> dims;
  for (const Dim& d : *xs) {
    if (!d.is_const()) return nullptr;
    dims.push_back(d.value);
  }
  std::vector<int64_t> axes = u->as<ReduceArg>().axes;
  std::sort(axes.begin(), axes.end());
  size_t rank = dims.size(), k = axes.size();
  if (k == 0 || k > rank) return nullptr;
  for (size_t i = 0; i < k; i++)
    if (axes[i] != int64_t(rank - k + i)) return nullptr;  // not the trailing axes
  int64_t outer = 1, n = 1;
  for (size_t i = 0; i < rank; i++) {
    int64_t& p = i < rank - k ? outer : n;
    p = checked_mul(p, dims[i], "split reduce: element count");
  }
  if (outer >= kMaxOutputs || n < kMinElements) return nullptr;
  int64_t chunks = 0;
  for (int64_t t : {64, 32, 16, 8, 4, 2})
    if (n % t == 0 && n / t >= kMinChunk) {
      chunks = t;
      break;
    }
  if (chunks == 0) return nullptr;
  Op op = u->as<ReduceArg>().op;
  std::vector<int64_t> split(dims.begin(), dims.begin() + long(rank - k));
  split.push_back(chunks);
  split.push_back(n / chunks);
  int64_t r = int64_t(rank - k);
  const UOp* part = reduce(g, reshape(g, x, split), op, {r + 1});
  part = g.make(Op::Contiguous, part->dtype, {part});
  std::vector<int64_t> out_shape;
  for (const Dim& d : *u->shape()) out_shape.push_back(d.value);
  return reshape(g, reduce(g, part, op, {r}), out_shape);
}

// The left operand of a packed matrix product, (..., M, K, 1) broadcast along N: computed values
// (a previous layer's bias and activation) are stored first, else every 32-column tile of the
// product would compute them again for each of its rows (an MLP's second layer ran 2x slower).
const UOp* stored_rows(Graph& g, const UOp* e) {
  const UOp* a0 = e->op == Op::Expand ? e->src(0) : e;
  if (!is_computed(a0)) return e;
  const UOp* stored = g.make(Op::Contiguous, a0->dtype, {a0});
  return e->op == Op::Expand ? expand_sym(g, stored, *e->shape()) : stored;
}

// Whether x is computed from constants only (constant bytes, literals): no input, variable or
// buffer of the program under it.
bool made_of_constants(const UOp* x) {
  for (const UOp* u : toposort(x))
    if (u->nsrc() == 0 && u->op != Op::Binary && u->op != Op::Const) return false;
  return true;
}

// Whether B (b0) pays for its packing under rule 9's 64 rows. Where it is made of constants and the
// device runs what depends on no input at compile (precompute): the packing then runs once, and a
// matrix-vector product reads each panel as one stream instead of 256-byte pieces of rows 16 KiB
// apart, which no prefetcher follows (x @ w, w 4096x4096 constant, 2 cores: 2.8-3.3 -> 1.6-1.7 ms,
// oneDNN on the plain matrix 1.7-2.2). And from 8 rows where B is larger than the caches: unpacked,
// each block of a tile's rows reads all of B again that way from memory (x of 8/16/32 rows @ w
// 4096x4096, 2 cores: 8.8/14.2/23.6 -> 6.3/9.1/11.4 ms, packing included; oneDNN 9-12). A B the
// caches hold is read again from them: 2048x2048 (16 MiB, 33 MiB of caches) gained nothing packed,
// 1024x1024 lost.
bool few_rows_pay(const UOp* b0, int64_t rows, const ScheduleOptions& options) {
  constexpr int64_t kMinRowsBeyondCaches = 8;
  const double b_bytes = double(numel(static_shape(b0, "matmul operand"))) * double(b0->dtype.itemsize());
  if (rows >= kMinRowsBeyondCaches && options.cache_bytes > 0 && b_bytes > double(options.cache_bytes)) return true;
  return options.precomputes && made_of_constants(b0);
}

// Rule 9. Sum over axis rank-2 of x * b0, b0 of shape (..., 1, K, N) broadcast along the M rows
// (how matmul is composed; b0 may sit under an Expand): b0 becomes a view of its copy packed in
// panels `panel` wide.
const UOp* pack_matmul_operand(Graph& g, const UOp* u, const ScheduleOptions& options) {
  const int64_t panel = options.packed_panel;
  constexpr int64_t kMinRows = 64, kMinK = 64, kMinColumns = 64;
  const ReduceArg& ra = u->as<ReduceArg>();
  const UOp* prod = u->src(0);
  const Shape* ps = prod->shape();
  if (ra.op != Op::Add || ra.axes.size() != 1 || prod->op != Op::Mul || !ps || ps->size() < 3) return nullptr;
  int64_t rank = int64_t(ps->size());
  if (ra.axes[0] != rank - 2 || !prod->dtype.is_float()) return nullptr;
  // Every dim constant but the rows (a symbolic batch is packed for as if at its largest value).
  for (int64_t i = 0; i < rank; i++)
    if (i != rank - 3 && !(*ps)[size_t(i)].is_const()) return nullptr;
  const Dim& rows_dim = (*ps)[size_t(rank - 3)];
  int64_t rows = rows_dim.is_const() ? rows_dim.value : int64_t(rows_dim.sym->minmax().hi);
  int64_t k = (*ps)[size_t(rank - 2)].value, n = (*ps)[size_t(rank - 1)].value;
  if (k < kMinK || n < kMinColumns) return nullptr;
  for (int side = 0; side < 2; side++) {
    const UOp* e = prod->src(size_t(side));  // b0 itself (elementwise ops broadcast) or its Expand
    const UOp* b0 = e->op == Op::Expand ? e->src(0) : e;
    const Shape* bs = b0->shape();
    if (!bs || int64_t(bs->size()) != rank || (*bs)[size_t(rank - 3)].value != 1) continue;
    if (as_panel_copy(g, b0)) continue;  // packed already (this rule's result, seen again)
    if (rows < kMinRows && !few_rows_pay(b0, rows, options)) continue;
    const UOp* view = panel_copy(g, b0, rank - 1, panel, rank - 2);  // (..., 1, N/panel, K, panel)
    const UOp* ex = e->op == Op::Expand ? expand_sym(g, view, *e->shape()) : view;
    const UOp* a = stored_rows(g, prod->src(size_t(1 - side)));
    const UOp* np = side == 0 ? binary(g, Op::Mul, ex, a) : binary(g, Op::Mul, a, ex);
    return reduce(g, np, Op::Add, ra.axes);
  }
  return nullptr;
}

// Slice(x, offset) is a view: the flat source shrunk to the whole elements that hold the slice's
// bytes, bitcast to the slice's dtype (the last axis rescales), shrunk to the slice's size.
// Constant bytes that hold whole elements of the slice's dtype at its offset are bitcast whole
// instead, then shrunk: the schedule can then keep them in a buffer of that dtype (float32
// weights load as floats, not as four bytes joined).
const UOp* slice_view(Graph& g, const UOp* u) {
  const UOp* x = u->src(0);
  if (!u->src(1)->is_const()) fail(Code::Unsupported, "schedule: a Slice at a symbolic offset");
  const SliceArg& a = u->as<SliceArg>();
  int64_t off = int64_t(u->src(1)->const_int()), xi = x->dtype.itemsize(), di = a.dtype.itemsize();
  if (x->op == Op::Binary && di > xi && (off * xi) % di == 0 && int64_t(x->as<std::string>().size()) % di == 0 &&
      !a.dtype.is_bool())
    return shrink(g, bitcast(g, x, a.dtype), {off * xi / di}, {a.size});
  int64_t elems = (a.size * di + xi - 1) / xi;
  const UOp* part = shrink(g, reshape(g, x, {numel(static_shape(x, "slice"))}), {off}, {elems});
  if (a.dtype == x->dtype) return part;
  return shrink(g, bitcast(g, part, a.dtype), {0}, {a.size});
}

// Rule 9, a view of a panel copy (tensor.h's panel_copy) whose panels are a multiple of the
// target's and wider: the same view of a copy in the target's panels. With AVX2's tiles of 16 or 8
// output-channel lanes in 32-wide weight panels each step read a half or a quarter of a 128-byte
// run (a Zen 3, convolutions with their weight as an input, zz_conv probe alternated in one
// process, medians of the program, into 16-wide panels: 64x56x56 1.69-1.87 -> 1.55 ms, 128x28x28
// 1.76 -> 1.59, 256x14x14 2.25-2.27 -> 1.82, 512x7x7 3.3-3.8 -> 2.95; AVX2's panels are now 8
// wide, see the CPU backend's packed_panel).
const UOp* repanel(Graph& g, const UOp* view, int64_t panel) {
  const std::optional<PanelCopy> pc = as_panel_copy(g, view);
  if (!pc || pc->panel <= panel || pc->panel % panel != 0) return nullptr;
  return panel_copy(g, pc->x, pc->axis, panel, pc->outer_at);
}

std::vector<const UOp*> split_reduces(Graph& g, std::span<const UOp* const> outputs, const ScheduleOptions& options) {
  static const PatternMatcher pm(
      {{Pat::op(Op::Slice), [](const Match& m) { return slice_view(m.g, m.root); }, "slice_view"},
       {Pat::op(Op::Reduce), [](const Match& m) { return split_reduce(m.g, m.root); }, "split_reduce"},
       {Pat::op(Op::Reduce),
        [](const Match& m) { return pack_matmul_operand(m.g, m.root, *static_cast<const ScheduleOptions*>(m.ctx)); },
        "pack_matmul_operand"},
       {Pat::ops({Op::Reshape, Op::Shrink}),  // a panel copy's view ends in either
        [](const Match& m) { return repanel(m.g, m.root, static_cast<const ScheduleOptions*>(m.ctx)->packed_panel); },
        "repanel"}});
  ScheduleOptions ctx = options;
  const UOp* sink = graph_rewrite(g, g.make(Op::Sink, dtypes::void_, outputs), pm, &ctx);
  return std::vector<const UOp*>(sink->src().begin(), sink->src().end());
}

// In-place updates under the roots: After(target, Store(Buffer, value)) gives (Buffer, value) and
// the After reads as the value (viewed with the target's shape). Inner assigns are resolved first,
// so a value that reads another assign's After reads that value.
struct Assigns {
  std::vector<std::pair<const UOp*, const UOp*>> writes;    // (Buffer, flat value), in graph order
  std::vector<std::pair<const UOp*, const UOp*>> reads_as;  // After -> its value
};

Assigns collect_assigns(Graph& g, std::span<const UOp* const> roots) {
  Assigns a;
  for (const UOp* u : toposort(roots)) {
    if (u->op != Op::After || u->nsrc() != 2 || u->src(1)->op != Op::Store || u->shape() == nullptr) continue;
    const UOp* buf = u->src(1)->src(0);
    if (buf->op != Op::Buffer)
      fail(Code::Unsupported, "schedule: a tensor-level Store into ", op_name(buf->op), " (only into an input Buffer)");
    for (const auto& [b, v] : a.writes)
      if (b == buf)
        fail(Code::InvalidArg, "schedule: Buffer %", buf->id, " is assigned twice in one program (the order of the ",
             "writes would be undefined)");
    const UOp* value = a.reads_as.empty() ? u->src(1)->src(1) : substitute(g, u->src(1)->src(1), a.reads_as);
    a.writes.push_back({buf, value});
    a.reads_as.push_back({u, reshape(g, value, static_shape(u))});
  }
  // A value that is itself a buffer another update writes is copied first (a swap reads both old
  // values before either write).
  for (auto& [buf, value] : a.writes)
    for (const auto& [other, unused] : a.writes)
      if (value == other) value = g.make(Op::Contiguous, value->dtype, {value});
  return a;
}

}  // namespace

Schedule schedule_graph(Graph& g, std::span<const UOp* const> outputs, std::span<const UOp* const> effects,
                        const ScheduleOptions& options) {
  for (size_t i = 0; i < outputs.size(); i++) {
    const UOp* o = outputs[i];
    if (o == nullptr) fail(Code::InvalidArg, "schedule: output ", i, " is null");
    if (o->graph() != &g) fail(Code::InvalidArg, "schedule: output ", i, " belongs to another graph");
    if (o->shape() == nullptr || o->dtype.is_void() || o->dtype.ptr || o->dtype.lanes != 1)
      fail(Code::InvalidArg, "schedule: output ", i, " (", op_name(o->op), " of ", o->dtype.name(),
           ") is not a tensor value");
  }
  // Effects: Afters of assigns, their Stores, or Groups of those.
  std::vector<const UOp*> flat_effects;
  std::vector<const UOp*> pending(effects.rbegin(), effects.rend());
  while (!pending.empty()) {
    const UOp* e = pending.back();
    pending.pop_back();
    if (e != nullptr && e->op == Op::Group) {
      pending.insert(pending.end(), e->src().rbegin(), e->src().rend());
      continue;
    }
    if (e != nullptr && e->op == Op::Store && e->nsrc() == 2 && e->src(0)->op == Op::Buffer)
      e = g.make(Op::After, e->src(0)->dtype, {e->src(0), e});
    if (e == nullptr || e->op != Op::After || e->nsrc() != 2 || e->src(1)->op != Op::Store)
      fail(Code::InvalidArg, "schedule: effect ", flat_effects.size(), " is ", e ? op_name(e->op) : "null",
           ", not an in-place update (the After of an assign, its Store, or a Group of those)");
    flat_effects.push_back(e);
  }
  effects = flat_effects;
  Schedule s;
  if (outputs.empty() && effects.empty()) return s;

  // ---- calls: every function's body substituted for its GetTuples ----
  std::vector<const UOp*> roots(outputs.begin(), outputs.end());
  roots.insert(roots.end(), effects.begin(), effects.end());
  // One walk says whether there is anything to resolve, so a plain program pays one scan for both.
  bool has_calls = false, has_updates = false;
  for (const UOp* u : toposort(roots)) {
    has_calls = has_calls || u->op == Op::Function || u->op == Op::Param;
    has_updates = has_updates || u->op == Op::After;
  }
  if (has_calls) roots = resolve_functions(g, roots);
  std::vector<const UOp*> resolved_outputs(roots.begin(), roots.begin() + long(outputs.size()));
  outputs = resolved_outputs;

  // ---- in-place updates: each After reads as its value; the writes come last ----
  Assigns assigns = has_updates ? collect_assigns(g, roots) : Assigns{};
  roots.assign(outputs.begin(), outputs.end());
  for (const auto& [buf, value] : assigns.writes) roots.push_back(value);
  if (!assigns.reads_as.empty())
    for (const UOp*& r : roots) r = substitute(g, r, assigns.reads_as);
  roots = split_reduces(g, roots, options);
  std::vector<const UOp*> split_outputs(roots.begin(), roots.begin() + long(outputs.size()));
  outputs = split_outputs;
  std::vector<const UOp*> written;  // (Buffer, value) pairs, flattened: what the hash and the order see
  for (size_t k = 0; k < assigns.writes.size(); k++) {
    assigns.writes[k].second = roots[outputs.size() + k];
    written.push_back(assigns.writes[k].first);
    written.push_back(assigns.writes[k].second);
  }

  // ---- Callify: inputs in first-use order, outputs, the content hash ----
  std::vector<const UOp*> all_roots(outputs.begin(), outputs.end());
  all_roots.insert(all_roots.end(), written.begin(), written.end());
  std::vector<const UOp*> order = toposort(all_roots);
  std::unordered_map<const UOp*, size_t> pos;
  for (size_t i = 0; i < order.size(); i++) pos.emplace(order[i], i);

  sched::Plan base;
  std::unordered_map<const UOp*, int> input_slot;
  Device default_device;
  for (const UOp* u : order) {
    if (u->op != Op::Buffer) continue;
    const BufferArg& b = u->as<BufferArg>();
    if (b.device.tuple) fail(Code::Unsupported, "schedule: multi-device Buffer %", u->id, " on ", b.device.str());
    int k = int(s.buffers.size());
    input_slot.emplace(u, k);
    s.buffers.push_back({ScheduleBuffer::Kind::Input, u->dtype, b.size, u, k});
    base.buffers.push_back({u->dtype, b.size, b.device});
    base.stored_in.emplace(u, k);
    if (default_device.null()) default_device = b.device;
  }
  if (default_device.null()) default_device = Device{{"CPU"}, false};  // a program of constants only
  auto device_of = [&](const UOp* u) {
    const Device& d = u->device();
    if (d.tuple) fail(Code::Unsupported, "schedule: multi-device value ", op_name(u->op), " on ", d.str());
    return d.null() ? default_device : d;
  };
  for (size_t i = 0; i < outputs.size(); i++) {
    const UOp* o = outputs[i];
    int64_t size = alloc_size(g, o);
    s.buffers.push_back({ScheduleBuffer::Kind::Output, o->dtype, size, o, int(i)});
    base.buffers.push_back({o->dtype, size, device_of(o)});
  }
  // Constant bytes (Binary) live in buffers of their own that the program fills once. Bytes read
  // only through one bitcast to a wider dtype (aligned float32 Slices, see slice_view) are a buffer
  // of that dtype, which holds the bitcast's value.
  std::unordered_map<const UOp*, std::vector<const UOp*>> binary_users;
  for (const UOp* u : order)
    for (const UOp* x : u->src())
      if (x->op == Op::Binary) binary_users[x].push_back(u);
  int constants = 0;
  for (const UOp* u : order) {
    if (u->op != Op::Binary) continue;
    const UOp* held = u;
    DType dt = dtypes::uint8;
    int64_t size = int64_t(u->as<std::string>().size());
    const auto& users = binary_users[u];
    const UOp* b = users.empty() ? nullptr : users[0];
    bool one_view = b && b->op == Op::Bitcast && b->dtype.itemsize() > 1 && size % b->dtype.itemsize() == 0;
    for (const UOp* x : users) one_view = one_view && x == b;
    if (one_view) held = b, dt = b->dtype, size /= b->dtype.itemsize();
    base.stored_in.emplace(held, int(base.buffers.size()));
    s.buffers.push_back({ScheduleBuffer::Kind::Constant, dt, size, u, constants++});
    base.buffers.push_back({dt, size, default_device});
  }
  s.hash = program_hash(order, all_roots, input_slot);

  // ---- the materialization plan, grown until lowering finds nothing more to store ----
  std::unordered_set<const UOp*> realized;
  for (const UOp* u : order)
    if (u->op == Op::Contiguous) realized.insert(u);
  for (const auto& [buf, value] : assigns.writes) realized.insert(value);  // copied into the buffer at the end
  // A Contiguous is its source's value: that source is what is stored (2.), where it is computed (not
  // an input or a constant, which a Contiguous copies) from memory, so every reader of it loads the
  // one buffer. conv2d stores its computed input for its windows: ResNet's block output, relu(conv +
  // bias + shortcut), is also read by the next block's residual add, which recomputed it, so the
  // convolution was stored without its epilogue and applied it in a kernel of its own.
  std::unordered_set<const UOp*> from_memory;  // nodes that read a buffer or constant bytes, or reduce
  for (const UOp* u : order) {
    bool m = u->op == Op::Buffer || u->op == Op::Binary || u->op == Op::Reduce;
    for (const UOp* x : u->src()) m = m || from_memory.count(x);
    if (m) from_memory.insert(u);
  }
  auto stores_its_source = [&](const UOp* c) {
    return !base.stored_in.count(c->src(0)) && from_memory.count(c->src(0));
  };
  // The only node reading each node (nullptr when several do, or an output does).
  std::unordered_map<const UOp*, const UOp*> sole_reader;
  for (const UOp* u : order)
    for (const UOp* src : u->src()) {
      auto [it, fresh] = sole_reader.emplace(src, u);
      if (!fresh && it->second != u) it->second = nullptr;
    }
  for (const UOp* o : outputs) sole_reader[o] = nullptr;

  for (size_t round = 0;; round++) {
    if (round > order.size()) fail(Code::Internal, "schedule: the materialization plan does not converge");
    sched::Plan plan = base;
    std::vector<sched::KernelSpec> specs;
    std::vector<const UOp*> intermediates;
    std::function<void(const UOp*)> add_intermediate = [&](const UOp* u) {
      if (plan.stored_in.count(u)) return;
      if (u->op == Op::Contiguous && stores_its_source(u)) {
        add_intermediate(u->src(0));
        plan.stored_in.emplace(u, plan.stored_in.at(u->src(0)));
        return;
      }
      int b = int(plan.buffers.size());
      plan.buffers.push_back({u->dtype, alloc_size(g, u), device_of(u)});
      plan.stored_in.emplace(u, b);
      specs.push_back({u, b, true});
      intermediates.push_back(u);
    };
    for (size_t i = 0; i < outputs.size(); i++) {
      int b = int(input_slot.size() + i);
      bool first = plan.stored_in.emplace(outputs[i], b).second;  // an input Buffer or a repeat: copy it
      specs.push_back({outputs[i], b, first});
    }
    for (const UOp* u : order)
      if (realized.count(u)) add_intermediate(u);
    const size_t first_write = specs.size();
    for (const auto& [buf, value] : assigns.writes) specs.push_back({value, input_slot.at(buf), false});

    // Lower every kernel; values flagged on the way are stored at once (their kernels join the
    // worklist), which keeps one round from exploring a flagged body again and again.
    sched::Findings findings;
    std::function<void(const UOp*)> store_now = add_intermediate;
    std::vector<sched::LoweredKernel> kernels;
    for (size_t k = 0; k < specs.size(); k++)
      kernels.push_back(sched::lower_kernel(g, plan, specs[k], int(k), findings, store_now));

    if (!findings.empty()) {
      // Kernels lowered before a value was flagged inlined it: lower everything again with more
      // values stored. Reductions that must be stored decide the structure, so they are taken
      // first; duplicates and recomputation counts are judged again once those are stored.
      size_t before = realized.size();
      for (sched::Why why : {sched::Why::Broadcast, sched::Why::Duplicate, sched::Why::Recompute}) {
        for (const UOp* u : findings.list(why)) realized.insert(u);
        if (realized.size() != before) break;
      }
      if (realized.size() == before) store_costly(findings.costly(), sole_reader, plan, realized);
      if (realized.size() == before) fail(Code::Internal, "schedule: lowering flagged only values already stored");
      continue;
    }

    for (size_t k = 0; k < intermediates.size(); k++) {
      const sched::BufferInfo& b = plan.buffers[base.buffers.size() + k];
      s.buffers.push_back({ScheduleBuffer::Kind::Intermediate, b.dtype, b.size, intermediates[k], int(k)});
    }
    // A kernel reads only values below its root in the tensor graph (or, for a copy, the same
    // node stored by an earlier spec), so the topological position of the root is a launch order.
    // The writes of in-place updates go last, in their own order: every read of an old value is
    // in a kernel before them.
    auto launch_key = [&](size_t k) {
      bool write = k >= first_write && k < first_write + assigns.writes.size();
      return write ? order.size() + (k - first_write) : pos.at(specs[k].root);
    };
    std::vector<size_t> launch(specs.size());
    for (size_t k = 0; k < launch.size(); k++) launch[k] = k;
    std::stable_sort(launch.begin(), launch.end(), [&](size_t a, size_t b) { return launch_key(a) < launch_key(b); });
    std::unordered_set<const UOp*> seen_vars;
    for (size_t k : launch) {
      if (kernels[k].ast == nullptr) continue;  // zero elements
      collect_vars(kernels[k].ast, seen_vars, s.vars);
      s.kernels.push_back({kernels[k].ast, std::move(kernels[k].buffers)});
    }
    return s;
  }
}

}  // namespace sn
