#include "core/ir/graph.h"

#include <algorithm>
#include <cstring>
#include <tuple>

namespace sn {

namespace {
constexpr size_t kSrcBlock = 1 << 14;                         // pointers per source block
constexpr size_t kFirstNodeBlock = 64, kMaxNodeBlock = 4096;  // nodes per node block

// The node table's hash. It hashes sources by node id, so it means nothing outside this graph
// (content hashes, which key the disk cache, are UOp::content_hash): one multiply per word and one
// final mix for the low bits the table indexes by, where hash_combine's full mix per word was a
// twelfth of lowering a convolution (most interns find their node: expand's copies repeat).
inline uint64_t intern_mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x9e3779b97f4a7c15ULL; }
// (arg_h: hash_arg of the argument, 0 for none.)
uint64_t intern_hash(Op op, DType dt, std::span<const UOp* const> src, uint64_t arg_h, int64_t tag) {
  uint64_t h = intern_mix(uint64_t(op) << 40 | uint64_t(dt.scalar) << 24 | uint64_t(dt.lanes) << 8 |
                              uint64_t(dt.ptr) << 4 | uint64_t(dt.addrspace),
                          uint64_t(tag));
  for (auto* s : src) h = intern_mix(h, s->id);
  if (arg_h != 0) h = intern_mix(h, arg_h);
  h ^= h >> 32;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 29);
}
// a == b over a's length. A loop: std::equal calls memcmp, which costs more than comparing the one
// to three pointers of most nodes (1.2% of lowering a convolution).
inline bool same_nodes(std::span<const UOp* const> a, const UOp* const* b) {
  for (size_t i = 0; i < a.size(); i++)
    if (a[i] != b[i]) return false;
  return true;
}
}  // namespace

Graph::Graph() { table_.assign(1024, Slot{0, nullptr}); }

Graph::~Graph() {
  for (NodeBlock& b : node_blocks_) {
    std::destroy_n(b.nodes, b.used);
    pool_release(b.nodes, b.capacity * sizeof(UOp));
  }
  for (SrcBlock& b : src_blocks_) pool_release(b.srcs, b.capacity * sizeof(const UOp*));
}

UOp* Graph::new_node() {
  if (node_blocks_.empty() || node_blocks_.back().used == node_blocks_.back().capacity) {
    size_t capacity = std::clamp<size_t>(node_count_, kFirstNodeBlock, kMaxNodeBlock);
    node_blocks_.reserve(node_blocks_.size() + 1);  // so that a failed allocation below leaks nothing
    node_blocks_.push_back({static_cast<UOp*>(pool_allocate(capacity * sizeof(UOp))), 0, capacity});
  }
  NodeBlock& b = node_blocks_.back();
  UOp* n = new (b.nodes + b.used) UOp();
  b.used++;
  node_count_++;
  return n;
}

void Graph::rehash(size_t slots) {
  decltype(table_) bigger(slots, Slot{0, nullptr});
  size_t mask = bigger.size() - 1;
  for (const Slot& s : table_) {
    if (!s.node) continue;
    size_t i = s.hash & mask;
    while (bigger[i].node) i = (i + 1) & mask;
    bigger[i] = s;
  }
  table_.swap(bigger);
}

void Graph::reserve(size_t nodes) {
  size_t slots = table_.size();
  while (slots < 2 * nodes) slots *= 2;
  if (slots != table_.size()) rehash(slots);
}

