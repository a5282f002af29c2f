// Expand: UPCAST and UNROLL ranges become unrolled code.
//  - One UPCAST range per store along which the store is contiguous becomes vector lanes: every
//    node that depends on it gets a vector dtype (<k x T>); loads along it become vector loads
//    (masked where a pad's gate differs per lane); loads with a stride of 2 to 4 one contiguous
//    load that much wider and a shuffle (on targets with vector registers), other loads one gather
//    where they walk the lanes with a constant stride on targets with gathers, else one scalar load per lane. A
//    reduction that loads contiguously along the first UPCAST range takes it as lanes even where
//    its store walks it with a stride, and stores lane by lane or as one scatter (a convolution's
//    output channels).
//  - The other UPCAST ranges and the UNROLL ranges become copies: plain substitutions of the
//    range by each constant. Hash-consing shares every node that does not depend on the range
//    (a matmul's B row vector is shared by the copies that walk A's rows): a register tile.
//  - Strided loads whose copies together read every lane of a row (a 2x2 pool's x and x + 1 at
//    stride 2) then share one plain wide load.
//  - Copies whose lanes are rows apart and that together read a square tile of those rows (a
//    transposing copy's tile) load each row once as a vector; each copy is a column of the tile,
//    which the LLVM renderer transposes with shuffles.
//  - Likewise for stores: copies stored lane by lane or as scatters, at consecutive addresses (a
//    convolution's output row), are square tiles stored one vector per lane (transpose_scatters).
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "core/codegen/codegen.h"
#include "core/codegen/kernel_util.h"
#include "core/symbolic/symbolic.h"

namespace sn {

namespace {

bool is_type(const UOp* r, AxisType t) { return r->op == Op::Range && r->as<RangeArg>().type == t; }

// Every assignment of constants to the ranges (first range slowest), as substitution maps.
std::vector<std::unordered_map<const UOp*, const UOp*>> combos(Graph& g, const std::vector<const UOp*>& ranges) {
  std::vector<std::unordered_map<const UOp*, const UOp*>> out(1);
  for (const UOp* r : ranges) {
    int64_t n = const_bound(r);
    if (n < 1)
      fail(Code::InvalidArg, "expand: ", axis_type_name(r->as<RangeArg>().type), " range ", r->as<RangeArg>().id,
           " needs a constant positive bound");
    if (n > 256)
      fail(Code::InvalidArg, "expand: ", axis_type_name(r->as<RangeArg>().type), " range of ", n,
           " is too large to unroll");
    if (int64_t(out.size()) * n > 4096)
      fail(Code::InvalidArg, "expand: more than 4096 unrolled copies (", out.size(), " x ", n, ")");
    std::vector<std::unordered_map<const UOp*, const UOp*>> next;
    for (auto& m : out)
      for (int64_t c = 0; c < n; c++) {
        auto m2 = m;
        m2[r] = g.cint(c, r->dtype);
        next.push_back(std::move(m2));
      }
    out = std::move(next);
  }
  return out;
}

const UOp* fold(Graph& g, Op op, const std::vector<const UOp*>& vals) {
  // Pairwise tree: shorter dependency chains than a left fold.
  std::vector<const UOp*> cur = vals;
  while (cur.size() > 1) {
    std::vector<const UOp*> next;
    for (size_t i = 0; i + 1 < cur.size(); i += 2) next.push_back(g.alu(op, cur[i], cur[i + 1]));
    if (cur.size() % 2) next.push_back(cur.back());
    cur.swap(next);
  }
  return cur[0];
}

// The lanes of vector v combined with op: halves combined while the width is even (log2(k)
// vector ops), then the remaining lanes one by one.
const UOp* fold_lanes(Graph& g, Op op, const UOp* v) {
  while (v->dtype.lanes > 1 && v->dtype.lanes % 2 == 0) {
    int64_t h = v->dtype.lanes / 2;
    std::vector<int64_t> lo, hi;
    for (int64_t i = 0; i < h; i++) lo.push_back(i), hi.push_back(h + i);
    DType half = v->dtype.base().vec(uint16_t(h));
    auto part = [&](const std::vector<int64_t>& idx) -> const UOp* {
      return h == 1 ? g.make(Op::Gep, half, {v}, idx[0]) : g.make(Op::Gep, half, {v}, idx);
    };
    v = g.make(op, half, {part(lo), part(hi)});
  }
  if (v->dtype.lanes == 1) return v;
  std::vector<const UOp*> each;
  for (int64_t c = 0; c < v->dtype.lanes; c++) each.push_back(g.make(Op::Gep, v->dtype.base(), {v}, c));
  return fold(g, op, each);
}

// What the Vectorizers of one kernel made that expand_kernel's passes after them look for: each
// pass walks the kernel only where its kind of access was made.
struct Made {
  bool strided_loads = false;  // strided_load's wide loads (merge_strided_loads)
  bool lanes = false;          // loads as gathers or lane by lane (transpose_tiles)
  bool scatters = false;       // stores as scatters (transpose_scatters)
  bool lane_stores = false;    // stores lane by lane (transpose_scatters, where the renderer transposes tiles)
};

// Rebuilds a store with range u (bound k) as vector lanes.
class Vectorizer {
 public:
  // access.gathers: the target loads and stores a vector's lanes at k addresses at once: an access
  // that walks the lanes with a constant stride is one gather or scatter (masked by its gate), not
  // k scalar accesses (whose k copies cost more to lower and compile than the rest).
  // made: where what it made is noted (expand_kernel's later passes), or null.
  Vectorizer(Graph& g, const UOp* u, int k, LaneAccess access = {}, Made* made = nullptr)
      : g_(g), u_(u), k_(k), access_(access), made_(made), rb_(g, [this](const UOp* x, std::span<const UOp* const> s) {
          return rebuild(x, s);
        }) {}

  // nullptr when the store cannot be vectorized along u (its address is not contiguous).
  const UOp* store(const UOp* s) {
    if (!contiguous(s->src(0)->src(1))) return nullptr;
    return rb_.get(s);
  }

  // Any value (not a store) with u as vector lanes.
  const UOp* value(const UOp* x) { return rb_.get(x); }

