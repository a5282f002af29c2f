// The hand-coded optimizer for CPU targets (THREAD axes, SIMD vector lanes). In order:
//   1. loop order: the axis a store walks contiguously innermost (Swaps); each Reduce's axes with
//      the smallest load stride innermost
//   2. register tiles for reduces whose loads are reused across output axes (matmul, conv): the
//      innermost output axis as vector lanes (or, where it fills less than a vector, an output
//      axis loaded contiguously: a convolution's output channels), one more output axis unrolled,
//      a short innermost reduce axis (a filter's width) unrolled; where no output axis takes lanes
//      and both loads walk the innermost reduce axis (a weight gradient), that axis as the lanes of
//      vector accumulators in a tile of two output axes (2e)
//   3. vector accumulators for reduces that stream memory (UNROLL of the innermost reduce axis);
//      pooling windows (every reduce axis short) unrolled whole
//   4. vector lanes for the elementwise tail of kernels with reduces (UPCAST; a window unrolled
//      whole counts as elementwise: an input gradient's sum of tiles); in kernels without
//      reduces, for transposing copies and for outputs large enough for streaming stores; a copy
//      that reads a few columns of rows far apart per outer step (packing into panels) reads its
//      rows in blocks of 16 (SPLIT, SWAP) from beyond the caches, 4 panels per step (UPCAST) from them
//   5. THREAD: the outermost loop axis every store uses, split across the cores
//   6. a sum that reads a piece of many rows far apart per step of its output's loop (a
//      matrix-vector product's matrix) runs over blocks of rows, the blocks' loop outermost
//      (SPLIT(r, blocks, LOOP, top))
#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "core/codegen/kernel_util.h"
#include "core/opt/opt.h"