const UOp* Graph::intern(Op op, DType dtype, std::span<const UOp* const> src, const Arg& arg, int64_t tag, Arg* owned,
                         const UOp* checked_like) {
  for (auto* s : src) {
    if (s == nullptr) fail(Code::InvalidArg, op_name(op), ": source is null");
    if (s->graph_ != this) fail(Code::InvalidArg, op_name(op), ": source %", s->id, " belongs to another graph");
  }
  const uint64_t arg_h = arg.index() != 0 ? hash_arg(arg) : 0;  // (most nodes carry none)
  uint64_t h = intern_hash(op, dtype, src, arg_h, tag);
  size_t mask = table_.size() - 1;
  size_t i = h & mask;
  for (; table_[i].node; i = (i + 1) & mask) {
    if (table_[i].hash != h) continue;
    const UOp* u = table_[i].node;
    if (u->op == op && u->dtype == dtype && u->tag == tag && u->nsrc_ == src.size() && same_nodes(src, u->srcs_) &&
        arg_equal(u->arg, arg))
      return u;
  }
  // New node: verify it against the spec and derive its shape before it exists.
  Shape shape;
  bool has_shape;
  if (checked_like) {
    has_shape = checked_like->has_shape_;
    shape = checked_like->shape_;
  } else {
    verify_node(op, dtype, src, arg);
    has_shape = derive_shape(op, dtype, src, arg, &shape);
  }

  UOp& n = *new_node();
  n.op = op;
  n.dtype = dtype;
  // (Not `owned ? std::move(*owned) : arg`: that conditional is a const prvalue, so it copied the
  // argument, a program's constant weights too.)
  if (owned)
    n.arg = std::move(*owned);
  else
    n.arg = arg;
  n.tag = tag;
  n.id = uint32_t(node_count_ - 1);
  n.graph_ = this;
  n.hash_ = h;
  n.has_shape_ = has_shape;
  n.shape_ = std::move(shape);
  if (!src.empty()) {
    if (src_left_ < src.size()) {
      size_t sz = std::max(kSrcBlock, src.size());
      src_blocks_.reserve(src_blocks_.size() + 1);  // so that a failed allocation below leaks nothing
      src_blocks_.push_back({static_cast<const UOp**>(pool_allocate(sz * sizeof(const UOp*))), sz});
      src_cur_ = src_blocks_.back().srcs;
      src_left_ = sz;
    }
    std::copy(src.begin(), src.end(), src_cur_);
    n.srcs_ = src_cur_;
    src_cur_ += src.size();
    src_left_ -= src.size();
  }
  n.nsrc_ = uint32_t(src.size());
  if (const auto* bytes = std::get_if<std::string>(&n.arg); bytes && bytes->size() >= kLargeArgBytes)
    large_arg_hashes_.emplace(&n, arg_h);
  table_[i] = Slot{h, &n};
  if (node_count_ * 2 > table_.size()) rehash(2 * table_.size());
  return &n;
}

uint64_t Graph::arg_hash(const UOp* u) const {
  if (const auto* bytes = std::get_if<std::string>(&u->arg); bytes && bytes->size() >= kLargeArgBytes) {
    auto it = large_arg_hashes_.find(u);
    if (it != large_arg_hashes_.end()) return it->second;
  }
  return hash_arg(u->arg);
}

const UOp* Graph::make(Op op, DType dtype, std::span<const UOp* const> src, Arg arg, int64_t tag) {
  if (size_t(op) >= size_t(Op::Count_)) fail(Code::InvalidArg, "unknown op value ", int(op));
  return intern(op, dtype, src, arg, tag, &arg);
}

const UOp* Graph::replace_src(const UOp* u, std::span<const UOp* const> src) {
  if (src.size() == u->nsrc() && same_nodes(src, u->srcs_)) return u;
  // Passes rebuild most nodes over sources of the same dtype and shape (a loop variable replaced
  // by another, an index by its simplified form): such a node passes the checks u passed, and
  // has its shape. A conv kernel's lowering: 6.9k rebuilt nodes, about 7% of its time checking.
  bool like_u = src.size() == u->nsrc() && u->graph_ == this && checked_by_source_types(u->op);
  for (size_t i = 0; like_u && i < src.size(); i++) {
    const UOp* a = src[i];
    const UOp* b = u->srcs_[i];
    like_u = a == b || (a && a->dtype == b->dtype && a->has_shape_ == b->has_shape_ && a->shape_ == b->shape_);
  }
  return intern(u->op, u->dtype, src, u->arg, u->tag, nullptr, like_u ? u : nullptr);
}

const UOp* Graph::with_tag(const UOp* u, int64_t tag) {
  if (u->tag == tag) return u;
  return make(u->op, u->dtype, u->src(), u->arg, tag);
}

const UOp* Graph::cint(int64_t v, DType dt) {
  if (dt == dtypes::index && v >= kIndexConstMin && v < kIndexConstEnd) {
    // Small index constants are most of the constants lowering makes (a convolution's lowering asks
    // for four thousand); a direct table finds them without hashing an argument (2% of lowering).
    if (index_consts_.empty()) index_consts_.assign(size_t(kIndexConstEnd - kIndexConstMin), nullptr);
    const UOp*& c = index_consts_[size_t(v - kIndexConstMin)];
    if (!c) c = make(Op::Const, dt, {}, v);
    return c;
  }
  if (dt.is_float()) return make(Op::Const, dt, {}, double(v));
  if (dt.is_bool()) v = v != 0;
  return make(Op::Const, dt, {}, v);
}

const UOp* Graph::cfloat(double v, DType dt) {
  if (!dt.is_float()) fail(Code::InvalidArg, "Const: cfloat needs a float dtype, got ", dt.name());
  return make(Op::Const, dt, {}, round_float(dt, v));
}