  // The store's value computed with u as vector lanes, then stored lane by lane: one scalar store
  // per lane at the address with u = c (the store walks u with a stride).
  std::vector<const UOp*> scatter(const UOp* s) {
    const UOp* v = rb_.get(s->src(1));
    if (access_.gathers)  // one scatter; a gate that varies with the lanes masks them (a padded copy's)
      if (const UOp* addr = lane_address(s->src(0))) {
        std::vector<const UOp*> src{addr, bcast(s->src(1), v)};
        if (s->nsrc() == 3) src.push_back(rb_.get(s->src(2)));
        if (made_) made_->scatters = true;
        return {g_.make(Op::Store, s->dtype, src, s->arg, s->tag)};
      }
    // Lane c's address: lane 0's plus c times the stride where the store walks the lanes with a
    // constant one (a sum over one shared base, which the simplifier folds at a constant's cost;
    // substituting c into the index instead gives each lane a product to distribute).
    const UOp* index = s->src(0);
    std::optional<int64_t> stride;
    if (index->op == Op::Index && index->nsrc() == 2) stride = coefficient(index->src(1));
    const UOp* base = stride ? lane(index->src(1), 0) : nullptr;
    auto address = [&](int c) -> const UOp* {
      if (!stride) return lane(index, c);
      const UOp* at = c == 0 ? base : g_.alu(Op::Add, base, g_.cint(c * *stride, base->dtype));
      return g_.make(Op::Index, index->dtype, {index->src(0), at}, index->arg, index->tag);
    };
    std::vector<const UOp*> out;
    if (made_) made_->lane_stores = true;
    for (int c = 0; c < k_; c++) {
      const UOp* val = vec(s->src(1)) ? g_.make(Op::Gep, v->dtype.base(), {v}, int64_t(c)) : v;
      std::vector<const UOp*> src{address(c), val};
      if (s->nsrc() == 3) src.push_back(lane(s->src(2), c));
      out.push_back(g_.make(Op::Store, s->dtype, src, s->arg, s->tag));
    }
    return out;
  }

  // idx(u = c) == idx(u = 0) + c for every lane c.
  bool contiguous(const UOp* idx) {
    if (auto c = coefficient(idx)) return *c == 1;  // a sum with u in plain terms: no simplifier calls
    return simplifies_contiguous(idx);
  }
  // Whether idx walks the lanes with a constant stride of 2 to 4 that strided_load reads as one
  // wide load and a shuffle.
  bool strided(const UOp* idx) {
    auto c = coefficient(idx);
    return c && *c >= 2 && *c <= 4 && k_ * *c <= 64;
  }
  // The same asked of the simplifier, lane by lane (where coefficient cannot tell).
  bool simplifies_contiguous(const UOp* idx) {
    const UOp* neg_base = g_.alu(Op::Mul, lane(idx, 0), g_.cint(-1, idx->dtype));
    std::vector<int> order{1, k_ - 1};  // the likely failures first
    for (int c = 2; c < k_ - 1; c++) order.push_back(c);
    for (int c : order) {
      const UOp* d = simplify(g_, g_.alu(Op::Add, lane(idx, c), neg_base));
      if (!(d->op == Op::Const && d->const_int() == c)) return false;
    }
    return true;
  }

  // The longest run of lanes (k/2, k/4, ... while at least 4, dividing k) within whose aligned
  // runs index idx steps by 1, or 0: a tile wider than the panels it reads (16 lanes over 8-wide
  // ones) loads each panel's part as one vector.
  int64_t contiguous_run(const UOp* idx) {
    for (int64_t run = k_ / 2; run >= 4; run /= 2)
      if (k_ % run == 0 && coefficient(idx, run) == 1) return run;
    return 0;
  }

 private:
  // u's coefficient in e when e is a sum of terms that are u times constants or free of u; nullopt
  // when u sits anywhere else (under a division or a modulo, in a product with a range).
  //
  // With `run` < k: u's coefficient within each aligned run of `run` lanes (u = run * j + v, v in
  // [0, run), j the same for the run's lanes), where a remainder or a quotient wraps only between
  // runs (a 16-lane tile over a weight packed in 8-wide panels: `co % 8` with co = 16 * block + u
  // steps by 1 within each 8-lane half and jumps between them).
  std::optional<int64_t> coefficient(const UOp* e, int64_t run = 0) {
    if (run <= 0) run = k_;
    if (e == u_) return 1;
    auto is_int = [](const UOp* x) { return x->op == Op::Const && x->holds<int64_t>(); };
    if (e->op == Op::Add) {
      auto a = coefficient(e->src(0), run), b = coefficient(e->src(1), run);
      if (!a || !b) return std::nullopt;
      return *a + *b;
    }
    if (e->op == Op::Mul && (is_int(e->src(0)) || is_int(e->src(1)))) {
      bool first = is_int(e->src(0));
      auto a = coefficient(e->src(first ? 1 : 0), run);
      if (!a) return std::nullopt;
      return *a * e->src(first ? 0 : 1)->as<int64_t>();
    }
    if (!depends_on_u(e)) return 0;
    // A remainder or a quotient by a constant m of a sum whose terms free of u are multiples of a
    // divisor g of m, u's own terms plain (u times a constant), their part within [0, g) and the
    // sum never negative: the free part's remainder is a multiple of g below m, so u's part never
    // wraps it; u moves the remainder by its coefficient and the quotient not at all (a packed
    // weight's `co % 32` and `co // 32`, co = 32 * block + u: 31 simplifier calls per load
    // before; with 16 lanes, co = 16 * block + u, g = 16: 15 calls per load on AVX2, a quarter of
    // ResNet-18's lowering).
    if ((e->op == Op::Mod || e->op == Op::Idiv) && is_int(e->src(1)) && e->src(1)->as<int64_t>() > 0) {
      const int64_t m = e->src(1)->as<int64_t>();
      std::vector<const UOp*> terms;
      add_terms(e->src(0), &terms);
      int64_t g = m;  // the largest divisor of m (m, m/2, m/4, ...) every free term is a multiple of
      for (const UOp* t : terms)
        if (!depends_on_u(t))
          while (g > 1 && !multiple_of(t, g)) g = g % 2 == 0 ? g / 2 : 1;
      int64_t a = 0;
      for (const UOp* t : terms) {
        if (!depends_on_u(t)) {
          if (!multiple_of(t, g)) return std::nullopt;
        } else if (t == u_) {
          a += 1;
        } else if (t->op == Op::Mul &&
                   ((t->src(0) == u_ && is_int(t->src(1))) || (t->src(1) == u_ && is_int(t->src(0))))) {
          a += (t->src(0) == u_ ? t->src(1) : t->src(0))->as<int64_t>();
        } else {
          return std::nullopt;
        }
      }
      // within a run u's part spans a * (run - 1); a run's start moves the sum by a * run * j, which
      // must leave the remainder where it was (a multiple of g)
      if (a < 0 || a * (run - 1) >= g || (run < k_ && (a * run) % g != 0) || e->src(0)->minmax().lo < 0)
        return std::nullopt;
      return e->op == Op::Mod ? a : 0;
    }
    return std::nullopt;
  }
  // Whether e is an integer multiple of m by its form (a constant, or a product with one).
  static bool multiple_of(const UOp* e, int64_t m) {
    if (e->op == Op::Const) return e->holds<int64_t>() && e->as<int64_t>() % m == 0;
    if (e->op == Op::Mul) return multiple_of(e->src(0), m) || multiple_of(e->src(1), m);
    if (e->op == Op::Add) return multiple_of(e->src(0), m) && multiple_of(e->src(1), m);
    return false;
  }
  bool depends_on_u(const UOp* e) {
    auto it = depends_.find(e);
    if (it != depends_.end()) return it->second;
    bool d = e == u_;
    for (const UOp* x : e->src()) d = d || depends_on_u(x);
    return depends_[e] = d;
  }

