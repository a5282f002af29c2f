#include "core/codegen/kernel_util.h"

#include <algorithm>
#include <array>
#include <limits>
#include <unordered_set>

namespace sn {

const UOp* Rebuilder::get(const UOp* root) {
  if (root->id < keep_below_) return root;
  if (const UOp* known = done_.get(root)) return known;
  std::vector<std::pair<const UOp*, size_t>> stack{{root, 0}};
  std::vector<const UOp*> srcs;
  while (!stack.empty()) {
    auto [u, i] = stack.back();
    if (i < u->nsrc()) {
      stack.back().second++;
      const UOp* s = u->src(i);
      if (s->id >= keep_below_ && !done_.get(s)) stack.push_back({s, 0});
      continue;
    }
    stack.pop_back();
    if (done_.get(u)) continue;  // a shared node finished through another path
    srcs.clear();
    for (const UOp* s : u->src()) srcs.push_back(s->id < keep_below_ ? s : done_.get(s));
    const UOp* r = fn_(u, srcs);  // a get() from inside fn_ has its own srcs
    done_.set(u, r);
  }
  return done_.get(root);
}

const UOp* Rebuilder::run(std::span<const UOp* const> order) {
  if (order.empty()) return nullptr;
  std::vector<const UOp*> srcs;
  for (const UOp* u : order) {
    if (u->id < keep_below_ || done_.get(u)) continue;  // (done by a get() from inside fn_)
    srcs.clear();
    for (const UOp* s : u->src()) {
      const UOp* d = s->id < keep_below_ ? s : done_.get(s);
      srcs.push_back(d ? d : get(s));  // (a source `order` lacks or puts later: walked as get() would)
    }
    done_.set(u, fn_(u, srcs));
  }
  return get(order.back());
}

namespace {
// Scalar index math over constants, folded as a substitution rebuilds it (r*64 with r = 0 is 0,
// x + 0 is x, 8 // 8 is 1, (x + 1) + -57 is x + -56): expand's copies then hand the simplifier
// terms instead of chains of them, in the form it leaves them (a sum's constant last), and the
// vector lanes it leaves alone (a padded gate's) come out folded. nullptr: u is built as it is.
const UOp* fold_index(Graph& g, const UOp* u, std::span<const UOp* const> s) {
  if (!u->dtype.is_index() || u->dtype.lanes != 1) return nullptr;
  if (u->op != Op::Add && u->op != Op::Mul && u->op != Op::Mod && u->op != Op::Idiv) return nullptr;
  auto value = [](const UOp* x, int64_t* v) {
    if (x->op != Op::Const || !x->holds<int64_t>()) return false;
    *v = x->as<int64_t>();
    return true;
  };
  int64_t a = 0, b = 0, r = 0;
  bool ca = value(s[0], &a), cb = value(s[1], &b);
  if (u->op == Op::Mod || u->op == Op::Idiv) {
    if (!ca || !cb || a < 0 || b <= 0) return nullptr;
    return g.cint(u->op == Op::Mod ? a % b : a / b, u->dtype);
  }
  if (u->op == Op::Add) {
    if (ca && cb) return __builtin_add_overflow(a, b, &r) ? nullptr : g.cint(r, u->dtype);
    if (ca && a == 0) return s[1];
    if (cb && b == 0) return s[0];
    // (x + c1) + c2 -> x + (c1 + c2); (x + c) + y -> (x + y) + c: the constant a copy's range
    // became moves to the end of the sum, where the simplifier keeps it
    int64_t inner = 0;
    if (s[0]->op == Op::Add && value(s[0]->src(1), &inner)) {
      if (!cb) return g.alu(Op::Add, g.alu(Op::Add, s[0]->src(0), s[1]), s[0]->src(1));
      if (!__builtin_add_overflow(inner, b, &r))
        return r == 0 ? s[0]->src(0) : g.alu(Op::Add, s[0]->src(0), g.cint(r, u->dtype));
    }
  } else {
    if (ca && cb) return __builtin_mul_overflow(a, b, &r) ? nullptr : g.cint(r, u->dtype);
    if ((ca && a == 0) || (cb && b == 0)) return g.cint(0, u->dtype);
    if (ca && a == 1) return s[1];
    if (cb && b == 1) return s[0];
  }
  return nullptr;
}

// u rebuilt over new sources: Reduce and End range lists keep only what is still a Range (a
// range substituted by a value is no loop any more); index math over constants folds.
const UOp* with_sources(Graph& g, const UOp* u, std::span<const UOp* const> srcs) {
  if (const UOp* f = fold_index(g, u, srcs)) return f;
  if (u->op == Op::Reduce || u->op == Op::End) {
    std::vector<const UOp*> s{srcs[0]};
    for (size_t i = 1; i < srcs.size(); i++)
      if (srcs[i]->op == Op::Range) s.push_back(srcs[i]);
    if (u->op == Op::End && s.size() == 1) return s[0];
    if (u->op == Op::Reduce && s.size() == 1 && u->nsrc() > 1) return s[0];  // no range left: the value
    return g.make(u->op, u->dtype, s, u->arg, u->tag);
  }
  return g.replace_src(u, srcs);
}
}  // namespace

const UOp* substitute_nodes(Graph& g, const UOp* root, const std::unordered_map<const UOp*, const UOp*>& map) {
  Rebuilder rb(g, [&](const UOp* u, std::span<const UOp* const> srcs) -> const UOp* {
    if (auto it = map.find(u); it != map.end()) return it->second;
    return with_sources(g, u, srcs);
  });
  // Only a key or a node newer than it can change (expand substitutes lanes of a range in many
  // small expressions over a large kernel: most of what they reach predates the range).
  uint32_t oldest = ~0u;
  for (const auto& [from, to] : map) oldest = std::min(oldest, from->id);
  rb.keep_below(oldest);
  return rb.get(root);
}

std::vector<const UOp*> substitute_copies(Graph& g, const UOp* root,
                                          const std::vector<std::unordered_map<const UOp*, const UOp*>>& maps) {
  std::vector<const UOp*> out;
  if (maps.empty()) return out;
  uint32_t oldest = ~0u;
  for (const auto& [from, to] : maps.front()) oldest = std::min(oldest, from->id);
  // One walk: the nodes under root that reach a key, children first. A node older than every key
  // reaches none and is not entered.
  std::vector<const UOp*> moving;
  NodeMap<uint32_t> slot;  // node -> its index in `moving` + 1; 0: the same in every copy
  NodeMap<uint8_t> seen;
  std::vector<std::pair<const UOp*, size_t>> stack;
  if (root->id >= oldest) {
    stack.push_back({root, 0});
    seen.set(root, 1);
  }
  while (!stack.empty()) {
    auto& [u, i] = stack.back();
    if (i < u->nsrc()) {
      const UOp* s = u->src(i++);
      if (s->id >= oldest && !seen.get(s)) {
        seen.set(s, 1);
        stack.push_back({s, 0});
      }
      continue;
    }
    const UOp* n = u;
    stack.pop_back();
    bool moves = maps.front().count(n) != 0;
    for (const UOp* s : n->src()) moves = moves || slot.get(s) != 0;
    if (moves) {
      moving.push_back(n);
      slot.set(n, uint32_t(moving.size()));
    }
  }
  // Per copy, only the moving nodes are rebuilt.
  std::vector<const UOp*> val(moving.size()), srcs;
  const uint32_t root_slot = slot.get(root);
  for (const auto& map : maps) {
    for (size_t i = 0; i < moving.size(); i++) {
      const UOp* u = moving[i];
      if (auto it = map.find(u); it != map.end()) {
        val[i] = it->second;
        continue;
      }
      srcs.clear();
      for (const UOp* s : u->src()) {
        uint32_t k = slot.get(s);
        srcs.push_back(k ? val[k - 1] : s);
      }
      val[i] = with_sources(g, u, srcs);
    }
    out.push_back(root_slot ? val[root_slot - 1] : root);
  }
  return out;
}

std::span<const UOp* const> closed_ranges(const UOp* u) {
  if ((u->op == Op::Reduce || u->op == Op::End) && u->nsrc() > 1) return u->src().subspan(1);
  return {};
}

OpenRanges::OpenRanges(std::span<const UOp* const> order) {
  sets_.reserve(order.size() + 1);
  sets_.push_back({0, 0});  // set 0: the empty set
  auto by_id = [](const UOp* a, const UOp* b) { return a->id < b->id; };
  std::vector<const UOp*> work, merged;
  for (const UOp* u : order) {
    // Most nodes are inside exactly the ranges of one of their sources: they share its set.
    int32_t cur = 0;
    bool own = false;  // `work` holds the set (it differs from every source's)
    for (const UOp* s : u->src()) {
      int32_t k = slot_.get(s) - 1;
      if (k <= 0 || k == cur) continue;
      std::span<const UOp* const> other = set(k);
      std::span<const UOp* const> mine = own ? std::span<const UOp* const>(work) : set(cur);
      if (std::equal(other.begin(), other.end(), mine.begin(), mine.end())) continue;
      if (!own && cur == 0) {
        cur = k;
        continue;
      }
      merged.clear();
      std::set_union(mine.begin(), mine.end(), other.begin(), other.end(), std::back_inserter(merged), by_id);
      work.swap(merged);
      own = true;
    }
    const bool is_range = u->op == Op::Range;
    std::span<const UOp* const> closed = closed_ranges(u);
    if (is_range || !closed.empty()) {
      if (!own) {
        std::span<const UOp* const> mine = set(cur);
        work.assign(mine.begin(), mine.end());
        own = true;
      }
      if (is_range) {
        auto pos = std::lower_bound(work.begin(), work.end(), u, by_id);
        if (pos == work.end() || *pos != u) work.insert(pos, u);
      }
      for (const UOp* c : closed) work.erase(std::remove(work.begin(), work.end(), c), work.end());
    }
    if (own) {
      cur = 0;
      if (!work.empty()) {
        cur = int32_t(sets_.size());
        sets_.push_back({uint32_t(ranges_.size()), uint32_t(work.size())});
        ranges_.insert(ranges_.end(), work.begin(), work.end());
      }
      work.clear();
    }
    slot_.set(u, cur + 1);
  }
}

std::span<const UOp* const> OpenRanges::set(int32_t k) const {
  return {ranges_.data() + sets_[size_t(k)].begin, sets_[size_t(k)].size};
}

std::span<const UOp* const> OpenRanges::of(const UOp* u) const {
  int32_t k = slot_.get(u) - 1;
  return k <= 0 ? std::span<const UOp* const>{} : set(k);
}

bool OpenRanges::contains(const UOp* u, const UOp* range) const {
  std::span<const UOp* const> s = of(u);
  return std::binary_search(s.begin(), s.end(), range, [](const UOp* a, const UOp* b) { return a->id < b->id; });
}

namespace {
int64_t floordiv64(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}
}  // namespace

namespace {

// eval_int at N points at once: point j has `probe` (when given) = j, the env otherwise.
template <size_t N>
bool eval_points(const UOp* root, const std::unordered_map<const UOp*, int64_t>& env, const UOp* probe,
                 std::array<int64_t, N>* out) {
  using Vals = std::array<int64_t, N>;
  // values by toposort position (children first: every source is known before its user)
  const std::vector<const UOp*> order = toposort(root);
  NodeMap<uint32_t> pos;  // node -> its position in order + 1 (hashed: a few dozen nodes)
  pos.reserve(order.size());
  std::vector<Vals> val(order.size());
  for (size_t k = 0; k < order.size(); k++) {
    const UOp* u = order[k];
    pos.set(u, uint32_t(k + 1));
    auto in = [&](size_t i) -> const Vals& { return val[pos.get(u->src(i)) - 1]; };
    Vals& v = val[k];
    // f applied point by point to the sources
    auto un = [&](auto f) {
      const Vals& a = in(0);
      for (size_t j = 0; j < N; j++) v[j] = f(a[j]);
    };
    auto bin = [&](auto f) {
      const Vals &a = in(0), &b = in(1);
      for (size_t j = 0; j < N; j++) v[j] = f(a[j], b[j]);
    };
    if (u->op == Op::Const) {
      if (!u->holds<int64_t>()) return false;
      v.fill(u->as<int64_t>());
    } else if (u->op == Op::DefineVar || u->op == Op::Range || u->op == Op::Special) {
      auto it = env.find(u);
      v.fill(it == env.end() ? 0 : it->second);
      if (u == probe)
        for (size_t j = 0; j < N; j++) v[j] = int64_t(j);
    } else {
      if (u->dtype.is_float() || u->dtype.ptr || u->dtype.is_void()) return false;
      switch (u->op) {
        case Op::Add:
          bin([](int64_t a, int64_t b) { return a + b; });
          break;
        case Op::Sub:
          bin([](int64_t a, int64_t b) { return a - b; });
          break;
        case Op::Mul:
          bin([](int64_t a, int64_t b) { return a * b; });
          break;
        case Op::Neg:
          un([](int64_t a) { return -a; });
          break;
        case Op::Max:
          bin([](int64_t a, int64_t b) { return std::max(a, b); });
          break;
        case Op::Idiv:
          bin([](int64_t a, int64_t b) { return b == 0 ? 0 : floordiv64(a, b); });
          break;
        case Op::Mod:
          bin([](int64_t a, int64_t b) { return b == 0 ? 0 : a - floordiv64(a, b) * b; });
          break;
        case Op::CDiv:
          bin([](int64_t a, int64_t b) { return b == 0 ? 0 : a / b; });
          break;
        case Op::CMod:
          bin([](int64_t a, int64_t b) { return b == 0 ? 0 : a % b; });
          break;
        case Op::And:
          bin([](int64_t a, int64_t b) { return a & b; });
          break;
        case Op::Or:
          bin([](int64_t a, int64_t b) { return a | b; });
          break;
        case Op::Xor:
          bin([](int64_t a, int64_t b) { return a ^ b; });
          break;
        case Op::Shl:
          bin([](int64_t a, int64_t b) { return b >= 0 && b < 63 ? int64_t(uint64_t(a) << b) : int64_t(0); });
          break;
        case Op::Shr:
          bin([](int64_t a, int64_t b) { return b >= 0 && b < 63 ? a >> b : int64_t(0); });
          break;
        case Op::CmpLt:
          bin([](int64_t a, int64_t b) { return int64_t(a < b); });
          break;
        case Op::CmpNe:
          bin([](int64_t a, int64_t b) { return int64_t(a != b); });
          break;
        case Op::CmpEq:
          bin([](int64_t a, int64_t b) { return int64_t(a == b); });
          break;
        case Op::CmpGt:
          bin([](int64_t a, int64_t b) { return int64_t(a > b); });
          break;
        case Op::CmpGe:
          bin([](int64_t a, int64_t b) { return int64_t(a >= b); });
          break;
        case Op::CmpLe:
          bin([](int64_t a, int64_t b) { return int64_t(a <= b); });
          break;
        case Op::Not:
          un([](int64_t a) { return int64_t(a == 0); });
          break;
        case Op::Where: {
          const Vals &c = in(0), &a = in(1), &b = in(2);
          for (size_t j = 0; j < N; j++) v[j] = c[j] ? a[j] : b[j];
          break;
        }
        case Op::Cast:
          v = in(0);
          break;
        default:
          return false;
      }
    }
  }
  *out = val.back();  // the root is last
  return true;
}

}  // namespace

bool eval_int(const UOp* root, const std::unordered_map<const UOp*, int64_t>& env, int64_t* out) {
  std::array<int64_t, 1> v;
  if (!eval_points<1>(root, env, nullptr, &v)) return false;
  *out = v[0];
  return true;
}

bool eval_int_step(const UOp* root, const std::unordered_map<const UOp*, int64_t>& env, const UOp* r, int64_t* at0,
                   int64_t* at1) {
  std::array<int64_t, 2> v;
  if (!eval_points<2>(root, env, r, &v)) return false;
  *at0 = v[0], *at1 = v[1];
  return true;
}

std::optional<int64_t> stride_of(const UOp* idx, const UOp* r, const std::unordered_map<const UOp*, int64_t>& env) {
  int64_t a = 0, b = 0;
  if (!eval_int_step(idx, env, r, &a, &b)) return std::nullopt;
  return b - a;
}

const UOp* lane_index(Graph& g, const UOp* base, const std::vector<int64_t>& offsets) {
  std::vector<const UOp*> cs;
  for (int64_t o : offsets) cs.push_back(g.cint(o, base->dtype));
  return lane_index(g, base, g.make(Op::Vectorize, base->dtype.vec(uint16_t(offsets.size())), cs));
}

const UOp* lane_index(Graph& g, const UOp* base, const UOp* offsets) {
  return g.make(Op::Add, offsets->dtype,
                {g.make(Op::Vectorize, offsets->dtype, std::vector<const UOp*>(offsets->dtype.lanes, base)), offsets});
}

std::vector<const UOp*> concatenated_vectors(const UOp* u) {
  if (u->op != Op::Vectorize || u->src(0)->op != Op::Gep || !u->src(0)->holds<int64_t>()) return {};
  const int64_t part = u->src(0)->src(0)->dtype.lanes, n = int64_t(u->nsrc());
  if (part < 2 || n % part != 0 || n / part < 2 || ((n / part) & (n / part - 1)) != 0) return {};
  std::vector<const UOp*> parts;
  for (int64_t i = 0; i < n; i++) {
    const UOp* x = u->src(size_t(i));
    if (x->op != Op::Gep || !x->holds<int64_t>() || x->as<int64_t>() != i % part || x->src(0)->dtype.lanes != part ||
        x->src(0) != u->src(size_t(i - i % part))->src(0))
      return {};
    if (i % part == 0) parts.push_back(x->src(0));
  }
  return parts;
}

const UOp* lane_index_base(const UOp* idx) {
  if (idx->op != Op::Add || idx->dtype.lanes < 2) return nullptr;
  const UOp *b = idx->src(0), *c = idx->src(1);
  if (b->op != Op::Vectorize || c->op != Op::Vectorize) return nullptr;
  for (const UOp* x : b->src())
    if (x != b->src(0)) return nullptr;
  for (const UOp* x : c->src())
    if (x->op != Op::Const) return nullptr;
  return b->src(0);
}

std::vector<const UOp*> ranges_of(const UOp* root) { return ranges_in(toposort(root)); }

std::vector<const UOp*> ranges_in(std::span<const UOp* const> order) {
  std::vector<const UOp*> out;
  for (const UOp* u : order)
    if (u->op == Op::Range) out.push_back(u);
  // By loop id, not by node creation order: a Range node made by an earlier kernel of the same
  // graph (hash-consing) is older than the kernel's own, and creation order then put ResNet's
  // 8-copy output-column axis (made by the stem's opts) before its 32 output-channel lanes, so
  // expand vectorized the wrong one: the same AST and opts gave a 3-4x slower kernel in the model
  // than alone.
  std::sort(out.begin(), out.end(), [](const UOp* a, const UOp* b) {
    int64_t ia = a->as<RangeArg>().id, ib = b->as<RangeArg>().id;
    return ia != ib ? ia < ib : a->id < b->id;
  });
  return out;
}

int64_t const_bound(const UOp* range) {
  const UOp* b = range->src(0);
  return b->op == Op::Const && b->holds<int64_t>() ? b->as<int64_t>() : -1;
}

const UOp* reduce_identity(Graph& g, Op op, DType dt) {
  if (dt.lanes > 1) {
    std::vector<const UOp*> lanes(dt.lanes, reduce_identity(g, op, dt.base()));
    return g.make(Op::Vectorize, dt, lanes);
  }
  dt = dt.base();
  switch (op) {
    case Op::Add:
      // -0.0 for floats: -0.0 + x is x for every x, where +0.0 + -0.0 is +0.0, so a sum that starts
      // there is the same whether its first add is folded away (an unrolled sum) or not
      return dt.is_float() ? g.cfloat(-0.0, dt) : g.cint(0, dt);
    case Op::Mul:
      return dt.is_float() ? g.cfloat(1.0, dt) : g.cint(1, dt);
    case Op::Max:
      // fp8 e4m3 has no infinity: its lowest finite value is the identity
      if (dt.scalar == Scalar::Fp8E4M3) return g.cfloat(-dt.float_max(), dt);
      if (dt.is_float()) return g.cfloat(-std::numeric_limits<double>::infinity(), dt);
      if (dt.is_bool()) return g.cbool(false);
      return g.make(Op::Const, dt, {}, int64_t(dt.int_min()));
    default:
      fail(Code::InvalidArg, "Reduce: op must be Add, Max or Mul, got ", op_name(op));
  }
}

void add_terms(const UOp* e, std::vector<const UOp*>* out) {
  if (e->op != Op::Add) return out->push_back(e);
  add_terms(e->src(0), out);
  add_terms(e->src(1), out);
}

bool depends_on(const UOp* u, const UOp* x) {
  for (const UOp* y : toposort(u))
    if (y == x) return true;
  return false;
}

const UOp* fragment_coord(Graph& g, const TcCoord& c, const UOp* lane, int64_t elem) {
  const UOp* e = nullptr;
  int64_t fixed = 0;
  for (const TcTerm& t : c) {
    if (!t.lane) {
      fixed += (elem / t.div % t.mod) * t.mul;
      continue;
    }
    const UOp* v = t.div == 1 ? lane : g.alu(Op::Idiv, lane, g.cint(t.div));
    // (lane / div) % mod is lane / div when lane < div * mod
    const UOp* lanes = lane->src(0);
    if (lanes->op != Op::Const || int64_t(t.mod) * t.div < int64_t(lanes->const_int()))
      v = g.alu(Op::Mod, v, g.cint(t.mod));
    if (t.mul != 1) v = g.alu(Op::Mul, v, g.cint(t.mul));
    e = e ? g.alu(Op::Add, e, v) : v;
  }
  if (!e) return g.cint(fixed);
  return fixed != 0 ? g.alu(Op::Add, e, g.cint(fixed)) : e;
}

bool addresses_depend_on_loads(std::span<const UOp* const> order) {
  std::unordered_set<const UOp*> loaded;  // nodes computed from a loaded value
  for (const UOp* u : order) {
    const UOp* idx = u->op == Op::Load || u->op == Op::Store ? address_index(u->src(0)) : nullptr;
    if (idx && loaded.count(idx)) return true;
    bool from_load = u->op == Op::Load;
    for (const UOp* s : u->src()) from_load = from_load || loaded.count(s);
    if (from_load) loaded.insert(u);
  }
  return false;
}

bool inside_buffer(const UOp* index) {
  const UOp *buf = address_buffer(index), *idx = address_index(index);
  if (!buf || !idx || buf->op != Op::Param || !buf->shape() || buf->shape()->size() != 1 ||
      !(*buf->shape())[0].is_const())
    return false;
  const MinMax& m = idx->minmax();
  return !m.is_float && m.lo >= 0 && m.hi < i128((*buf->shape())[0].value);
}

}  // namespace sn