const UOp* Graph::const_like(const UOp* like, double v) {
  DType dt = like->dtype.base();
  if (dt.is_float()) return make(Op::Const, dt, {}, round_float(dt, v));
  return cint(int64_t(v), dt);
}

const UOp* Graph::var(const std::string& name, int64_t min, int64_t max) {
  return make(Op::DefineVar, dtypes::index, {}, VarArg{name, min, max});
}

const UOp* Graph::alu(Op op, std::span<const UOp* const> src) {
  if (src.empty()) fail(Code::InvalidArg, op_name(op), ": no sources");
  DType dt = src[0]->dtype;
  if (is_comparison(op) || op == Op::Not) {
    dt = DType(Scalar::Bool).vec(src[0]->dtype.lanes);
    if (op == Op::Not) dt = src[0]->dtype;
  } else if (op == Op::Where) {
    if (src.size() != 3) fail(Code::InvalidArg, "Where: needs 3 sources, got ", src.size());
    dt = src[1]->dtype;
  } else if (op == Op::Cast || op == Op::Bitcast) {
    fail(Code::InvalidArg, op_name(op), ": use cast() with a target dtype");
  }
  return make(op, dt, src);
}

const UOp* Graph::shape_uop(const Shape& s) {
  std::vector<const UOp*> dims;
  dims.reserve(s.size());
  for (auto& d : s) dims.push_back(d.is_const() ? cint(d.value) : d.sym);
  return make(Op::Stack, dtypes::index, dims);
}

const UOp* Graph::shape_uop(std::span<const int64_t> dims) {
  Shape s;
  for (auto d : dims) s.push_back(Dim::of(d));
  return shape_uop(s);
}

Shape as_shape(const UOp* u) {
  Shape s;
  s.reserve(u->nsrc());
  for (auto* d : u->src()) s.push_back(d->op == Op::Const ? Dim::of(int64_t(d->const_int())) : Dim{0, d});
  return s;
}

namespace {
// Visit marks of toposort: an epoch number per node id, one table per thread. A sort takes a new
// epoch, so nothing is cleared between sorts, and a sort of a small expression inside a large graph
// touches only the entries of the ids it reaches (lowering sorts many small expressions; a paged
// map of marks allocated and zeroed its pages on every sort). One table serves every graph: a sort
// reaches the nodes of one graph, and marks left by other graphs are of older epochs. Per thread,
// because compile threads sort kernels of a graph while its owner builds more. The table keeps the
// size of the largest id its thread sorted: 4 bytes per node (4 MB after a million-node graph).
// (ResNet-18's lowering: 202.0M -> 177.9M instructions, callgrind.)
class VisitMarks {
 public:
  void start() {
    if (++epoch_ == 0) {  // wrapped: forget every old mark
      std::fill(marks_.begin(), marks_.end(), 0u);
      epoch_ = 1;
    }
  }
  // Marks u; false if it was marked already in this sort.
  bool mark(const UOp* u) {
    if (u->id >= marks_.size()) marks_.resize(std::max<size_t>(size_t(u->id) + 1, marks_.size() * 2), 0u);
    if (marks_[u->id] == epoch_) return false;
    marks_[u->id] = epoch_;
    return true;
  }

 private:
  std::vector<uint32_t> marks_;
  uint32_t epoch_ = 0;
};
thread_local VisitMarks t_marks;
}  // namespace

std::vector<const UOp*> toposort(std::span<const UOp* const> roots) {
  if (roots.empty()) return {};
  // The walk's stack and its output grow in buffers kept per thread; the result is one exact
  // copy (growing the result itself reallocated it about log2(n) times per sort). ResNet-18's
  // lowering: 134.1M -> 131.9M instructions.
  thread_local std::vector<std::pair<const UOp*, size_t>> stack;
  thread_local std::vector<const UOp*> order;
  order.clear();
  VisitMarks& seen = t_marks;
  seen.start();
  // The node being walked stays out of `stack` (in registers), which holds only its ancestors: a
  // source is one load and one mark, not a round trip through the stack's top.
  for (auto* r : roots) {
    if (!seen.mark(r)) continue;
    const UOp* u = r;
    size_t i = 0;
    for (;;) {
      while (i < u->nsrc()) {
        const UOp* s = u->src(i++);
        if (seen.mark(s)) {
          stack.push_back({u, i});
          u = s;
          i = 0;
        }
      }
      order.push_back(u);
      if (stack.empty()) break;
      std::tie(u, i) = stack.back();
      stack.pop_back();
    }
  }
  std::vector<const UOp*> out(order.begin(), order.end());
  if (order.capacity() > (size_t(1) << 20)) std::vector<const UOp*>().swap(order);  // keep at most 8 MB
  return out;
}

}  // namespace sn