  const UOp* lane(const UOp* x, int c) { return substitute_nodes(g_, x, {{u_, g_.cint(c, u_->dtype)}}); }

  // Whether the original node x varies along the lanes (its rebuilt form is then a vector of
  // k lanes). Not every vector does: a vector accumulator of another reduce, read through Geps
  // as scalars, may even be the same node as a vector load made here.
  bool vec(const UOp* x) const { return varying_.count(x) != 0; }
  // Records that the original node x varies along the lanes; returns its rebuilt form.
  const UOp* varies(const UOp* x, const UOp* rebuilt) {
    varying_.insert(x);
    return rebuilt;
  }
  // The rebuilt form of the original node x as a k-lane vector.
  const UOp* bcast(const UOp* x, const UOp* rebuilt) {
    if (vec(x)) return rebuilt;
    std::vector<const UOp*> lanes(size_t(k_), rebuilt);
    return g_.make(Op::Vectorize, rebuilt->dtype.vec(uint16_t(k_)), lanes);
  }
  // The original node computed lane by lane (scalar ops), gathered into a vector.
  const UOp* per_lane(const UOp* x) {
    std::vector<std::unordered_map<const UOp*, const UOp*>> maps;
    for (int c = 0; c < k_; c++) maps.push_back({{u_, g_.cint(c, u_->dtype)}});
    return varies(x, g_.make(Op::Vectorize, x->dtype.vec(uint16_t(k_)), substitute_copies(g_, x, maps)));
  }
  // A load that walks the lanes with stride 2 to 4 (a stride-2 convolution's input row): one
  // contiguous load of k*stride lanes from lane 0's address, masked to every stride-th lane (and
  // there by the gate of the lane it becomes), then a shuffle that keeps those lanes. It reads the
  // addresses a gather would and no others, as two to four vector loads and a permute: a gather of
  // 16 lanes is 16 loads (ResNet-18's 7x7 stem ran its inner loop on four 8-lane gathers), scalar
  // loads are 16 copies. nullptr for another stride or more than 64 lanes.
  const UOp* strided_load(const UOp* x, std::span<const UOp* const> s) {
    const UOp* index = x->src(0);
    std::optional<int64_t> stride = coefficient(index->src(1));
    if (!stride || *stride < 2 || *stride > 4 || k_ * *stride > 64) return nullptr;
    const int64_t st = *stride;
    const auto wide = uint16_t(k_ * st);
    DType p = index->dtype;
    const UOp* addr =
        g_.make(Op::Index, p.base().vec(wide).as_ptr(p.addrspace), {index->src(0), lane(index->src(1), 0)});
    // lane j of the wide load stands for lane j / st of this one where st divides j
    std::vector<int64_t> from;
    std::vector<const UOp*> kept;
    for (int64_t j = 0; j < wide; j++) {
      from.push_back(j / st);
      kept.push_back(g_.cbool(j % st == 0));
    }
    // k lanes (or a scalar) to the wide lanes; a conjunction part by part, so that a bit splat across
    // the lanes (a padded row's validity) stays a splat the renderer can tell from per-lane parts
    std::function<const UOp*(const UOp*)> spread = [&](const UOp* v) -> const UOp* {
      if (v->dtype.lanes == 1) return g_.make(Op::Vectorize, v->dtype.vec(wide), std::vector<const UOp*>(wide, v));
      if (v->op == Op::And) return g_.alu(Op::And, spread(v->src(0)), spread(v->src(1)));
      if (const UOp* one = splat_source(v)) return spread(one);
      return g_.make(Op::Gep, v->dtype.base().vec(wide), {v}, from);
    };
    const UOp* mask = g_.make(Op::Vectorize, dtypes::bool_.vec(wide), kept);
    const UOp* alt = x->dtype.is_float() ? g_.cfloat(0, x->dtype) : g_.cint(0, x->dtype);  // never kept
    if (x->nsrc() == 3) mask = g_.alu(Op::And, spread(s[2]), mask);
    const UOp* altw = spread(x->nsrc() == 3 ? s[1] : alt);
    const UOp* load = g_.make(Op::Load, x->dtype.vec(wide), {addr, altw, mask}, x->arg, x->tag);
    if (made_) made_->strided_loads = true;
    std::vector<int64_t> pick;
    for (int64_t c = 0; c < k_; c++) pick.push_back(c * st);
    return g_.make(Op::Gep, x->dtype.vec(uint16_t(k_)), {load}, pick);
  }
  // A load whose lanes are contiguous in runs of `run` (contiguous_run): one vector load per run,
  // their lanes put together. A gate is a scalar one (the same for every lane) or none.
  const UOp* run_loads(const UOp* x, std::span<const UOp* const> s, int64_t run) {
    const UOp* index = x->src(0);
    DType p = index->dtype;
    const DType part = x->dtype.vec(uint16_t(run));
    std::vector<const UOp*> lanes;
    for (int64_t j = 0; j < k_ / run; j++) {
      std::vector<const UOp*> src{g_.make(Op::Index, p.base().vec(uint16_t(run)).as_ptr(p.addrspace),
                                          {index->src(0), lane(index->src(1), int(j * run))})};
      if (x->nsrc() == 3)  // the alternative value splat across the run's lanes, as a vector load's
        src.push_back(g_.make(Op::Vectorize, part, std::vector<const UOp*>(size_t(run), s[1]))), src.push_back(s[2]);
      const UOp* load = g_.make(Op::Load, part, src, x->arg, x->tag);
      for (int64_t c = 0; c < run; c++) lanes.push_back(g_.make(Op::Gep, x->dtype, {load}, c));
    }
    return g_.make(Op::Vectorize, x->dtype.vec(uint16_t(k_)), lanes);
  }