namespace sn {

namespace {

// Representative launch values for variables in stride estimates.
std::unordered_map<const UOp*, int64_t> var_env(const UOp* sink) {
  std::unordered_map<const UOp*, int64_t> env;
  for (const UOp* u : toposort(sink))
    if (u->op == Op::DefineVar) {
      const auto& v = u->as<VarArg>();
      env[u] = std::max(v.min, std::min<int64_t>(v.max, 64));
    }
  return env;
}

// n rounded up to a multiple of m (m > 0, n >= 0): an axis padded to whole vectors or copies.
int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// Bytes of the one-dimensional buffer of constant size a load or store addresses (its value's
// element counted as stored), or 0 when that is not known.
int64_t buffer_bytes(const UOp* access) {
  const UOp* buf = address_buffer(access->src(0));
  const Shape* bs = buf ? buf->shape() : nullptr;
  if (!bs || bs->size() != 1 || !(*bs)[0].is_const()) return 0;
  const DType elem = access->op == Op::Store ? access->src(1)->dtype : access->dtype;
  return (*bs)[0].value * elem.base().itemsize();
}

// Whether the buffer a load reads is larger than the caches of all cores (its lines come from memory
// each time it is read again); nullopt where either size is unknown.
std::optional<bool> beyond_caches(const UOp* load, const Target& target) {
  const int64_t bytes = buffer_bytes(load);
  if (bytes <= 0 || target.all_cache_bytes() <= 0) return std::nullopt;
  return bytes > target.all_cache_bytes();
}

// The LOOP range at position pos of the loop axes (loop_ids, outer to inner), or nullptr where that
// axis is something else by now (an upcast, a thread).
const UOp* loop_axis(const OptState& k, const std::vector<int64_t>& loop_ids, int64_t pos) {
  const UOp* r = k.range(loop_ids[size_t(pos)]);
  return r && r->as<RangeArg>().type == AxisType::Loop ? r : nullptr;
}

int64_t div_amount(int64_t n, std::initializer_list<int64_t> choices) {
  for (int64_t c : choices)
    if (c > 1 && n >= c && n % c == 0) return c;
  return 0;
}

int64_t id_of(const UOp* r) { return r->as<RangeArg>().id; }

// Lanes for an axis of n: the first of `choices` that divides n, else the first that n padded to
// a multiple of wastes at most an eighth of (*padded then set: the axis needs PADTO), else 0.
int64_t lanes_within_an_eighth(int64_t n, std::initializer_list<int64_t> choices, bool* padded) {
  *padded = false;
  if (const int64_t c = div_amount(n, choices)) return c;
  for (int64_t c : choices)
    if (n > 1 && 8 * (round_up(n, c) - n) <= round_up(n, c)) {
      *padded = true;
      return c;
    }
  return 0;
}

// A kernel of fewer iterations in all runs in microseconds however it is tiled: register tiles
// (step 2) and square tiles (4e) would cost more compile time than they save.
constexpr double kTinyIterations = 1 << 14;

// The innermost (highest id) REDUCE axis a Reduce closes, or nullptr.
const UOp* innermost_reduce_axis(const UOp* reduce) {
  const UOp* inner = nullptr;
  for (size_t i = 1; i < reduce->nsrc(); i++) {
    const UOp* r = reduce->src(i);
    if (r->op == Op::Range && r->as<RangeArg>().type == AxisType::Reduce && (!inner || id_of(r) > id_of(inner)))
      inner = r;
  }
  return inner;
}

// Whether every store of the kernel walks loop axis `inner` contiguously (stride 1), and the widest
// stored element in bits (what a vector register's lanes are counted in).
std::pair<bool, int> stores_along(const UOp* sink, const UOp* inner) {
  auto env = var_env(sink);
  bool contiguous = inner != nullptr && inner->as<RangeArg>().type == AxisType::Loop;
  int bits = 8;
  for (const UOp* st : sink->src()) {
    const UOp* idx = st->op == Op::Store ? address_index(st->src(0)) : nullptr;
    auto stride = idx && contiguous ? stride_of(idx, inner, env) : std::nullopt;
    contiguous = contiguous && stride && *stride == 1;
    if (st->op == Op::Store) bits = std::max(bits, st->src(1)->dtype.bits());
  }
  return {contiguous, bits};
}

// Cache blocks for a register tile whose copies' loop runs inside its vector axis's loop (2b'):
// every strip of the vector axis reads all the rows the copies load (a matmul's A, M x K), and once
// those outgrow the core's cache they come from memory for every strip (matmul 4096 on a Zen 3: 64 MB
// per 16-column strip). The rows' loop is then split into blocks whose rows fit in a quarter of the
// core's cache, the blocks' loop outermost: the strips pass over one block while it stays in cache,
// and the other operand is streamed once per block instead. (A quarter: the strips, the output and
// the other cores share the rest. On a Zen 3 guest, 2 vCPUs of 32 MB of L3, matmul 4096 ran
// 1.32 s unblocked, 1.17-1.20 s in 8 MB blocks, 1.10 s in 4 MB ones; 2048 138-193 ms, 118-134 ms
// and 112-117 ms.) `rows_id` and `strip_id` are the two innermost loops; `order` lists the
// kernel's loops outer to inner.
void block_rows_for_cache(Graph& g, OptState& k, const Target& target, int64_t rows_id, int64_t strip_id,
                          std::vector<int64_t> order) {
  const UOp *rows = k.range(rows_id), *strip = k.range(strip_id);
  const int64_t n = rows ? const_bound(rows) : 0;
  if (target.cache_bytes <= 0 || !strip || n < 4) return;
  auto env = var_env(k.sink);
  // Bytes the rows' loads move per step of their loop (a load that stays put along the strip): the
  // step's stride, as the rows of a step are new data.
  int64_t step_bytes = 0;
  for (const UOp* u : toposort(k.sink)) {
    if (u->op != Op::Load) continue;
    const UOp* idx = address_index(u->src(0));
    auto along_rows = idx ? stride_of(idx, rows, env) : std::nullopt;
    auto along_strip = idx ? stride_of(idx, strip, env) : std::nullopt;
    if (along_rows && *along_rows != 0 && along_strip && *along_strip == 0)
      step_bytes += std::abs(*along_rows) * u->dtype.itemsize();
  }
  const int64_t budget = target.cache_bytes / 4;
  if (step_bytes <= 0 || n * step_bytes <= budget) return;
  // Of the block sizes from half the steps that fit up to all of them, the one that pads the loop
  // least, the largest of those: a divisor where one is there (no padding); else the loop is padded
  // to a multiple of it when that wastes at most an eighth (rows padded to 6-row steps: 4096 rows
  // are 683 steps, a prime). Padded steps are computed and thrown away: 683 steps in blocks of 45
  // computed 720 (AVX2's matmul 4096 on a Zen 5, as SN_CPU=znver3, ran 5-7% behind oneDNN's AVX2
  // gemm); in blocks of 38, 684.
  const int64_t cap = std::min(n / 2, budget / step_bytes);
  if (cap < 2) return;
  int64_t block = cap;
  for (int64_t d = cap - 1; d >= std::max<int64_t>(2, cap / 2); d--)
    if (round_up(n, d) < round_up(n, block)) block = d;
  if (const int64_t padded = round_up(n, block); padded != n) {
    if (8 * (padded - n) > padded) return;
    apply_opt(g, k, Opt::padto(rows_id, block), target);
  }
  apply_opt(g, k, Opt::split(rows_id, block, AxisType::Loop), target);
  // The split's inner part took the next free id, after every loop: the blocks' loop (rows_id)
  // moves outermost, the block's rows stay innermost.
  int64_t inner_id = -1;
  for (const UOp* r : k.ranges()) inner_id = std::max(inner_id, id_of(r));
  order.erase(std::find(order.begin(), order.end(), rows_id));
  order.insert(order.begin(), rows_id);
  order.push_back(inner_id);
  reorder_ranges(g, k, order, target);
}

// 4c. A copy whose load takes less than a page per step of an outer loop axis and walks an
//     inner one (not the innermost) with a stride of a page or more, from a source larger than the
//     caches of all cores: a matmul's B packed into panels, (N/8, K, 8) from (K, N), reads 32 bytes
//     of each of K rows 16 KiB apart per panel, so every line of B comes from memory once per panel
//     it holds a part of, in pieces no prefetcher follows. The inner axis is blocked by 16 and its
//     blocks loop outside the outer axis: consecutive outer steps then read on along the same 16
//     rows, each line once, as 16 streams (B of 4096x4096, 64 MiB, packed on 2 cores of 16.5 MiB
//     each: 9.5-11.4 -> 3.6-4.8 ms). From a source the caches hold the lines come back from them
//     anyway, and the blocks' writes, a panel apart, cost more: B of 1024x1024 packed in 0.3-1.1 ms
//     before, 1.6-3.4 blocked; 2048x2048 (16 MiB) ran slower blocked too.
//     A step of whole lines (AVX-512's 32-wide panels: 128 bytes of each row) still reads each row
//     in pieces a page apart, each from a page of its own, which no prefetcher follows: its rows are
//     blocked by 8 (a Zen 5, B of 4096x4096 into 32-wide panels, medians of 40 runs: 3.96-3.98 ->
//     2.34-2.37 ms; blocks of 4 2.41-2.53, 16 2.53-2.58, 32 2.63-2.67).
// 4d. The same copy from a source the caches hold (4c's case otherwise): its load takes a run of under
//     a cache line along the innermost axis, from rows a page or more apart along the next one, and an
//     outer axis steps to the adjacent run (a matmul's B packed into 8-wide panels: 32 bytes of each of
//     K rows per panel, so each line of B is read twice, a panel apart, from L2 or L3). That axis takes
//     4 copies (UPCAST): 128 bytes of each row per step, each line read once. A Zen 3, 96 x 1024 @
//     1024 x 4096 (B packed for 96 rows): the whole product 7-10% faster, paired against the same
//     opts forced as control (0.90-0.93 against 0.99-1.01); 2 copies: 3.5-7%; 1024 and 2048 cubed,
//     where the packing is a smaller share: within the noise (0.98-1.01 against 0.98-1.09).
void read_whole_lines(Graph& g, OptState& k, const Target& target, const std::vector<int64_t>& loop_ids,
                      const std::unordered_map<const UOp*, int64_t>& env) {
  constexpr int64_t kLine = 64, kPage = 4096, kRuns = 4;
  const int64_t nloops = int64_t(loop_ids.size());
  if (nloops < 3) return;
  auto loop_at = [&](int64_t pos) { return loop_axis(k, loop_ids, pos); };
  const UOp *inner = loop_at(nloops - 1), *middle = loop_at(nloops - 2);
  if (!inner || !middle) return;
  const int64_t run = const_bound(inner);
  for (const UOp* u : toposort(k.sink)) {
    const UOp* idx = u->op == Op::Load ? address_index(u->src(0)) : nullptr;
    if (!idx || beyond_caches(u, target) != false) continue;
    const int64_t item = u->dtype.base().itemsize();
    auto along = stride_of(idx, inner, env), down = stride_of(idx, middle, env);
    if (!along || *along != 1 || run * item >= kLine || !down || std::abs(*down) * item < kPage) continue;
    for (int64_t pos = nloops - 3; pos >= 0; pos--) {
      const UOp* outer = loop_at(pos);
      auto next = outer ? stride_of(idx, outer, env) : std::nullopt;
      const int64_t n = outer ? const_bound(outer) : 0;
      if (!next || *next != run || n < 2 * kRuns || n % kRuns != 0) continue;
      apply_opt(g, k, Opt::upcast(id_of(outer), kRuns), target);
      return;
    }
  }
}

// Returns whether it blocked the rows.
bool block_strided_rows(Graph& g, OptState& k, const Target& target, const std::vector<int64_t>& loop_ids,
                        const std::unordered_map<const UOp*, int64_t>& env) {
  constexpr int64_t kLine = 64, kPage = 4096;
  const int64_t nloops = int64_t(loop_ids.size());
  auto loop_at = [&](int64_t pos) { return loop_axis(k, loop_ids, pos); };
  for (const UOp* u : toposort(k.sink)) {
    const UOp* idx = u->op == Op::Load ? address_index(u->src(0)) : nullptr;
    if (!idx || beyond_caches(u, target) != true) continue;
    const int64_t item = u->dtype.base().itemsize();
    for (int64_t m = 1; m + 1 < nloops; m++) {
      const UOp* inner = loop_at(m);
      auto sm = inner ? stride_of(idx, inner, env) : std::nullopt;
      const int64_t n = inner ? const_bound(inner) : 0;
      if (!sm || std::abs(*sm) * item < kPage) continue;
      for (int64_t o = 0; o < m; o++) {
        const UOp* outer = loop_at(o);
        auto so = outer ? stride_of(idx, outer, env) : std::nullopt;
        if (!so || *so == 0 || std::abs(*so) * item >= kPage) continue;
        const int64_t block = std::abs(*so) * item < kLine ? 16 : 8;
        if (n < 4 * block || n % block != 0) continue;
        const int64_t outer_id = outer->as<RangeArg>().id, inner_id = inner->as<RangeArg>().id;
        apply_opt(g, k, Opt::split(inner_id, block, AxisType::Loop), target);
        apply_opt(g, k, Opt::swap(outer_id, inner_id), target);
        return true;
      }
    }
  }
  return false;
}

// 6. A sum whose load walks the innermost reduce axis from rows a page or more apart, reading a
//    piece of under a page of each row per step of the loop it runs in (x @ W for x of a few rows
//    and W unpacked: a tile of 64 columns reads 256 bytes of each of W's K rows, and walks all K of
//    them before the next tile reads on along the same rows), runs over blocks of rows, the blocks'
//    loop outside the output's loops: the tiles of a block read its rows on. The output takes the
//    blocks' partial sums (reduce_blocks_rule), read and written once per block.
//    - Rows larger than the caches of all cores come from memory: blocks of 8 rows, 8 streams a
//      prefetcher follows, where thousands of rows at once were pieces it did not. A Zen 3, x @ W
//      with W 4096x4096 (medians, alternated with oneDNN's sgemm): 1 row 5.0-5.3 -> 2.5-2.6 ms
//      (oneDNN 2.5-2.6), 2 rows 7.3 -> 2.4 ms (6.8), 4 rows 8.0 -> 2.9-3.0 ms (7.0-7.5); 4 rows in
//      blocks of 32 or 128 rows: 6.1-6.6 ms.
//    - Rows the caches hold: blocks of at least 8 rows that read at least 4 times the output's bytes
//      (its reads and writes per block then cost at most half of what the block reads). W 2048x2048:
//      1 row 0.80 -> 0.25-0.33 ms (medians; oneDNN 0.39-0.41); best of 20 runs: 8 rows 1.34 -> 0.79
//      ms in blocks of 32 rows (0.92 in blocks of 8; oneDNN 1.76-1.96), 16 rows 3.3 -> 1.4-1.6 ms in
//      blocks of 32 or 128 (oneDNN 2.6-2.8), 32 rows 5.9 -> 3.0 ms in blocks of 128 (oneDNN 2.1).
void block_reduce_rows(Graph& g, OptState& k, const Target& target) {
  const std::vector<const UOp*> topo = toposort(k.sink);
  const UOp* sum = nullptr;
  for (const UOp* u : topo)
    if (u->op == Op::Reduce) {
      if (sum) return;
      sum = u;
    }
  const UOp* r = sum ? innermost_reduce_axis(sum) : nullptr;
  const int64_t n = r ? const_bound(r) : 0;
  if (n < 32) return;
  const std::vector<const UOp*> value = toposort(sum->src(0));
  std::vector<const UOp*> walks;  // the loops the sum's value moves with
  for (const UOp* x : value)
    if (x->op == Op::Range && x->as<RangeArg>().type == AxisType::Loop) walks.push_back(x);
  auto env = var_env(k.sink);
  constexpr int64_t kPage = 4096;
  int64_t row_bytes = 0;  // what one row of the block takes from the strided loads
  bool from_memory = false;
  for (const UOp* u : value) {
    const UOp* idx = u->op == Op::Load ? address_index(u->src(0)) : nullptr;
    auto down = idx ? stride_of(idx, r, env) : std::nullopt;
    const int64_t item = u->dtype.base().itemsize();
    const int64_t down_bytes = down ? std::abs(*down) * item : 0;
    if (down_bytes < kPage) continue;
    bool reads_on = false;  // along some loop, the next piece of the same rows
    for (const UOp* w : walks) {
      const int64_t along = stride_of(idx, w, env).value_or(0);
      reads_on = reads_on || (along != 0 && std::abs(along) * item < kPage);
    }
    if (!reads_on) continue;
    row_bytes += down_bytes;
    from_memory = from_memory || beyond_caches(u, target) == true;
  }
  int64_t out_bytes = 0;
  for (const UOp* st : k.sink->src()) {
    const int64_t bytes = st->op == Op::Store ? buffer_bytes(st) : 0;
    if (bytes <= 0) return;
    out_bytes += bytes;
  }
  if (row_bytes == 0) return;
  int64_t rows = 8;
  while (!from_memory && rows * row_bytes < 4 * out_bytes) rows *= 2;
  if (n % rows != 0 || n < 4 * rows || !reduce_blocks_rule(k.sink, r).empty()) return;
  apply_opt(g, k, Opt::split(id_of(r), n / rows, AxisType::Loop, true), target);
  // The blocks' loop (the split's outer part, after every id) goes outside the other loops.
  std::vector<const UOp*> loops;
  for (const UOp* x : k.ranges())
    if (x->as<RangeArg>().type == AxisType::Loop) loops.push_back(x);
  std::sort(loops.begin(), loops.end(), [](const UOp* a, const UOp* b) { return id_of(a) < id_of(b); });
  std::vector<int64_t> order{id_of(loops.back())};
  for (size_t i = 0; i + 1 < loops.size(); i++) order.push_back(id_of(loops[i]));
  reorder_ranges(g, k, order, target);
}

}  // namespace

void cpu_heuristic(Graph& g, OptState& k, const Target& target, const LowerOptions& opts) {
  auto apply = [&](const Opt& o) { apply_opt(g, k, o, target); };
  std::vector<const UOp*> loops, reduces;
  classify_ranges(k.sink, &loops, &reduces);
  auto env = var_env(k.sink);
  std::vector<const UOp*> stores;
  for (const UOp* s : k.sink->src())
    if (s->op == Op::Store) stores.push_back(s);

  // 1. Loop order: the axis with the smallest store stride innermost.
  constexpr int64_t kFar = std::numeric_limits<int64_t>::max();
  std::unordered_map<const UOp*, int64_t> loop_key;
  for (const UOp* r : loops) {
    int64_t best = kFar;
    for (const UOp* s : stores) {
      const UOp* idx = address_index(s->src(0));
      if (!idx) continue;
      if (auto st = stride_of(idx, r, env); st && *st != 0) best = std::min(best, *st < 0 ? -*st : *st);
    }
    loop_key[r] = best;
  }
  std::stable_sort(loops.begin(), loops.end(), [&](const UOp* a, const UOp* b) { return loop_key[a] > loop_key[b]; });

  // Reduce axes of each Reduce: the smallest load stride innermost.
  std::vector<const UOp*> topo = toposort(k.sink);
  std::vector<const UOp*> reduce_order;
  for (const UOp* u : topo) {
    if (u->op != Op::Reduce || u->nsrc() < 2) continue;
    std::vector<const UOp*> loads;
    for (const UOp* x : toposort(u->src(0)))
      if (x->op == Op::Load) loads.push_back(x);
    std::vector<const UOp*> rs(u->src().begin() + 1, u->src().end());
    std::unordered_map<const UOp*, int64_t> key;
    for (const UOp* r : rs) {
      int64_t best = kFar;
      for (const UOp* l : loads) {
        const UOp* idx = address_index(l->src(0));
        if (!idx) continue;
        if (auto st = stride_of(idx, r, env); st && *st != 0) best = std::min(best, *st < 0 ? -*st : *st);
      }
      key[r] = best;
    }
    std::stable_sort(rs.begin(), rs.end(), [&](const UOp* a, const UOp* b) { return key[a] > key[b]; });
    for (const UOp* r : rs)
      if (std::find(reduce_order.begin(), reduce_order.end(), r) == reduce_order.end()) reduce_order.push_back(r);
  }
  // The loops take the smallest ids (outer to inner), the reduces the ones after them.
  std::vector<int64_t> order;
  for (const UOp* r : loops) order.push_back(id_of(r));
  for (const UOp* r : reduces)
    if (std::find(reduce_order.begin(), reduce_order.end(), r) == reduce_order.end()) reduce_order.push_back(r);
  for (const UOp* r : reduce_order) order.push_back(id_of(r));
  reorder_ranges(g, k, order, target);
  std::vector<int64_t> slots = order;
  std::sort(slots.begin(), slots.end());
  const int64_t nloops = int64_t(loops.size());
  std::vector<int64_t> loop_ids(slots.begin(), slots.begin() + nloops);  // loop position -> range id
  auto loop_at = [&](int64_t pos) { return k.range(loop_ids[size_t(pos)]); };

  // 2. Register tiles for reduces whose loads are reused across output axes (matmul, conv).
  //    The innermost output axis, when loads walk it contiguously, becomes vector lanes (two
  //    vector registers wide when it divides); then the output axis whose copies share the most
  //    load work (a vector load counts as a vector's worth) is unrolled, keeping the
  //    accumulators within half the vector register file (8 of AVX2's 16, 16 of AVX-512's 32: the
  //    rest hold operands; 16 accumulators on AVX2 spilled, a small CNN's convolutions ran 2x slower).
  //    Not in tiny kernels (under 2^14 iterations in all): they run in microseconds either way, and
  //    the copies cost LLVM time (a small CNN's 8x10 softmax took 36 ms to compile as 8 copies).
  bool inner_upcast = false;  // the innermost loop axis got an UPCAST
  int64_t pool_row = -1;      // a pool's row axis with vector lanes (2a), taken whole in 3b
  double total_iters = 1;
  for (const UOp* r : k.ranges()) total_iters *= double(std::max<int64_t>(1, const_bound(r)));
  if (!reduces.empty() && nloops > 0 && total_iters >= kTinyIterations) {
    topo = toposort(k.sink);
    OpenRanges open(topo);
    env = var_env(k.sink);
    // Loads inside the reduces that run inside loop axis `axis` (copies along the axis copy
    // those reduces; a reduce outside the axis, like softmax's row max, is not copied).
    std::vector<std::pair<const UOp*, std::vector<const UOp*>>> reduce_loads_of;
    for (const UOp* u : topo)
      if (u->op == Op::Reduce && u->nsrc() >= 2) {
        std::vector<const UOp*> ls;
        for (const UOp* x : toposort(u->src(0)))
          if (x->op == Op::Load) ls.push_back(x);
        reduce_loads_of.emplace_back(u, std::move(ls));
      }
    auto rloads_in = [&](const UOp* axis) {
      std::vector<const UOp*> out;
      std::unordered_set<const UOp*> seen;
      for (auto& [red, ls] : reduce_loads_of)
        if (open.contains(red, axis))
          for (const UOp* l : ls)
            if (seen.insert(l).second) out.push_back(l);
      return out;
    };
    // A row of at most 16 columns whose padded filter taps multiply weights known finite: taken
    // whole as copies (2b) of one register of lanes (2a'), each copy's padded taps are constant
    // zeros, whose products lower_reduces leaves out (a 14x14 map's 7-column tiles are a loop,
    // their gates not constants). ResNet-18's 256x14x14 convolution with constant weights: 16
    // channels x 14 columns, 2 of each 42 multiply-adds dropped: 0.43 ms against 0.45 ms for 32 x 7
    // (2 threads, medians of 200 runs). 32 x 14 (28 accumulators beside 6 weight registers): 0.65 ms.
    const UOp* row_axis = nloops > 0 ? loop_at(nloops - 1) : nullptr;
    const int64_t row_len = row_axis ? const_bound(row_axis) : 0;
    const bool padded_finite_row = [&] {
      if (!row_axis || row_len <= 8 || row_len > 16) return false;
      bool gated = false, finite = false;
      for (const UOp* l : rloads_in(row_axis)) {
        gated = gated || (l->nsrc() == 3 && open.contains(l->src(2), row_axis));
        finite = finite || loads_finite_param(l, opts.finite_params);
      }
      return gated && finite;
    }();
    // A filter 5 to 8 wide (a 7x7 stem's): unrolled whole below (2d); see 2b.
    bool wide_filter = false;
    for (const UOp* u : topo)
      if (u->op == Op::Reduce && !contains_reduce(u->src(0)))
        if (const UOp* f = innermost_reduce_axis(u); f && const_bound(f) >= 5 && const_bound(f) <= 8)
          wide_filter = true;
    int elem_bits = 32;
    for (const UOp* u : topo)
      if (u->op == Op::Reduce) elem_bits = std::max(8, u->dtype.bits());
    int64_t vw = std::max<int64_t>(4, target.vector_bits / elem_bits);  // lanes per vector register
    // An index that changes with the reduce (a load of every reduce step, not one per output).
    // Asked for each load and candidate axis: memoized (a node's answer never changes).
    std::unordered_map<const UOp*, bool> step_index;
    auto per_step = [&](const UOp* idx) {
      auto [it, fresh] = step_index.emplace(idx, false);
      if (fresh)
        for (const UOp* x : toposort(idx))
          if (x->op == Op::Range && x->as<RangeArg>().type == AxisType::Reduce) it->second = true;
      return it->second;
    };
    // Whether a load of every reduce step walks loop axis r contiguously (stride 1).
    auto walked_per_step = [&](const UOp* r) {
      for (const UOp* l : rloads_in(r)) {
        const UOp* idx = address_index(l->src(0));
        if (idx && per_step(idx) && open.contains(l, r))
          if (auto st = stride_of(idx, r, env); st && *st == 1) return true;
      }
      return false;
    };
    // 2a. vector lanes along the innermost axis, when a load walks it contiguously or with
    //     stride 2 (a stride-2 convolution's input: lanes from two vector loads' worth of lines
    //     still beat scalar copies; ResNet's stem convolution ran 4x faster with them).
    const UOp* inner = loop_at(nloops - 1);
    const UOp* vec_axis = nullptr;
    int64_t vec_pos = -1;  // its loop position
    int64_t vregs = 1;     // vector registers per accumulator row
    if (inner) {
      // Some load walks the axis with stride 1 or 2, and no load of every reduce step walks it
      // with a larger stride: that load would become one scalar load per lane per step (ResNet's
      // global average pool, 49 elements apart along its channels, as 32 lanes x 4 copies: 256
      // scalar loads per step, 45 ms of LLVM time for a kernel that runs in microseconds).
      // Also whether a load walks it with stride 2 and a filter tap (a reduce axis) moves that load
      // by one element: then each tap's lanes are two vector loads and a permute of their own.
      bool lanes_ok = false, gathers = false, tap_strided = false;
      for (const UOp* l : rloads_in(inner)) {
        const UOp* idx = address_index(l->src(0));
        if (!idx || !open.contains(l, inner)) continue;
        auto st = stride_of(idx, inner, env);
        if (st && (*st == 1 || *st == 2)) lanes_ok = true;
        if (st && (*st < 0 || *st > 2) && per_step(idx)) gathers = true;
        if (st && *st == 2 && per_step(idx))
          for (const UOp* x : toposort(idx))
            if (x->op == Op::Range && x->as<RangeArg>().type == AxisType::Reduce)
              if (auto tap = stride_of(idx, x, env); tap && std::abs(*tap) == 1) tap_strided = true;
      }
      lanes_ok = lanes_ok && !gathers;
      int64_t n = const_bound(inner);
      // Without reuse (a column sum: each output reads its own column) the lanes still turn the
      // reduce's strided walk into contiguous vector loads, one cache line for 16 outputs.
      int64_t amt = lanes_ok && n > 1 ? div_amount(n, {2 * vw, vw, vw / 2, 4}) : 0;
      // A pool's row (every reduce a window, 3b) that whole vectors do not divide is padded to them
      // where that wastes at most an eighth (56 columns as 4 x 16 lanes, not 7 x 8): 3b takes it whole.
      bool pool = true;
      for (const UOp* u : topo)
        if (u->op == Op::Reduce) pool = pool && window_reduce(u);
      if (pool && lanes_ok && amt < vw && n > vw && 8 * (round_up(n, vw) - n) <= round_up(n, vw)) {
        apply(Opt::padto(id_of(inner), vw));
        amt = vw;
      }
      if (pool && lanes_ok) pool_row = id_of(inner);
      // With 16 registers a wide filter's lanes take one register, so that its copies (2b) can be 8
      // output channels rather than 4 (ResNet-18's stem on a Zen 3: 16 columns x 4 channels
      // 3.4-3.5 ms at best, 8 columns x 8 channels 2.27-2.33 ms; 8 x 16 spilled: 2.6-3.5 ms).
      if (wide_filter && target.vector_registers < 32 && amt == 2 * vw) amt = vw;
      // A long axis that two registers of lanes do not divide (a matmul's 1020 or 1000 columns) is
      // padded to them where that wastes at most a sixteenth: its padded lanes read inside their
      // buffers and store nothing (PADTO), where 4 lanes left matmul 1020 3x slower than 1024.
      const int64_t padded_two = round_up(std::max<int64_t>(n, 0), 2 * vw);
      if (lanes_ok && !wide_filter && amt < 2 * vw && n >= 16 * vw && 16 * (padded_two - n) <= padded_two) {
        apply(Opt::padto(id_of(inner), 2 * vw));
        amt = 2 * vw;
      }
      // 2a'. When the innermost axis fills less than a whole vector (a 56-, 28-, 14- or 7-wide
      //      feature map on AVX-512), another output axis that whole vectors divide and that a
      //      reduce load walks contiguously takes the lanes instead: a convolution's output
      //      channels, read from its packed weight (conv2d in compose.cpp), one weight vector per
      //      reduce step against a broadcast input value. Also where padding the rows to whole
      //      vectors would waste little (below): ResNet-18's 256x14x14 convolution, 32 output
      //      channels x 7 columns per tile, ran 1.38-1.41 ms on one core against 1.50-1.63 ms with
      //      its rows padded to 16 lanes x 8 channels x 2 rows.
      //      With 16 vector registers (AVX2) also where the axis fills just one register: a tile of
      //      8 columns x 8 output-channel copies loads a broadcast weight per copy and filter tap, where
      //      16 channel lanes x 4 columns share each input value across the channels and the taps
      //      (conv2d 64x56x56 on a Zen 3, constant weights: 3.1 -> 2.1 ms). AVX-512's one-register
      //      tiles (the small CNN's 16-wide map) were measured on a Xeon and stay as they were.
      //      Also where the axis's lanes come from stride-2 loads that a filter tap moves (a stride-2
      //      convolution's columns): every tap then deinterleaves two vector loads with a permute on
      //      the ports the FMAs need, and its padded columns mask each load, where the channels' lanes
      //      are one weight load per tap against broadcast inputs (the output tile is stored
      //      transposed, transpose_scatters in expand.cpp). A Zen 5, 2 cores, medians of 100 runs:
      //      ResNet-18's 7x7 stem 0.58-0.60 -> 0.45 ms (16 channels x 16 columns); 3x3 stride 2,
      //      32 -> 64 channels at 224x224, 1.05 -> 0.89 ms; 16 -> 32 at 128x128 0.108 -> 0.077 ms. (A
      //      1x1 stride-2 convolution has no taps: its columns as lanes stay, 0.022 against 0.025 ms.)
      const int64_t padded = round_up(std::max<int64_t>(n, 0), vw);
      const bool pad_ok = !amt && lanes_ok && n > 1 && n >= vw / 2 && 4 * (padded - n) <= padded;
      if (amt < vw || (amt == vw && target.vector_registers < 32) || tap_strided) {
        for (int64_t pos = nloops - 2; pos >= 0; pos--) {
          const UOp* r = loop_at(pos);
          int64_t m = r ? const_bound(r) : 0;
          // An axis whole vectors do not divide (100 output channels) is padded to them where that
          // wastes at most an eighth: a convolution's packed weight pads its last panel (compose.cpp),
          // so the padded lanes read inside it and store nothing (PADTO). Conv 64->100 at 56x56 on a
          // Zen 3: 8 columns x 5 channels 2.9-3.4 ms, 8 of 104 channels x 8 columns 2.3 ms (60->60 at
          // 30x30 lost 3% against its 30 columns padded to 32).
          const int64_t m_padded = round_up(std::max<int64_t>(m, 0), vw);
          // An axis short of a vector is padded to one, or to half of one, where that wastes at most
          // an eighth: a convolution's input gradient at 14x14 and 7x7 sums over the output
          // channels per filter tap, its columns walked by dy (then summed into place by another
          // kernel), and no other axis is contiguous. ResNet-18's shapes, a Zen 5 guest, 2 threads:
          // 256 channels at 14x14 12.2 -> 0.77 ms (16 lanes x 3 taps x 4 channels), 512 at 7x7
          // 9.1 -> 1.3 ms (8 lanes).
          bool short_padded = false;
          const int64_t short_lanes = m > 1 && m < vw ? lanes_within_an_eighth(m, {vw, vw / 2}, &short_padded) : 0;
          if (m < vw ? short_lanes == 0 : 8 * (m_padded - m) > m_padded) continue;
          // a load of every reduce step (the weight), not one per output (a bias added after it)
          if (!walked_per_step(r)) continue;
          // Two registers of lanes halve the copy budget below (2b): where that leaves no count of 4
          // or more copies for any other output axis (AVX2's 4 copies against a 7- or 14-wide map),
          // one register of lanes with 7 copies of a column instead (ResNet-18's 512x7x7 convolution
          // on a Zen 3, constant weights: 16 channels x 1 column 9.4-10.2 ms, 8 x 7 1.9-2.1 ms).
          // A wide filter's tile with 32 registers: one register of lanes, so that its copies (2b)
          // can be 16 (the stem, a Zen 5: 16 channels x 16 columns 0.45-0.46 ms, 32 x 8 0.47-0.49).
          int64_t lanes = short_lanes ? short_lanes : div_amount(m_padded, {2 * vw, vw});
          if (lanes == 2 * vw && (wide_filter || padded_finite_row) && target.vector_registers >= 32) lanes = vw;
          if (lanes == 2 * vw) {
            const int64_t budget = std::min<int64_t>(8, target.vector_registers / 2 / 2);
            bool copies = false;
            for (int64_t q = 0; q < nloops && !copies; q++) {
              const UOp* o = q == pos ? nullptr : loop_at(q);
              const int64_t len = o ? const_bound(o) : 0;
              for (int64_t c = budget; c >= 4 && !copies; c--) copies = len >= c && len % c == 0;
            }
            if (!copies) lanes = vw;
          }
          if (short_padded) apply(Opt::padto(id_of(r), short_lanes));
          if (!short_lanes && m_padded != m) apply(Opt::padto(id_of(r), vw));
          apply(Opt::upcast(id_of(r), lanes));
          vec_axis = r;
          vec_pos = pos;
          vregs = std::max<int64_t>(1, lanes / vw);
          amt = 0;
          break;
        }
      }
      // A short axis no lane count divides (a 7x7 or 14x14 convolution's rows) is padded to whole
      // vectors when that wastes at most a quarter of the lanes: the masked lanes cost less than
      // scalar code (ResNet-18's 512x7x7 convolution: 24.7 -> 8.4 ms).
      // Where no axis took lanes otherwise, also when at least half of the padded lanes are used,
      // if a load of every reduce step walks the axis contiguously: scalar code uses one lane of
      // the vector. A small CNN's 2048 -> 10 linear layer at batch 8, its 10 outputs padded to
      // 16 lanes beside 4 rows of copies: 21.9 -> 4.4 us (a Zen 3, medians of 400 runs).
      const bool half_used =
          !vec_axis && !amt && !pad_ok && lanes_ok && n > 1 && 2 * (padded - n) <= padded && walked_per_step(inner);
      if (!vec_axis && (pad_ok || half_used)) {
        // the padded axis whole as lanes where it fits two registers (10 outputs: 16 lanes)
        const int64_t width = half_used && padded <= 2 * vw ? padded : vw;
        apply(Opt::padto(id_of(inner), width));
        amt = width;
      }
      if (amt) {
        apply(Opt::upcast(id_of(inner), amt));
        inner_upcast = true;
        vec_axis = inner;
        vec_pos = nloops - 1;
        vregs = (amt + vw - 1) / vw;
      }
    }
    // 2e. A sum of products of two loads that both walk its innermost reduce axis contiguously,
    //     where no output axis took lanes (a convolution's weight gradient, dW[co,ci,ky,kx] =
    //     sum over n, y, x of dy[n,co,y,x] * x[n,ci,y+ky,x+kx]: every output axis is far apart in
    //     both loads). That reduce axis becomes the lanes of vector accumulators (UNROLL; expand
    //     keeps one per copy), and the tile is two output axes of copies that each move one of
    //     the loads, so a step's loads are shared across the other axis: the shortest (a filter
    //     tap, up to 4) whole, and the other, 4 or 2 copies, within half the register file. Output
    //     axes a store or a load walks contiguously stay out: those would take the lanes. The small
    //     CNN's training step (batch 8, a Zen 5 guest, 2 threads): 16->32 channels' weight gradient
    //     0.68 -> 0.051 ms with 4 output channels x 3 filter rows (4 x 4 input channels 0.085 ms,
    //     8 x 3 0.065 ms); 3->16 0.25 -> 0.028 ms. Before, 2b took 8 input-channel copies without
    //     lanes: scalar accumulators, and their x loads gathered 8 channels per lane.
    bool weight_tile = false;
    if (!vec_axis && reduce_loads_of.size() == 1 && reduce_loads_of[0].second.size() == 2 &&
        reduce_loads_of[0].first->as<ReduceArg>().op == Op::Add && reduce_loads_of[0].first->dtype.is_float()) {
      const UOp* red = reduce_loads_of[0].first;
      const std::vector<const UOp*>& ls = reduce_loads_of[0].second;
      const UOp* along = innermost_reduce_axis(red);
      // Lanes: a whole or a half register that divides the axis, else one padded to it where that
      //        wastes at most an eighth (the padded steps add zeros): ResNet-18's 28-wide maps as
      //        16 lanes of 32 (128x128 channels: 13.6 -> 1.3 ms; 8 lanes of 32: 2.2 ms), 14 of 16
      //        (256x256: 11.3 -> 1.2 ms), 7 of 8. A 56-wide map as 7 x 8 lanes ran faster than 4
      //        x 16 padded to 64 (0.89 against 1.15 ms).
      bool pad_lanes = false;
      const int64_t lanes = along ? lanes_within_an_eighth(const_bound(along), {vw, vw / 2}, &pad_lanes) : 0;
      const UOp* idx[2] = {address_index(ls[0]->src(0)), address_index(ls[1]->src(0))};
      // one load walks the axis contiguously, the other with a stride of 1 to 4 (a stride-2
      // convolution's input: two vector loads and a shuffle per step)
      bool streams = lanes > 0 && idx[0] && idx[1] && !contains_reduce(red->src(0));
      int64_t unit = 0;
      for (const UOp* i : idx) {
        const int64_t st = streams ? stride_of(i, along, env).value_or(0) : 0;
        streams = streams && st >= 1 && st <= 4 && lanes * st <= 64;
        unit += st == 1;
      }
      streams = streams && unit >= 1;
      // Output axes that move exactly one of the loads (`moves`: which), and walk no load or store contiguously.
      struct Axis {
        const UOp* r;
        int64_t len;
        int moves;
      };
      std::vector<Axis> axes;
      for (int64_t pos = 0; pos < nloops && streams; pos++) {
        const UOp* r = loop_at(pos);
        const int64_t len = r ? const_bound(r) : 0;
        if (len < 2) continue;
        bool ok = true;
        for (const UOp* st : stores) {
          const UOp* si = address_index(st->src(0));
          ok = ok && si && std::abs(stride_of(si, r, env).value_or(1)) != 1;
        }
        auto s0 = stride_of(idx[0], r, env), s1 = stride_of(idx[1], r, env);
        if (!ok || !s0 || !s1 || std::abs(*s0) == 1 || std::abs(*s1) == 1 || (*s0 != 0) == (*s1 != 0)) continue;
        axes.push_back(Axis{r, len, *s0 != 0 ? 0 : 1});
      }
      const Axis* tap = nullptr;  // the shortest, up to 4 (the inner one of equals)
      for (const Axis& a : axes)
        if (a.len <= 4 && (!tap || a.len <= tap->len)) tap = &a;
      const int64_t budget = target.vector_registers / 2;
      const Axis* other = nullptr;
      int64_t copies = 0;
      for (const Axis& a : axes)
        for (int64_t c : {4, 2})
          if (tap && a.moves != tap->moves && a.len % c == 0 && c * tap->len <= budget && c > copies) {
            other = &a;
            copies = c;
          }
      if (tap && other) {
        const int64_t along_id = id_of(along), tap_id = id_of(tap->r), other_id = id_of(other->r), tap_len = tap->len;
        if (pad_lanes) apply(Opt::padto(along_id, lanes));
        apply(Opt::unroll(along_id, lanes));
        apply(Opt::upcast(other_id, copies));
        apply(Opt::upcast(tap_id, tap_len));
        weight_tile = true;
      }
    }
    // 2b. one more output axis, unrolled into copies that share loads. Only axes a copy count
    //     divides take part: a 7x7 convolution's spatial axes scored as high as its 512 output
    //     channels, won, could not be split, and the kernel ran at 2 GFLOP/s untiled.
    //     A plain product's tile (one reduce over one axis of the product of two loads: a matmul's)
    //     needs beside its accumulators only its vector operand and one broadcast, not a
    //     convolution's unrolled taps: its accumulators take all but those and one spare register.
    //     On AVX2 with two-register rows that is 6 rows (12 accumulators) where half the file allowed
    //     4, and 6 rows are taken where 4 would divide too, the rows padded to a multiple of 6 (their
    //     padding copies load and store nothing). A Zen 3, alternated: matmul 1024 4x16 12.8-14.4 ms,
    //     6x16 11.9-12.5 ms; 4096 in cache blocks 1.14-1.20 s against 0.95-1.01 s. (8 accumulators
    //     are just what AVX2's two FMA pipes need at 4 cycles' latency, with no slack.) Other
    //     targets' counts are unchanged: copies stop at 8.
    const bool plain_product =
        reduce_loads_of.size() == 1 && reduce_loads_of[0].first->nsrc() == 2 && reduce_loads_of[0].second.size() == 2;
    const int64_t limit = std::max<int64_t>(
        1, plain_product ? (target.vector_registers - vregs - 2) / vregs : target.vector_registers / 2 / vregs);
    //     An axis of symbolic length (a batch variable) takes part too: PADTO rounds it up to the
    //     copy count, and the copies past its end load and store nothing (an MLP compiled for any
    //     batch ran 4x slower than its static compile with one row per tile).
    //     A constant axis that no count from 8 down to 4 divides (13, 15, 22) is padded to 8 copies
    //     when that wastes at most an eighth of them: the padding copies load nothing and store
    //     nothing (ResNet-18's 512x7x7 convolution with output channels as lanes: 13.6 -> 2.8 ms with
    //     its 7 columns padded to 8, before 7 copies were allowed).
    //     A filter 5 to 8 wide (a 7x7 stem's) is unrolled whole below (2d); its copies of the
    //     input vector take registers, so the tile is one output axis of up to 16 copies, the whole
    //     accumulator budget, and no second axis (ResNet-18's 7x7 stride-2 stem: 8 channels x 2
    //     rows with a loop over the filter width 2.2-2.9 ms, 16 channels x 1 row with the width
    //     unrolled 1.5-1.6 ms; 8 x 2 unrolled spilled: 2.3-2.7 ms).
    //     (wide_filter: above, before 2a.)
    //     Otherwise the most copies up to 8 that divide the axis: 7 of a 28- or 14-wide map's
    //     columns, not 4 of 28 or 8 of 14 padded (ResNet-18's 128x28x28 convolution on one core:
    //     1.40-1.51 -> 1.16-1.24 ms with 32 output channels x 7 columns per tile).
    auto copies_for = [&](const UOp* r) -> int64_t {
      int64_t n = const_bound(r);
      if (padded_finite_row && r == row_axis && vregs == 1 && n + 4 <= target.vector_registers) return n;
      if (wide_filter && 16 <= limit && n >= 16 && n % 16 == 0) return 16;
      if (plain_product && limit >= 6 && limit < 8 && n >= 48) return 6;
      if (n < 0) {  // symbolic: padded to the copies
        for (int64_t c : {8, 4})
          if (c <= limit) return c;
      }
      for (int64_t c = std::min<int64_t>(limit, 8); c >= 4; c--)
        if (n >= c && n % c == 0) return c;
      if (n > 0 && limit >= 8 && n >= 7 && 8 * (round_up(n, 8) - n) <= round_up(n, 8)) return 8;
      if (2 <= limit && (n < 0 || (n >= 2 && n % 2 == 0))) return 2;
      return 0;
    };
    // The load work copies along r share: the reduce loads that do not move with r (a vector load
    // counts as a vector's worth). Only loads of every reduce step count: one that stays put while
    // the reduce runs (a bias read inside a max pool's window) is hoisted out of it, so copies
    // save nothing on it (a small CNN's 2x2 pool got 8x2 copies for its bias and took 25-39 ms
    // of LLVM time).
    auto shared_loads = [&](const UOp* r) {
      int64_t score = 0;
      for (const UOp* l : rloads_in(r)) {
        const UOp* idx = address_index(l->src(0));
        if (!open.contains(l, r) && idx && per_step(idx)) score += vec_axis && open.contains(l, vec_axis) ? vw : 1;
      }
      return score;
    };
    const UOp* best = nullptr;
    int64_t best_score = 0, best_pos = -1;
    for (int64_t pos = nloops - 1; pos >= 0 && !weight_tile; pos--) {
      const UOp* r = loop_at(pos);
      if (!r || pos == vec_pos || const_bound(r) == 1 || const_bound(r) == 0 || copies_for(r) == 0) continue;
      int64_t score = shared_loads(r) * copies_for(r);  // loads shared 8 ways beat loads shared 2 ways
      if (score > best_score) best = r, best_score = score, best_pos = pos;
    }
    if (best) {
      int64_t amt = copies_for(best);
      const int64_t best_len = amt ? round_up(const_bound(best), amt) : 0;  // padded
      if (amt && const_bound(best) % amt != 0) apply(Opt::padto(id_of(best), amt));
      if (amt) apply(Opt::upcast(id_of(best), amt));
      inner_upcast = inner_upcast || (amt && best_pos == nloops - 1);
      // 2b''. Where the copies fill less than the accumulator budget (AVX-512's 16 registers: a
      //       16-wide map's rows as lanes with 8 output-channel copies fill 8), a second output
      //       axis that shares loads takes the rest as copies when they divide it (BEAM's choice
      //       for a 14x14 convolution when its rows were padded to 16 lanes: two rows per tile).
      //       Only with one vector register per row: 128x28x28's rows of 32 output-channel lanes
      //       (two registers) ran ~10% slower with two rows of 4 copies. Before the loop order
      //       below, which renumbers the loops.
      const int64_t room = amt ? limit / amt : 0;
      const UOp* second = nullptr;
      int64_t second_amt = 0, second_score = 0;
      for (int64_t pos = nloops - 1; pos >= 0 && room >= 2 && vec_axis && vregs == 1 && !wide_filter; pos--) {
        const UOp* r = loop_at(pos);
        int64_t n = r ? const_bound(r) : 0;
        if (!r || pos == vec_pos || pos == best_pos || n < 2) continue;
        int64_t c = room;
        while (c >= 2 && n % c != 0) c /= 2;
        if (c < 2) continue;
        int64_t score = shared_loads(r) * c;
        if (score > second_score) second = r, second_amt = c, second_score = score;
      }
      if (second) apply(Opt::upcast(id_of(second), second_amt));
      // 2b'. Loop order of the tile: the loop of the unrolled axis goes innermost, inside the
      //      loop of the vector axis. Its copies share the loads along the vector axis (a
      //      matmul's B panel, K x lanes), which then stay in cache across its iterations while
      //      the small per-copy loads (A's rows) stream; the other order streams the whole of B
      //      for every tile row.
      //      Not with a wide filter: its tile's copies share the input rows, not a panel, and
      //      the stem ran 1.8-2.0 ms with its channel loop innermost, 1.3-1.5 ms outermost.
      // (A loop upcast whole is gone: only the ranges still there take part.)
      if (amt && vec_axis && best_pos != nloops - 1 && vec_pos == nloops - 1 && loop_at(best_pos) && !wide_filter) {
        std::vector<int64_t> tile_order;
        for (int64_t pos = 0; pos < nloops; pos++)
          if (pos != best_pos && loop_at(pos)) tile_order.push_back(loop_ids[size_t(pos)]);
        tile_order.push_back(loop_ids[size_t(best_pos)]);
        const bool strip_loop = loop_at(vec_pos) != nullptr;  // the vector axis was not upcast whole
        reorder_ranges(g, k, tile_order, target);
        // 2b'''. Cache blocks (block_rows_for_cache); the reorder gave the tile's loops the sorted ids.
        std::vector<int64_t> now = tile_order;
        std::sort(now.begin(), now.end());
        if (strip_loop && now.size() >= 2) block_rows_for_cache(g, k, target, now.back(), now[now.size() - 2], now);
      }
      // 2d. The tile's innermost reduce axis, when it is short (a convolution's filter width:
      //     up to 4, or 8 where the tile above left registers for it), is unrolled: each copy's gate masks and address
      //     offsets are then constants that LLVM hoists out of the reduce loops, and the copies' products go into the
      //     accumulators as one chain of FMAs (lower_reduces). As a loop of 3 it recomputed the masks of its padded
      //     input every step, on the ports the FMAs need (ResNet-18's 256x14x14 convolution: 1.78 -> 1.04 ms; the small
      //     CNN's two: 53 -> 46 and 115 -> 97 us). (The innermost Reduce's axis: a max pool around the convolution
      //     keeps its loop.)
      //     With 16 vector registers and two registers of lanes, the next short reduce axis (the
      //     filter's height) is unrolled as well: its row masks become constants of the tile. On a Zen
      //     3, bench_cpu against oneDNN in the same runs (three each): conv2d 64x56x56 1.31-1.75x ->
      //     1.01-1.16x, 128x28x28 with constant weights 1.37-1.42x -> 0.89-1.10x, the small CNN's
      //     first convolution 0.115-0.139 -> 0.091-0.103 ms (alternated); the tile's code is three
      //     times longer (ResNet-18 compiles 10-20% slower).
      //     With one register of lanes, the same where the copies do not span their whole axis (a
      //     14-wide map's rows as two tiles of 7 columns): a padded input's gates then select their
      //     base pointers once per tile (the region of zeros, render_llvm_ir), outside the loop. A
      //     Zen 3, alternated three times: ResNet-18's 256x14x14 convolution 2.73-2.91 -> 2.02-2.23
      //     ms, 512x512x14x14 9.9-13.2 -> 9.5-9.7 ms, 128x128x14x14 0.55-0.57 -> 0.47 ms. A tile
      //     that spans its rows (7 columns of a 7-wide map) has gates on both sides: its unrolled
      //     3x3 taps carry up to 9 gated bases, which spilled (58 spills and reloads per step), and
      //     ResNet-18's 512x7x7 ran 25-35% slower with it.
      const bool split_axis = amt > 0 && amt < best_len;
      const int rounds = target.vector_registers < 32 && (vregs == 2 || (vregs == 1 && split_axis)) ? 2 : 1;
      for (int round = 0; round < rounds; round++) {
        std::vector<Opt> short_axes;
        for (const UOp* red : toposort(k.sink)) {  // (the tile's opts rebuilt the Reduces)
          if (red->op != Op::Reduce) continue;
          const UOp* inner = innermost_reduce_axis(red);
          int64_t n = inner ? const_bound(inner) : 0;
          if (n < 2 || n > (wide_filter && round == 0 ? 8 : 4) || contains_reduce(red->src(0))) continue;
          Opt o = Opt::unroll(id_of(inner), n);
          if (std::find(short_axes.begin(), short_axes.end(), o) == short_axes.end()) short_axes.push_back(o);
        }
        for (const Opt& o : short_axes) apply(o);
      }
    } else if (vec_axis && nloops == 1) {
      // 2c. The vector axis is the only output axis (a matrix-vector product, a column sum): it
      //     takes the copies itself, so each step of the reduce reads several adjacent vectors of
      //     a row (whole cache lines, fewer pages per byte) into independent accumulators. (Not
      //     where other output axes exist: ResNet-18's convolutions ran slower with it.)
      const UOp* rest = loop_at(nloops - 1);
      int64_t n = rest ? const_bound(rest) : 0;
      for (int64_t c : {4, 2})
        if (c <= limit && n >= c && n % c == 0) {
          apply(Opt::upcast(id_of(rest), c));
          break;
        }
    }
  }

  // 3. Vector lanes for reduces that stream memory (row sums, softmax's max and sum): the
  //    innermost reduce axis of a Reduce whose loads all walk it contiguously is unrolled;
  //    expand turns that unroll into the lanes of a vector accumulator (two vector registers
  //    wide, so two independent add chains), folded across lanes once after the loop.
  //    Reduces inside a register tile (they depend on an UPCAST axis) keep scalar copies.
  {
    topo = toposort(k.sink);
    OpenRanges open(topo);
    env = var_env(k.sink);
    std::vector<Opt> lanes;
    for (const UOp* u : topo) {
      if (u->op != Op::Reduce || u->nsrc() < 2 || u->dtype.lanes != 1) continue;
      bool in_tile = false;
      for (const UOp* r : open.of(u)) in_tile = in_tile || r->as<RangeArg>().type == AxisType::Upcast;
      const UOp* inner = innermost_reduce_axis(u);
      if (in_tile || !inner) continue;
      bool contiguous = true, any = false, heavy = false;
      for (const UOp* x : toposort(u->src(0))) {
        heavy = heavy || x->op == Op::Exp2 || x->op == Op::Log2 || x->op == Op::Sin || x->op == Op::Pow;
        if (x->op != Op::Load || !open.contains(x, inner)) continue;
        const UOp* idx = address_index(x->src(0));
        auto st = idx ? stride_of(idx, inner, env) : std::nullopt;
        any = true;
        contiguous = contiguous && st && *st == 1;
      }
      int64_t vw = std::max<int64_t>(4, target.vector_bits / std::max(8, u->dtype.bits()));
      // Math-heavy values are bound by their arithmetic, not the add chain: one register wide
      // (half the code to compile).
      int64_t amt = !any || !contiguous ? 0
                    : heavy             ? div_amount(const_bound(inner), {vw, vw / 2, 4})
                                        : div_amount(const_bound(inner), {2 * vw, vw, vw / 2, 4});
      Opt o = Opt::unroll(id_of(inner), amt);
      if (amt && std::find(lanes.begin(), lanes.end(), o) == lanes.end()) lanes.push_back(o);
    }
    for (const Opt& o : lanes) apply(o);
  }

  // 3b. A window reduce (a pooling window: every reduce axis at most 4 long, at most 16 steps in
  //     all) is unrolled whole: its gates and address offsets become constants that LLVM hoists,
  //     and the loops of 2 or 3 steps with their branches go away (ResNet-18's 3x3 max pool, with
  //     the stem's bias and relu inside: 0.78 -> 0.45 ms). Not around another reduce (a max pool
  //     over a convolution would copy the convolution).
  //     A pool's row of vectors (2a) is then taken whole as copies where it is at most 8 vectors: each
  //     copy's gates (a padded window's edges) become constants, true in all but the first and last,
  //     where a loop over the row computed every tap's gate every step (ResNet-18's 3x3 stride-2 max
  //     pool over 112x112, a Zen 5, the fastest of 200 runs: 8 lanes x 7 steps 0.118 ms; 8 lanes x 7
  //     copies 0.060 ms; the 56 columns padded to 64, 16 lanes x 4 copies, 0.038 ms).
  {
    std::vector<Opt> windows;
    for (const UOp* u : toposort(k.sink)) window_reduce(u, &windows);
    for (const Opt& o : windows) apply(o);
    const UOp* row = pool_row >= 0 ? k.range(pool_row) : nullptr;
    const int64_t n = row ? const_bound(row) : 0;
    if (!windows.empty() && row && row->as<RangeArg>().type == AxisType::Loop && n > 1 && n <= 8)
      apply(Opt::upcast(pool_row, n));
  }

  // 4. In a kernel with reduces, LLVM's loop vectorizer often gives up on the loop nest: the
  //    innermost loop axis every store walks contiguously becomes vector lanes here (the
  //    elementwise tail of softmax or layernorm after its row reductions), when no reduce runs
  //    inside that loop (those would be copied per lane, with strided loads).
  //    A window unrolled whole (3b) is no loop: its copies take the lanes as any elementwise value
  //    does, the axis padded to whole vectors where that wastes at most an eighth. A convolution's
  //    input gradient sums its taps' tiles so (the windows' expand, compose.cpp): ResNet-18's
  //    64 channels at 56x56, 58 columns as 4 x 16 lanes, 0.77 -> 0.35 ms (its gathers' indexes are
  //    remainders of the tiled row).
  if (!reduces.empty() && nloops > 0 && !inner_upcast) {
    const UOp* inner = loop_at(nloops - 1);
    auto [contiguous, bits] = stores_along(k.sink, inner);
    bool windows = false;
    if (contiguous) {
      topo = toposort(k.sink);
      OpenRanges open(topo);
      for (const UOp* u : topo) {
        if (u->op != Op::Reduce || !open.contains(u, inner)) continue;
        bool unrolled = u->nsrc() >= 2;
        for (size_t i = 1; i < u->nsrc(); i++)
          unrolled = unrolled && u->src(i)->op == Op::Range && u->src(i)->as<RangeArg>().type == AxisType::Unroll;
        windows = windows || unrolled;
        contiguous = contiguous && unrolled;
      }
    }
    int64_t vw = std::max<int64_t>(4, target.vector_bits / bits);
    const int64_t n = contiguous ? const_bound(inner) : 0;
    int64_t amt = contiguous ? div_amount(n, {vw, vw / 2, 4}) : 0;
    if (contiguous && windows && amt < vw && n > vw && 8 * (round_up(n, vw) - n) <= round_up(n, vw)) {
      apply(Opt::padto(id_of(inner), vw));
      amt = vw;
    }
    if (amt) apply(Opt::upcast(id_of(inner), amt));
  }

  // 4b. A kernel without reduces is left to LLVM's loop vectorizer, except in three cases where the
  //     innermost axis, which every store walks contiguously, becomes vector lanes here:
  //     - a transposing copy (a load walks the axis with a stride and another loop axis
  //       contiguously, like conv2d's weight packing), whose loads the loop vectorizer would not
  //       gather (ResNet's 512x512x3x3 weight: 1.6 -> 0.7 ms; copies along the loads' axis as
  //       well ran no faster and took longer to compile);
  //     - an output of Target::streaming_store_bytes or more (a STREAM-sized add): whole vectors,
  //       which the renderer writes with non-temporal stores;
  //     - a load that walks the axis contiguously under a gate that depends on it (B copied into
  //       panels that do not divide its columns, the last one padded): masked vector loads, up to
  //       two vectors per step, where the loop vectorizer left one scalar load and store per
  //       element. A Zen 5, B of 1020x1020 into 32-wide panels (medians of 400 runs): 0.97 -> 0.15
  //       ms, 0.24 with 16 lanes; 1024x1024, ungated, 0.11; bench_cpu matmul_1020 against oneDNN
  //       1.23-1.28 -> 0.97-0.98.
  if (reduces.empty() && nloops > 0) {
    const UOp* inner = loop_at(nloops - 1);
    auto [contiguous, bits] = stores_along(k.sink, inner);
    env = var_env(k.sink);
    // The index of a transposing copy's load: it walks the innermost axis with a stride of 16 or
    // more and another loop axis contiguously (nullptr: none).
    auto transposing_index = [&]() -> const UOp* {
      for (const UOp* u : toposort(k.sink)) {
        const UOp* idx = u->op == Op::Load ? address_index(u->src(0)) : nullptr;
        auto st = idx ? stride_of(idx, inner, env) : std::nullopt;
        if (!st || (*st < 16 && *st > -16)) continue;
        for (int64_t pos = nloops - 2; pos >= 0; pos--) {
          auto sa = loop_at(pos) ? stride_of(idx, loop_at(pos), env) : std::nullopt;
          if (sa && *sa == 1) return idx;
        }
      }
      return nullptr;
    };
    // Whether a load walks the innermost axis contiguously under a gate that depends on it (a copy
    // into panels padded past the matrix's columns): LLVM's loop vectorizer does not vectorize the
    // gate's per-element select, so every element was a scalar load and store.
    auto gated_along_inner = [&] {
      for (const UOp* u : toposort(k.sink)) {
        if (u->op != Op::Load || u->nsrc() != 3 || !depends_on(u->src(2), inner)) continue;
        const UOp* idx = address_index(u->src(0));
        auto st = idx ? stride_of(idx, inner, env) : std::nullopt;
        if (st && *st == 1) return true;
      }
      return false;
    };
    auto streams = [&] {
      if (target.streaming_store_bytes <= 0) return false;
      for (const UOp* st : k.sink->src())
        if (st->op != Op::Store || buffer_bytes(st) < target.streaming_store_bytes) return false;
      return true;
    };
    // The lanes of a transposing copy's strided load are one scalar load each without gather
    // instructions (AVX2), one gather with them (AVX-512), taken from a different source row for
    // every lane and every position of the rows' other axes. The axes the load walks contiguously,
    // when they are short and separate axes of the copy (a 5-d permute's last two), are unrolled
    // whole instead: each source row's run is read at once. The figures below are a 3x3 weight's
    // packing, from before compose.cpp made its filters one axis (4e reads that in square tiles):
    // ResNet-18's 512x512x3x3 weight on a Zen 3, alternated: 1.11-1.76 -> 0.53-0.82 ms; 8 lanes
    // beside the 9 copies: 1.03-1.13 ms.
    //     With gathers the same order pays too: a 32-wide panel's two gathers per tap, innermost,
    //     read 32 rows 18 KiB apart, which share two of L1's 64 sets; the runs' loop order below
    //     reads 16 at a time. A Zen 5 (AVX-512), medians of 200 runs of each packing alone:
    //     512x512x3x3 0.52-0.55 -> 0.30 ms, 256x256 0.086 -> 0.072, 128x128 0.023 -> 0.019.
    //     The loop along which the load's run goes on (its stride is the run's length: a weight's
    //     input channels after its taps) then becomes the innermost loop, and the stored axis takes
    //     vector lanes after all: each lane's source row is read as one stream, a run per step, and
    //     the lanes' stores fill whole vectors. On a Zen 3 it paid most into 32-wide panels
    //     (ResNet-18's 512x7x7 convolution's program, alternated: 2.72-2.73 -> 1.84-2.35 ms, 4 lanes
    //     2.29-2.49 ms, the loop order without the lanes 3.26 ms); into 16-wide panels less,
    //     medians of the packing alone over 50 runs each: 256x256x3x3 0.325 -> 0.286 ms,
    //     512x512x3x3 0.626 -> 0.620 ms. Into AVX2's 8-wide panels (Target::packed_panel) the
    //     stored axis is one register of lanes whole, and the input channels are then innermost. Not for a copy of
    //     fewer than 2^19 elements: its 72 scalar loads per step cost our stages 0.3 -> 0.8 ms and LLVM about as much
    //     again, to save microseconds per run (ResNet-18's 64x64x3x3 weight: 14 us; with every packing of ResNet-18
    //     included, its cold compile took 5% more instructions, 2.21G -> 2.33G).
    const UOp* transposed = contiguous ? transposing_index() : nullptr;
    std::vector<const UOp*> run;  // whole loop axes the transposing load walks contiguously
    int64_t span = 1;             // the run's length
    const UOp* onward = nullptr;  // the loop axis the run goes on along
    const bool large = total_iters >= double(1 << 19);
    while (transposed) {
      const UOp* next = nullptr;  // the axis whose step is the run so far
      onward = nullptr;
      for (int64_t pos = 0; pos < nloops - 1 && !next; pos++) {
        const UOp* r = loop_at(pos);
        const int64_t n = r ? const_bound(r) : 0;
        auto sa = r ? stride_of(transposed, r, env) : std::nullopt;
        if (sa && *sa == span && n >= 2) (span * n <= 16 ? next : onward) = r;
      }
      if (run.empty() || !large) onward = nullptr;  // (a 1x1 filter's weight, a small copy)
      if (!next) break;
      run.push_back(next);
      span *= const_bound(next);
    }
    for (const UOp* r : run) apply(Opt::upcast(id_of(r), const_bound(r)));
    int64_t vw = std::max<int64_t>(4, target.vector_bits / bits);
    // 4e. A transposing copy whose load walks another loop axis contiguously for whole vectors, with
    //     no short run (a matrix's transpose; a convolution's weight packed into panels, whose
    //     filters compose.cpp presents as one axis): square tiles, vw copies of that axis beside the
    //     stored axis's vw lanes. Expand reads a tile as vw row vectors and transposes them in
    //     registers (transpose_tiles), where each copy was a gather of vw rows or vw scalar loads;
    //     the copies' loop goes innermost, so that a tile's rows are read on along themselves.
    //     A Zen 5 (AVX-512, 16 x 16 tiles), each weight packing alone (medians of 200 runs), against
    //     the runs above: 512x512x3x3 0.30 -> 0.10 ms, 256x256 0.072 -> 0.023, 128x128 0.019 ->
    //     0.006, 64x64 0.0042 -> 0.0027; bench_cpu, alternated three times, ours / oneDNN:
    //     conv2d_512x7x7 1.96-2.47 -> 1.41-1.48, ResNet-18 at batch 1 1.37-1.53 -> 1.17-1.20.
    //     Not in tiny kernels (under 2^14 elements, as for the register tiles of step 2): a tile's
    //     shuffles cost LLVM a few milliseconds per kernel (ResNet-18's cold compile, its 3x3
    //     weights' packings tiled: 102-123 -> 130-134 ms).
    const UOp* across = nullptr;
    const int64_t stored = const_bound(inner);
    if (transposed && run.empty() && total_iters >= kTinyIterations && target.vector_bits >= 128 && stored >= vw &&
        stored % vw == 0)
      for (int64_t pos = nloops - 2; pos >= 0 && !across; pos--) {
        const UOp* r = loop_at(pos);
        auto sa = r ? stride_of(transposed, r, env) : std::nullopt;
        if (sa && *sa == 1 && const_bound(r) >= vw && const_bound(r) % vw == 0) across = r;
      }
    if (across) apply(Opt::upcast(id_of(across), vw));
    int64_t lanes = !contiguous || (!run.empty() && !onward) ? 0
                    : transposed                             ? div_amount(stored, {vw, vw / 2, 4})
                    : streams()                              ? div_amount(stored, {vw})
                    : gated_along_inner()                    ? div_amount(stored, {2 * vw, vw, vw / 2, 4})
                                                             : 0;
    if (lanes) apply(Opt::upcast(id_of(inner), lanes));
    if (const int64_t last = onward ? id_of(onward) : across ? id_of(across) : -1; last >= 0) {
      std::vector<int64_t> order;
      for (int64_t pos = 0; pos < nloops; pos++)
        if (loop_at(pos) && loop_ids[size_t(pos)] != last) order.push_back(loop_ids[size_t(pos)]);
      order.push_back(last);
      reorder_ranges(g, k, order, target);
    }
    if (!transposed && large && !block_strided_rows(g, k, target, loop_ids, env))
      read_whole_lines(g, k, target, loop_ids, env);
  }

  // 5. THREAD: split the outermost loop axis every store uses across the cores.
  if (opts.allow_threads && target.has_threads && target.cores > 1) {
    int64_t t = target.cores;
    topo = toposort(k.sink);
    double iters = 1;
    int64_t alus = 0;
    for (const UOp* u : topo) {
      if (u->op == Op::Range) iters *= double(std::max<int64_t>(1, const_bound(u)));
      if (is_elementwise(u->op) || u->op == Op::Load || u->op == Op::Store) alus++;
    }
    if (iters * double(std::max<int64_t>(1, alus)) / double(t) >= double(opts.min_ops_per_thread)) {
      OpenRanges open(topo);
      bool done = false;
      // An axis that divides evenly first; else the outermost shared one in uneven chunks (the
      // last is shorter).
      for (bool even : {true, false})
        for (int64_t pos = 0; !done && pos < nloops; pos++) {
          const UOp* r = loop_at(pos);
          if (!r) continue;
          int64_t n = const_bound(r);
          bool all = true;
          for (const UOp* s : k.sink->src()) all = all && open.contains(s, r);
          if (!all || (even ? (n < t || n % t != 0) : n < 4 * t)) continue;
          apply(Opt::thread(id_of(r), t));
          done = true;
        }
    }
  }

  // 6. Reduce blocks (block_reduce_rows), after THREAD: the blocks' loop must not be split across
  //    the cores (their stores go to the same addresses).
  block_reduce_rows(g, k, target);
}

}  // namespace sn