  // The k addresses of index's lanes as one k-lane index (lane 0's plus constant offsets), or
  // nullptr when an offset is not a constant or two lanes share an address.
  const UOp* lane_address(const UOp* index) {
    const UOp* base = lane(index->src(1), 0);
    std::vector<int64_t> offsets{0};
    std::optional<int64_t> stride = coefficient(index->src(1));  // affine in u: no simplifier calls
    if (stride && *stride == 0) return nullptr;
    for (int c = 1; c < k_ && stride; c++) offsets.push_back(c * *stride);
    const UOp* neg_base = stride ? nullptr : g_.alu(Op::Mul, base, g_.cint(-1, base->dtype));
    std::unordered_set<int64_t> seen{0};
    for (int c = 1; c < k_ && !stride; c++) {
      const UOp* d = simplify(g_, g_.alu(Op::Add, lane(index->src(1), c), neg_base));
      if (d->op != Op::Const || !seen.insert(int64_t(d->const_int())).second) return nullptr;
      offsets.push_back(int64_t(d->const_int()));
    }
    DType p = index->dtype;
    return g_.make(Op::Index, p.base().vec(uint16_t(k_)).as_ptr(p.addrspace),
                   {index->src(0), lane_index(g_, base, offsets)});
  }
  const UOp* vector_address(const UOp* index) {
    const UOp* base = lane(index->src(1), 0);
    DType p = index->dtype;
    return g_.make(Op::Index, p.base().vec(uint16_t(k_)).as_ptr(p.addrspace), {index->src(0), base});
  }

  const UOp* rebuild(const UOp* x, std::span<const UOp* const> s) {
    if (x == u_) {
      std::vector<const UOp*> lanes;
      for (int c = 0; c < k_; c++) lanes.push_back(g_.cint(c, u_->dtype));
      return varies(x, g_.make(Op::Vectorize, u_->dtype.vec(uint16_t(k_)), lanes));
    }
    bool any = false;
    for (const UOp* y : x->src()) any = any || vec(y);
    // a load or store whose address moves with the lanes (the Index itself stays scalar-typed)
    if ((x->op == Op::Load || x->op == Op::Store) && x->src(0)->op == Op::Index && vec(x->src(0)->src(1))) any = true;
    if (!any) return g_.replace_src(x, s);
    DType vdt = x->dtype.vec(uint16_t(k_));
    switch (x->op) {
      case Op::Index:
        return g_.replace_src(x, s);  // only read by the Load/Store above it
      case Op::Load: {
        const UOp* addr = x->src(0);
        bool addr_vec = addr->op == Op::Index && vec(addr->src(1));
        // Lanes contiguous in runs (contiguous_run, no simplifier calls) are loaded run by run
        // without asking the simplifier whether they are contiguous all through: where they are,
        // the runs' loads are the same vector's parts.
        int64_t run = 0;
        bool contig = false;
        if (addr_vec) {
          std::optional<int64_t> c = coefficient(addr->src(1));
          if (c)
            contig = *c == 1;
          else if (!(run = contiguous_run(addr->src(1))))
            contig = simplifies_contiguous(addr->src(1));
        }
        // a scalar gate and alternative value (a whole run is on or off): one load per run
        if (run && (x->nsrc() != 3 || (!vec(x->src(1)) && !vec(x->src(2))))) return varies(x, run_loads(x, s, run));
        if (addr_vec && !contig && access_.strided)
          if (const UOp* w = strided_load(x, s)) return varies(x, w);
        if (addr_vec && access_.gathers && !contig)
          if (const UOp* a = lane_address(addr)) {  // one gather; a gate masks it as it would a vector load
            std::vector<const UOp*> src{a};
            if (x->nsrc() == 3) src.push_back(bcast(x->src(1), s[1])), src.push_back(s[2]);
            if (made_) made_->lanes = true;
            return varies(x, g_.make(Op::Load, vdt, src, x->arg, x->tag));
          }
        if (!contig) {
          if (made_) made_->lanes = true;
          return per_lane(x);
        }
        std::vector<const UOp*> src{vector_address(addr)};
        if (x->nsrc() == 3) {  // gated: a vector gate masks lanes, a scalar one the whole vector
          src.push_back(bcast(x->src(1), s[1]));
          src.push_back(s[2]);
        }
        return varies(x, g_.make(Op::Load, vdt, src, x->arg, x->tag));
      }
      case Op::Store: {
        std::vector<const UOp*> src{vector_address(x->src(0)), bcast(x->src(1), s[1])};
        if (x->nsrc() == 3) src.push_back(s[2]);
        return g_.make(Op::Store, x->dtype, src, x->arg, x->tag);
      }
      case Op::Reduce:
        return varies(x, g_.make(Op::Reduce, s[0]->dtype, s, x->arg, x->tag));
      case Op::Cast:
      case Op::Bitcast:
        return varies(x, g_.make(x->op, vdt, {s[0]}, vdt));
      case Op::Threefry:
        return per_lane(x);  // scalar-only composition
      default:
        break;
    }
    if (!is_elementwise(x->op)) fail(Code::Internal, "vectorize: ", op_name(x->op), " depends on the vector axis");
    std::vector<const UOp*> src;
    for (size_t i = 0; i < s.size(); i++) src.push_back(bcast(x->src(i), s[i]));
    return varies(x, g_.make(x->op, vdt, src, x->arg, x->tag));
  }

  Graph& g_;
  const UOp* u_;
  int k_;
  LaneAccess access_;
  Made* made_;
  Rebuilder rb_;
  std::unordered_map<const UOp*, bool> depends_;  // whether a node depends on u
  std::unordered_set<const UOp*> varying_;        // original nodes
};

// Whether a reduced value can take range r (an UNROLL range) as vector lanes with vector loads:
// every load that moves with r walks it contiguously, or with a stride of 2 to 4 beside one that
// does where the target reads those as wide loads (a stride-2 convolution's input in its weight
// gradient), and every other node that moves with r is elementwise (or an address). Inside a register tile only where
// no UPCAST range of the value can be a store's lanes (`store_lane`): its copies then each keep a vector accumulator
// (a weight gradient's tile, whose outputs share no contiguous axis with its loads).
bool streams_along(Graph& g, const UOp* value, const UOp* r, const std::function<bool(const UOp*)>& store_lane,
                   LaneAccess access) {
  int64_t k = const_bound(r);
  if (k < 2 || k > 64 || value->dtype.lanes != 1) return false;
  std::vector<const UOp*> order = toposort(value);
  OpenRanges open(order);
  Vectorizer lanes(g, r, int(k));
  bool any_load = false;
  for (const UOp* x : order) {
    if (is_type(x, AxisType::Upcast) && store_lane(x)) return false;  // its stores take the lanes
    if (x == r || !open.contains(x, r)) continue;
    if (x->op == Op::Load) {
      if (access.strided && lanes.strided(x->src(0)->src(1))) continue;
      if (!lanes.contiguous(x->src(0)->src(1))) return false;
      any_load = true;
    } else if (!is_elementwise(x->op) && x->op != Op::Index && x->op != Op::Cast) {
      return false;
    }
  }
  return any_load;
}

// Whether a store that walks range r with a stride still pays to take r as vector lanes: its value
// is a reduction (each result is stored once after its whole reduce loop) that loads along r
// contiguously inside the loop (a convolution's output channels from its packed weight).
bool reduces_along(Graph& g, const UOp* store, const UOp* r) {
  int64_t k = const_bound(r);
  if (k < 4 || k > 64) return false;
  std::vector<const UOp*> order = toposort(store->src(1));
  OpenRanges open(order);
  Vectorizer lanes(g, r, int(k));
  bool reduce = false, contiguous_load = false;
  for (const UOp* x : order) {
    reduce = reduce || x->op == Op::Reduce;
    if (x->op == Op::Load && open.contains(x, r) && x->src(0)->op == Op::Index &&
        (lanes.contiguous_run(x->src(0)->src(1)) || lanes.contiguous(x->src(0)->src(1))))
      contiguous_load = true;
  }
  return reduce && contiguous_load;
}

const UOp* vectorize_store(Graph& g, const UOp* store, const UOp* range, LaneAccess access, Made* made) {
  int64_t k = const_bound(range);
  if (k < 2 || k > 64) return nullptr;
  return Vectorizer(g, range, int(k), access, made).store(store);
}

}  // namespace

const UOp* vectorize_store(Graph& g, const UOp* store, const UOp* range, LaneAccess access) {
  return vectorize_store(g, store, range, access, nullptr);
}

namespace {

// An address as base + offset: the terms of its sum that are not constants, in order (addresses that
// differ only in their constants have the same terms), and the constants' total. The copies'
// addresses carry their constant where the copied range was, inside the sum (((1 + i) + j) + k).
struct Offset {
  std::vector<const UOp*> base;
  int64_t offset = 0;
};
void split_constant(const UOp* e, Offset* out) {
  if (e->op == Op::Const && e->holds<int64_t>()) {
    out->offset += e->as<int64_t>();
  } else if (e->op == Op::Add) {
    split_constant(e->src(0), out);
    split_constant(e->src(1), out);
  } else {
    out->base.push_back(e);
  }
}
Offset split_constant(const UOp* e) {
  Offset out;
  split_constant(e, &out);
  return out;
}
// Groups of accesses by (buffer, value dtype, stride between lanes, base).
using AccessKey = std::tuple<const UOp*, uint64_t, int64_t, std::vector<const UOp*>>;
uint64_t dtype_key(DType d) { return uint64_t(d.scalar) << 16 | d.lanes; }

// The strided loads of one row that together read all of it (a 2x2 pool's x and x + 1 at stride
// 2): expand loads each as a wide load masked to every stride-th lane. Where the loads at offsets
// o, o + 1, .., o + stride - 1 from one base are all there, every lane of the wide load at o is
// read by one of them, so that load needs no mask and serves all of them (each keeps its lanes,
// shifted by its offset). A masked 32-lane load is four masked loads on AVX2 and each one its own
// shuffle; the pair is one plain load: the small CNN's pool kernels compiled in a fifth fewer
// instructions.
const UOp* merge_strided_loads(Graph& g, const UOp* sink) {
  // (buffer, wide dtype, stride, base) -> offset from the base -> the Geps (of lanes that are
  // multiples of the stride) of the strided loads there (copies may share a load)
  std::map<AccessKey, std::map<int64_t, std::vector<const UOp*>>> groups;
  const std::vector<const UOp*> order = toposort(sink);
  for (const UOp* u : order) {
    if (u->op != Op::Gep || !u->holds<std::vector<int64_t>>()) continue;
    const UOp* ld = u->src(0);
    if (ld->op != Op::Load || ld->nsrc() != 3 || ld->src(0)->op != Op::Index || ld->src(0)->nsrc() != 2) continue;
    const UOp* idx = ld->src(0)->src(1);
    const UOp* mask = ld->src(2);
    const int64_t wide = ld->dtype.lanes;
    if (idx->dtype.lanes != 1 || mask->op != Op::Vectorize || wide < 4) continue;
    // the mask: every stride-th lane, from lane 0
    int64_t stride = 0;
    for (int64_t j = 1; j < wide && !stride; j++)
      if (mask->src(size_t(j))->op == Op::Const && mask->src(size_t(j))->const_int()) stride = j;
    if (stride < 2 || wide % stride) continue;
    bool pattern = true;
    for (int64_t j = 0; j < wide && pattern; j++)
      pattern = mask->src(size_t(j))->op == Op::Const && (mask->src(size_t(j))->const_int() != 0) == (j % stride == 0);
    for (int64_t lane : u->as<std::vector<int64_t>>()) pattern = pattern && lane % stride == 0;
    if (!pattern) continue;
    Offset at = split_constant(idx);
    groups[{ld->src(0)->src(0), dtype_key(ld->dtype), stride, std::move(at.base)}][at.offset].push_back(u);
  }
  std::unordered_map<const UOp*, const UOp*> map;
  for (auto& [key, at] : groups) {
    const int64_t stride = std::get<2>(key);
    for (auto it = at.begin(); it != at.end(); ++it) {
      const int64_t o = it->first;
      bool whole = true;
      for (int64_t d = 1; d < stride && whole; d++) whole = at.count(o + d) && !map.count(at[o + d][0]);
      if (!whole || map.count(it->second[0])) continue;
      const UOp* ld = it->second[0]->src(0);
      const UOp* plain = g.make(Op::Load, ld->dtype, {ld->src(0)}, ld->arg, ld->tag);
      for (int64_t d = 0; d < stride; d++)
        for (const UOp* gep : at[o + d]) {
          std::vector<int64_t> lanes = gep->as<std::vector<int64_t>>();
          for (int64_t& l : lanes) l += d;
          map[gep] = g.make(Op::Gep, gep->dtype, {plain}, lanes);
        }
    }
  }
  return map.empty() ? sink : substitute_nodes(g, sink, map);
}

// The loads of a square tile of a row-major source (a transposing copy's, heuristic_cpu.cpp 4e): k
// copies, at offsets o .. o + k - 1 from one base along an axis the source walks contiguously,
// each reading k rows `stride` apart as its lanes: one gather (targets with gathers) or k scalar
// loads put together (others); k a power of two. Together they read k contiguous elements of each
// of the k rows: k vector loads, one per row, and each copy lane j of every row (a Vectorize of
// Geps, a column of the tile). The LLVM renderer transposes such a tile in registers, log2(k)
// rounds of k two-input shuffles: a 16 x 16 tile of floats is 16 loads and 64 shuffles, against
// 16 gathers of 16 lanes.
const UOp* transpose_tiles(Graph& g, const UOp* sink) {
  // One copy's lanes: the node that stands for them (a gather, a Vectorize of scalar loads), the
  // buffer, lane 0's address and the pointer type of a k-lane load from it.
  struct Lanes {
    const UOp* node;
    const UOp* buffer;
    const UOp* base;
    DType pointer;
  };
  // (buffer, dtype, stride, base) -> offset from the base -> the copy there
  std::map<AccessKey, std::map<int64_t, Lanes>> groups;
  auto note = [&](const Lanes& l, int64_t stride) {
    Offset at = split_constant(l.base);
    groups[{l.buffer, dtype_key(l.node->dtype), stride, std::move(at.base)}].emplace(at.offset, l);
  };
  auto plain_load = [](const UOp* x) {
    return x->op == Op::Load && x->nsrc() == 1 && x->src(0)->op == Op::Index && x->src(0)->nsrc() == 2;
  };
  for (const UOp* u : toposort(sink)) {
    const int64_t k = u->dtype.lanes;
    if (k < 4 || (k & (k - 1)) != 0) continue;
    if (plain_load(u) && u->src(0)->src(1)->dtype.lanes == k) {  // a gather
      const UOp* idx = u->src(0)->src(1);
      const UOp* base = lane_index_base(idx);
      if (!base) continue;
      const UOp* offsets = idx->src(1);
      const int64_t stride = int64_t(offsets->src(1)->const_int());
      bool rows = stride != 0;  // lane r at base + r * stride
      for (int64_t r = 0; r < k && rows; r++) rows = int64_t(offsets->src(size_t(r))->const_int()) == r * stride;
      if (rows) note({u, u->src(0)->src(0), base, u->src(0)->dtype}, stride);
    } else if (u->op == Op::Vectorize && plain_load(u->src(0)) && u->src(0)->dtype.lanes == 1) {  // lane by lane
      const UOp* buffer = u->src(0)->src(0)->src(0);
      std::vector<Offset> at;
      bool rows = true;
      for (const UOp* x : u->src()) {
        rows = rows && plain_load(x) && x->src(0)->src(0) == buffer;
        if (rows) at.push_back(split_constant(x->src(0)->src(1)));
      }
      const int64_t stride = rows ? at[1].offset - at[0].offset : 0;
      for (int64_t r = 0; r < k && rows; r++)
        rows = at[size_t(r)].base == at[0].base && at[size_t(r)].offset - at[0].offset == r * stride;
      const DType p = u->src(0)->src(0)->dtype;
      if (rows && stride != 0)
        note({u, buffer, u->src(0)->src(0)->src(1), p.base().vec(uint16_t(k)).as_ptr(p.addrspace)}, stride);
    }
  }
  std::unordered_map<const UOp*, const UOp*> map;
  for (auto& [key, at] : groups) {
    const int64_t stride = std::get<2>(key);
    for (auto it = at.begin(); it != at.end(); ++it) {
      const Lanes& first = it->second;
      const int64_t o = it->first, k = first.node->dtype.lanes;
      bool whole = !map.count(first.node);
      for (int64_t j = 1; j < k && whole; j++) whole = at.count(o + j) && !map.count(at.at(o + j).node);
      if (!whole) continue;
      const DType row = first.node->dtype;
      std::vector<const UOp*> cur;  // row r's k elements
      for (int64_t r = 0; r < k; r++) {
        const UOp* at_r = r == 0 ? first.base : g.alu(Op::Add, first.base, g.cint(r * stride, first.base->dtype));
        cur.push_back(g.make(Op::Load, row, {g.make(Op::Index, first.pointer, {first.buffer, at_r})}));
      }
      for (int64_t j = 0; j < k; j++) {  // column j: lane j of every row
        std::vector<const UOp*> lanes;
        for (const UOp* v : cur) lanes.push_back(g.make(Op::Gep, row.base(), {v}, j));
        map[at.at(o + j).node] = g.make(Op::Vectorize, row, lanes);
      }
    }
  }
  return map.empty() ? sink : substitute_nodes(g, sink, map);
}

// The scatters of copies along an axis the output walks contiguously (a convolution whose output
// channels are the lanes, copied along the output row): m copies at consecutive addresses o .. o +
// m - 1 from one base, each storing its L lanes `stride` apart, are L / k square tiles (k the power
// of two from 4 to 16 that holds m, at most L; m at least 3/4 of k). A tile's rows are k lanes of
// each copy (and, past m, other orders of the first copy's lanes: padding); its column j is lane j
// of every copy, the m contiguous elements at o + j * stride: one vector store (masked to m lanes
// where m < k), which the LLVM renderer makes by transposing the tile in registers (as
// transpose_tiles' loads). A 32-channel tile over 8 columns was 32 scatters of 8 lanes; it is four
// 8 x 8 transposes and 32 stores. Over 7 columns (ResNet's 28-, 14- and 7-wide rows) the same with
// stores masked to 7: its 1x1 stride-2 shortcut 0.039 -> 0.028 ms, a 64-channel 3x3 convolution at
// 56 x 56 0.463 -> 0.440 ms. A copy stored lane by lane (no scatters: AVX2) is taken as one
// scatter where its L stores are all there, `stride` apart. Other copies keep their stores, and
// gated ones too.
// Tiles are made where the copies' reduction runs at most this many steps: the transposes cost
// compile time (a tile's columns are many nodes, and LLVM's shuffles), worth it where the stores
// are a large part of the kernel. Over ResNet-18's 3x3 convolutions (medians alone): 64 channels
// at 56 x 56, 192 steps, 0.463 -> 0.440 ms; 128 at 28 x 28, 384 steps, 0.453 -> 0.442; 256 at 14
// x 14, 768 steps, 0.441 -> 0.436; 512 at 7 x 7, 1536 steps, no change. Transposing all of them
// took ResNet-18's cold compile from 116 to 150 ms.
constexpr int64_t kMaxTransposedReduceSteps = 512;

const UOp* transpose_scatters(Graph& g, const UOp* sink) {
  struct Scatter {
    std::vector<const UOp*> stores;  // the scatter, or the lane stores in lane order
    const UOp* value;                // the copy's vector
    const UOp* base;                 // lane 0's address
    const UOp* buffer;
  };
  std::map<AccessKey, std::map<int64_t, Scatter>> groups;
  auto note = [&](Scatter sc, int64_t stride) {
    Offset at = split_constant(sc.base);
    groups[{sc.buffer, dtype_key(sc.value->dtype), stride, std::move(at.base)}].emplace(at.offset, std::move(sc));
  };
  // lane stores of each vector: lane -> store
  std::unordered_map<const UOp*, std::map<int64_t, const UOp*>> lane_stores;
  std::vector<const UOp*> vectors;  // in the order first seen
  for (const UOp* s : sink->src()) {
    if (s->op != Op::Store || s->nsrc() != 2 || s->src(0)->op != Op::Index || s->src(0)->nsrc() != 2) continue;
    const UOp* idx = s->src(0)->src(1);
    const UOp* v = s->src(1);
    if (v->dtype.is_bool() || v->dtype.base().is_bool()) continue;
    if (idx->dtype.lanes == 1) {  // lane j of a vector, alone
      if (v->op != Op::Gep || !v->holds<int64_t>() || v->src(0)->dtype.lanes < 4) continue;
      auto [it, fresh] = lane_stores.try_emplace(v->src(0));
      if (fresh) vectors.push_back(v->src(0));
      it->second.emplace(v->as<int64_t>(), s);
      continue;
    }
    const int64_t lanes = idx->dtype.lanes;
    if (lanes < 4 || v->dtype.lanes != lanes) continue;
    const UOp* base = lane_index_base(idx);
    if (!base) continue;
    const UOp* offsets = idx->src(1);
    const int64_t stride = int64_t(offsets->src(1)->const_int());
    bool rows = stride != 0;
    for (int64_t r = 0; r < lanes && rows; r++) rows = int64_t(offsets->src(size_t(r))->const_int()) == r * stride;
    if (rows) note({{s}, v, base, s->src(0)->src(0)}, stride);
  }
  for (const UOp* v : vectors) {
    const std::map<int64_t, const UOp*>& ls = lane_stores.at(v);
    const int64_t lanes = v->dtype.lanes;
    if (int64_t(ls.size()) != lanes || ls.begin()->first != 0 || ls.rbegin()->first != lanes - 1) continue;
    std::vector<const UOp*> stores;
    std::vector<Offset> at;
    for (const auto& [j, s] : ls) {
      stores.push_back(s);
      at.push_back(split_constant(s->src(0)->src(1)));
    }
    const int64_t stride = at[1].offset - at[0].offset;
    bool rows = stride != 0;
    for (int64_t j = 0; j < lanes && rows; j++)
      rows = stores[size_t(j)]->src(0)->src(0) == stores[0]->src(0)->src(0) && at[size_t(j)].base == at[0].base &&
             at[size_t(j)].offset - at[0].offset == j * stride;
    if (rows) note({stores, v, stores[0]->src(0)->src(1), stores[0]->src(0)->src(0)}, stride);
  }
  // The steps of the reductions a copy's value comes from (the loops left after UNROLL), or -1 for
  // a symbolic count; asked once per kernel.
  std::optional<int64_t> steps;
  auto reduce_steps = [&](const UOp* v) {
    if (!steps) {
      steps = 1;
      for (const UOp* r : ranges_of(v))
        if (is_type(r, AxisType::Reduce)) steps = const_bound(r) < 0 || *steps < 0 ? -1 : *steps * const_bound(r);
    }
    return *steps;
  };
  std::unordered_map<const UOp*, std::vector<const UOp*>> replaced;  // a first store -> the tile's stores
  std::unordered_set<const UOp*> dropped;                            // the other stores of tiled copies
  for (auto& [key, at] : groups) {
    const int64_t stride = std::get<2>(key);
    std::unordered_set<int64_t> tiled;
    for (auto it = at.begin(); it != at.end(); ++it) {
      const int64_t o = it->first;
      const Scatter& first = it->second;
      if (tiled.count(o)) continue;
      const int64_t lanes = first.value->dtype.lanes;
      int64_t run = 1;
      while (run < 16 && run < lanes && at.count(o + run) && !tiled.count(o + run) &&
             at.at(o + run).value->dtype == first.value->dtype)
        run++;
      // k rows, the first m of them copies: a run of 7 (a 28-, 14- or 7-wide output row in copies of 7)
      // is an 8 x 8 tile whose last row is any other vector, and its columns are stored masked to 7.
      int64_t k = 4;
      while (k < run && k < 16) k *= 2;
      const int64_t m = std::min(run, k);
      if (4 * m < 3 * k || k > lanes || lanes % k != 0) continue;
      const int64_t n = reduce_steps(first.value);
      if (n < 0 || n > kMaxTransposedReduceSteps) continue;
      const DType elem = first.value->dtype.base();
      const DType p = first.stores[0]->src(0)->dtype;
      const DType vp = p.base().vec(uint16_t(k)).as_ptr(p.addrspace);
      const UOp* gate = nullptr;
      if (m < k) {
        std::vector<const UOp*> on;
        for (int64_t c = 0; c < k; c++) on.push_back(g.cbool(c < m));
        gate = g.make(Op::Vectorize, dtypes::bool_.vec(uint16_t(k)), on);
      }
      std::vector<const UOp*> stores;
      for (int64_t q = 0; q < lanes / k; q++) {
        std::vector<int64_t> part, reversed;
        for (int64_t j = 0; j < k; j++) part.push_back(q * k + j), reversed.insert(reversed.begin(), q * k + j);
        std::vector<const UOp*> rows;
        for (int64_t c = 0; c < m; c++) {
          const UOp* v = at.at(o + c).value;
          rows.push_back(lanes == k ? v : g.make(Op::Gep, elem.vec(uint16_t(k)), {v}, part));
        }
        // the padding rows: lanes of the first copy in other orders (a tile's rows are distinct vectors)
        for (int64_t c = m; c < k; c++) {
          std::vector<int64_t> order = reversed;
          std::rotate(order.begin(), order.begin() + (c - m), order.end());
          rows.push_back(g.make(Op::Gep, elem.vec(uint16_t(k)), {first.value}, order));
        }
        for (int64_t j = 0; j < k; j++) {
          std::vector<const UOp*> column;
          for (const UOp* r : rows) column.push_back(g.make(Op::Gep, elem, {r}, j));
          const int64_t off = (q * k + j) * stride;
          const UOp* addr = off == 0 ? first.base : g.alu(Op::Add, first.base, g.cint(off, first.base->dtype));
          std::vector<const UOp*> src{g.make(Op::Index, vp, {first.buffer, addr}),
                                      g.make(Op::Vectorize, elem.vec(uint16_t(k)), column)};
          if (gate) src.push_back(gate);
          stores.push_back(g.make(Op::Store, dtypes::void_, src, first.stores[0]->arg, first.stores[0]->tag));
        }
      }
      for (int64_t c = 0; c < m; c++) {
        tiled.insert(o + c);
        for (const UOp* s : at.at(o + c).stores) dropped.insert(s);
      }
      dropped.erase(first.stores[0]);
      replaced[first.stores[0]] = std::move(stores);
    }
  }
  if (replaced.empty()) return sink;
  std::vector<const UOp*> out;
  for (const UOp* s : sink->src()) {
    if (dropped.count(s)) continue;
    auto it = replaced.find(s);
    if (it == replaced.end())
      out.push_back(s);
    else
      out.insert(out.end(), it->second.begin(), it->second.end());
  }
  return g.make(Op::Sink, dtypes::void_, out, sink->arg, sink->tag);
}

}  // namespace

const UOp* expand_kernel(Graph& g, const UOp* sink, LaneAccess access) {
  Made made;  // what later passes look for
  // The UPCAST ranges a store may take as lanes in 2. below (those it walks contiguously, or the
  // first, where a reduction loads along it contiguously): a Reduce that depends on one keeps its
  // unrolled copies scalar in 1., since those lanes then widen its value. Worked out when first
  // asked (an unrolled reduce inside a register tile), not for every kernel.
  std::optional<std::unordered_set<const UOp*>> store_lanes;
  auto store_lane = [&](const UOp* r) {
    if (!store_lanes) {
      store_lanes.emplace();
      for (const UOp* s : sink->src()) {
        if (s->op != Op::Store || s->src(0)->op != Op::Index) continue;
        bool first = true;
        for (const UOp* u : ranges_of(s)) {
          if (!is_type(u, AxisType::Upcast)) continue;
          const int64_t k = const_bound(u);
          Vectorizer lanes(g, u, int(std::max<int64_t>(k, 1)));
          if (k >= 2 && (lanes.contiguous(s->src(0)->src(1)) || (first && reduces_along(g, s, u))))
            store_lanes->insert(u);
          first = false;
        }
      }
    }
    return store_lanes->count(r) != 0;
  };
  // 1. UNROLL: a Reduce over unroll ranges reduces the copies of its value first. The first
  //    unroll range its loads walk contiguously becomes the lanes of a vector accumulator
  //    instead (one vector load per step, no per-step horizontal work); the lanes are folded
  //    once, after the reduce loop.
  Rebuilder unroll(g, [&](const UOp* u, std::span<const UOp* const> srcs) -> const UOp* {
    if (u->op != Op::Reduce || u->nsrc() < 2) return g.replace_src(u, srcs);
    std::vector<const UOp*> unrolled, kept{srcs[0]};
    for (size_t i = 1; i < srcs.size(); i++) (is_type(srcs[i], AxisType::Unroll) ? unrolled : kept).push_back(srcs[i]);
    if (unrolled.empty()) return g.replace_src(u, srcs);
    Op op = u->as<ReduceArg>().op;
    const UOp* lanes = nullptr;
    for (size_t i = 0; i < unrolled.size() && !lanes && u->dtype.lanes == 1; i++)
      if (streams_along(g, srcs[0], unrolled[i], store_lane, access)) {
        lanes = unrolled[i];
        unrolled.erase(unrolled.begin() + long(i));
      }
    // Floats narrower than float32 combine their copies in float32, as their accumulators do
    // (lower_reduces): rounding each partial sum to fp8 would lose the sum.
    bool widen = u->dtype.is_float() && u->dtype.bits() < 32;
    std::vector<const UOp*> vals;
    for (const UOp* v : substitute_copies(g, srcs[0], combos(g, unrolled)))
      vals.push_back(widen ? g.cast(v, dtypes::float32.vec(v->dtype.lanes)) : v);
    kept[0] = fold(g, op, vals);
    if (lanes) kept[0] = Vectorizer(g, lanes, int(const_bound(lanes)), access, &made).value(kept[0]);
    const UOp* red = kept.size() == 1 ? kept[0] : g.make(Op::Reduce, kept[0]->dtype, kept, u->arg, u->tag);
    if (lanes) red = fold_lanes(g, op, red);
    return widen ? g.cast(red, u->dtype) : red;
  });
  sink = unroll.get(sink);

  // 2. UPCAST: a store becomes vector lanes along the first upcast range it walks contiguously
  //    (by id: the optimizer upcasts that axis first), then is copied once per value of the
  //    other upcast ranges it uses.
  std::vector<const UOp*> stores;
  for (const UOp* s : sink->src()) {
    std::vector<const UOp*> up;
    bool fragments = false;  // a tensor-core tile (TC made a WARP range): its values are a warp's fragments
    for (const UOp* r : ranges_of(s)) {
      if (is_type(r, AxisType::Upcast)) up.push_back(r);
      fragments = fragments || is_type(r, AxisType::Warp);
    }
    // A reduction that loads along the first upcast range contiguously takes it as lanes even
    // where the store walks it with a stride: its results are stored lane by lane (a convolution
    // whose output channels are the lanes).
    // A tensor-core tile's values are fragments of a warp, not lanes: its upcasts are copies only.
    std::vector<const UOp*> parts;
    for (size_t i = 0; i < up.size() && !fragments; i++) {
      if (const UOp* vs = vectorize_store(g, s, up[i], access, &made)) {
        parts = {vs};
      } else if (i == 0 && reduces_along(g, s, up[i])) {
        int64_t k = const_bound(up[i]);
        parts = Vectorizer(g, up[i], int(k), access, &made).scatter(s);
      } else {
        continue;
      }
      up.erase(up.begin() + long(i));
      break;
    }
    if (parts.empty()) parts = {s};
    if (up.empty()) {
      stores.insert(stores.end(), parts.begin(), parts.end());
      continue;
    }
    // The parts (a scatter's lane stores) share their value: they are copied together, so that
    // the value is rebuilt once per copy, not once per part and copy.
    const UOp* group = g.make(Op::Sink, dtypes::void_, parts);
    std::vector<const UOp*> copies = substitute_copies(g, group, combos(g, up));
    for (size_t p = 0; p < parts.size(); p++)
      for (const UOp* copy : copies) stores.push_back(copy->src(p));
  }
  // (an UPCAST or UNROLL range left where it cannot be expanded is an error of linearize, whose
  // walk of the kernel finds it: a walk here for it alone was a tenth of this stage's time)
  const UOp* out = g.make(Op::Sink, dtypes::void_, stores, sink->arg, sink->tag);
  // The copies' addresses are folded as they are built (base + constant), so the loads of one row
  // or one tile are found here; a walk of the kernel for each only where expand made such loads.
  if (made.strided_loads) out = merge_strided_loads(g, out);
  if (made.lanes) out = transpose_tiles(g, out);
  if (made.scatters || (made.lane_stores && access.tiles)) out = transpose_scatters(g, out);
  return out;
}

}  // namespace sn
